"""Reading spans from OTLP/JSON envelopes, SDK span dumps and flat attribute maps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import orjson

from .._base import parse_ts


class _Span:
    __slots__ = (
        "attrs",
        "end",
        "error",
        "events",
        "name",
        "parent_id",
        "resource",
        "scope",
        "span_id",
        "start",
        "trace_id",
    )

    def __init__(self) -> None:
        self.trace_id = self.span_id = self.parent_id = ""
        self.name = ""
        self.start = self.end = 0
        self.attrs: dict[str, Any] = {}
        self.error: str | None = None
        self.events: list[Any] = []
        self.resource: dict[str, Any] = {}
        self.scope: str | None = None


def _any_value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    for k in ("stringValue", "boolValue", "doubleValue"):
        if k in v:
            return v[k]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "arrayValue" in v:
        return [_any_value(x) for x in (v["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in v:
        return _kv((v["kvlistValue"] or {}).get("values") or [])
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _kv(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):
        return dict(items)
    out: dict[str, Any] = {}
    for it in items or []:
        if isinstance(it, dict) and "key" in it:
            out[str(it["key"])] = _any_value(it.get("value"))
    return out


def _ns(v: Any) -> int:
    if isinstance(v, list) and len(v) == 2:  # hrtime [seconds, nanoseconds]
        return int(v[0]) * 1_000_000_000 + int(v[1])
    if isinstance(v, str) and v.isdigit():
        return int(v)
    if isinstance(v, (int, float)):
        return int(v)
    dt = parse_ts(v)
    return int(dt.timestamp() * 1e9) if dt else 0


def _hexid(v: Any) -> str:
    s = str(v or "")
    return s[2:] if s.startswith("0x") else s


def _status_error(status: Any) -> str | None:
    if not isinstance(status, dict):
        return None
    code = status.get("code", status.get("status_code"))
    if code in (2, "2", "STATUS_CODE_ERROR", "ERROR", "StatusCode.ERROR"):
        return status.get("message") or status.get("description") or "error"
    return None


def _span(
    d: dict[str, Any], resource: dict[str, Any] | None = None, scope: str | None = None
) -> _Span | None:
    sp = _Span()
    ctx = d.get("spanContext") or d.get("context") or {}
    sp.trace_id = _hexid(d.get("traceId") or d.get("trace_id") or ctx.get("traceId") or ctx.get("trace_id"))
    sp.span_id = _hexid(d.get("spanId") or d.get("span_id") or ctx.get("spanId") or ctx.get("span_id"))
    parent = d.get("parentSpanId") or d.get("parent_id") or (d.get("parentSpanContext") or {}).get("spanId")
    sp.parent_id = _hexid(parent)
    attrs = d.get("attributes")
    if attrs is None and not sp.span_id:
        return None
    sp.attrs = _kv(attrs)
    sp.name = str(d.get("name") or sp.attrs.get("ai.operationId") or "")
    sp.start = _ns(d.get("startTimeUnixNano") or d.get("startTime") or d.get("start_time"))
    sp.end = _ns(d.get("endTimeUnixNano") or d.get("endTime") or d.get("end_time")) or sp.start
    sp.error = _status_error(d.get("status"))
    sp.events = d.get("events") if isinstance(d.get("events"), list) else []
    res = d.get("resource")
    sp.resource = resource or (_kv(res.get("attributes")) if isinstance(res, dict) else {})
    lib = d.get("instrumentationScope") or d.get("instrumentationLibrary") or {}
    sp.scope = scope or (lib.get("name") if isinstance(lib, dict) else None)
    if sp.error is None and sp.attrs.get("error.type"):
        sp.error = str(sp.attrs["error.type"])
    for ev in sp.events:
        if isinstance(ev, dict) and ev.get("name") == "exception" and sp.error:
            ea = _kv(ev.get("attributes"))
            sp.error = str(ea.get("exception.message") or sp.error)
    return sp


def _envelope_spans(env: dict[str, Any]) -> Iterator[Any]:
    """Yield `_Span`s (or the raw object of a span that cannot be read) from an OTLP envelope."""
    for rs in env.get("resourceSpans") or env.get("resource_spans") or []:
        if not isinstance(rs, dict):
            yield rs
            continue
        res = _kv((rs.get("resource") or {}).get("attributes"))
        for ss in (
            rs.get("scopeSpans") or rs.get("scope_spans") or rs.get("instrumentationLibrarySpans") or []
        ):
            if not isinstance(ss, dict):
                yield ss
                continue
            scope = (ss.get("scope") or ss.get("instrumentationLibrary") or {}).get("name")
            for d in ss.get("spans") or []:
                sp = _span(d, res, scope) if isinstance(d, dict) else None
                yield sp if sp is not None else d


def _is_envelope(d: Any) -> bool:
    return isinstance(d, dict) and ("resourceSpans" in d or "resource_spans" in d)


def _is_span(d: Any) -> bool:
    return (
        isinstance(d, dict)
        and isinstance(d.get("attributes"), (dict, list))
        and ("spanContext" in d or "context" in d or "spanId" in d or "span_id" in d)
    )


def _is_flat(d: Any) -> bool:
    return isinstance(d, dict) and any(
        isinstance(k, str)
        and k.split(".", 1)[0] in ("gen_ai", "llm", "ai", "openinference", "traceloop")
        and "." in k
        for k in d
    )


def _dump(v: Any) -> str | None:
    if v is None:
        return None
    try:
        return orjson.dumps(v).decode()
    except TypeError:
        return json.dumps(v, default=str)


def _ts(ns: int) -> datetime | None:
    return parse_ts(ns / 1e9) if ns else None
