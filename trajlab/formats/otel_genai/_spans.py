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
        vals = _dict(v["arrayValue"]).get("values")
        return [_any_value(x) for x in vals] if isinstance(vals, list) else []
    if "kvlistValue" in v:
        return _kv(_dict(v["kvlistValue"]).get("values"))
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _kv(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):
        return {str(k): v for k, v in items.items()}
    out: dict[str, Any] = {}
    for it in items if isinstance(items, list) else []:
        if isinstance(it, dict) and "key" in it:
            out[str(it["key"])] = _any_value(it.get("value"))
    return out


def _ns(v: Any) -> int:
    """Nanoseconds since the epoch from nano strings, hrtime pairs or ISO text; 0 when unreadable."""
    try:
        if isinstance(v, list) and len(v) == 2:  # hrtime [seconds, nanoseconds]
            return int(v[0]) * 1_000_000_000 + int(v[1])
        if isinstance(v, str) and v.isdigit():
            return int(v)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return int(v)
    except (TypeError, ValueError, OverflowError):
        return 0
    dt = parse_ts(v) if isinstance(v, str) else None
    return int(dt.timestamp() * 1e9) if dt else 0


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return None


def _hexid(v: Any) -> str:
    s = _str(v) or ""
    return s[2:] if s.startswith("0x") else s


def _status_error(status: Any) -> str | None:
    if not isinstance(status, dict):
        return None
    code = status.get("code", status.get("status_code"))
    if code in (2, "2", "STATUS_CODE_ERROR", "ERROR", "StatusCode.ERROR"):
        return _str(status.get("message")) or _str(status.get("description")) or "error"
    return None


def _span(
    d: dict[str, Any], resource: dict[str, Any] | None = None, scope: str | None = None
) -> _Span | None:
    sp = _Span()
    ctx = _dict(d.get("spanContext")) or _dict(d.get("context"))
    sp.trace_id = _hexid(d.get("traceId") or d.get("trace_id") or ctx.get("traceId") or ctx.get("trace_id"))
    sp.span_id = _hexid(d.get("spanId") or d.get("span_id") or ctx.get("spanId") or ctx.get("span_id"))
    parent = d.get("parentSpanId") or d.get("parent_id") or _dict(d.get("parentSpanContext")).get("spanId")
    sp.parent_id = _hexid(parent)
    attrs = d.get("attributes")
    if attrs is None and not sp.span_id:
        return None
    sp.attrs = _kv(attrs)
    sp.name = _str(d.get("name")) or _str(sp.attrs.get("ai.operationId")) or ""
    sp.start = _ns(d.get("startTimeUnixNano") or d.get("startTime") or d.get("start_time"))
    sp.end = _ns(d.get("endTimeUnixNano") or d.get("endTime") or d.get("end_time")) or sp.start
    sp.error = _status_error(d.get("status"))
    events = d.get("events")
    sp.events = events if isinstance(events, list) else []
    res = d.get("resource")
    sp.resource = resource or (_kv(res.get("attributes")) if isinstance(res, dict) else {})
    lib = _dict(d.get("instrumentationScope")) or _dict(d.get("instrumentationLibrary"))
    sp.scope = scope or _str(lib.get("name"))
    if sp.error is None and sp.attrs.get("error.type"):
        sp.error = str(sp.attrs["error.type"])
    for ev in sp.events:
        if isinstance(ev, dict) and ev.get("name") == "exception" and sp.error:
            ea = _kv(ev.get("attributes"))
            sp.error = str(ea.get("exception.message") or sp.error)
    return sp


def _envelope_spans(env: dict[str, Any]) -> Iterator[Any]:
    """Yield `_Span`s (or the raw object of a span that cannot be read) from an OTLP envelope."""
    for rs in _list(env.get("resourceSpans") or env.get("resource_spans")):
        if not isinstance(rs, dict):
            yield rs
            continue
        res = _kv(_dict(rs.get("resource")).get("attributes"))
        for ss in _list(
            rs.get("scopeSpans") or rs.get("scope_spans") or rs.get("instrumentationLibrarySpans")
        ):
            if not isinstance(ss, dict):
                yield ss
                continue
            scope = _str((_dict(ss.get("scope")) or _dict(ss.get("instrumentationLibrary"))).get("name"))
            for d in _list(ss.get("spans")):
                sp = _span(d, res, scope) if isinstance(d, dict) else None
                yield sp if sp is not None else d


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


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
