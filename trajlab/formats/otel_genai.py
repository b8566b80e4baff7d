"""OpenTelemetry GenAI spans: OTLP/JSON exports, SDK span dumps and single flattened spans.

Accepted containers: OTLP/JSON envelopes (`resourceSpans[].scopeSpans[].spans[]`, attribute lists of
`{key, value{stringValue|intValue|...}}`, `intValue` and nano timestamps as strings; one envelope
per line in `.jsonl` collector files), JSON lists of SDK spans (JS `InMemorySpanExporter` dumps with
`spanContext`, flat `attributes` and hrtime `[sec, nanos]`; Python `ConsoleSpanExporter` output with
`context{trace_id, span_id}`, also as concatenated objects), and a bare attribute map of one span.

Four attribute conventions are read: current GenAI semconv (`gen_ai.operation.name`,
`gen_ai.input.messages`/`gen_ai.output.messages` as JSON parts, `gen_ai.tool.call.id` on
`execute_tool` spans, `gen_ai.agent.name`), OpenLLMetry flattening (`gen_ai.prompt.{i}.*`,
`gen_ai.completion.{i}.tool_calls.{j}.*`), OpenInference flattening (`llm.input_messages.{i}.message.*`,
`openinference.span.kind`, `tool.id`) and the Vercel AI SDK (`ai.prompt.messages`, `ai.response.*`,
`ai.toolCall.*`, `ai.usage.*`).

One trajectory per trace id, steps in span start order. Each chat span re-sends the conversation so
far: input messages already emitted by an earlier span are skipped, so every message appears once.
Tool spans fill in the result of the call with the same id (or become calls of their own). Spans
nested under two or more agent spans belong to the innermost agent (`agent_id`, `depth`), and a
sub-agent's steps point at the tool call that spawned it. Vercel `ai.generateText`-style wrapper
spans are used only when their `doGenerate`/`doStream` children are absent. Traces with no model,
tool or agent span (embeddings only) carry no agent steps and yield no trajectory. The outcome is
`unknown`: spans carry no grade.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ._base import (
    Adapter,
    CallLinker,
    ParseContext,
    ParsedTrajectory,
    SourceUnit,
    as_text,
    load_json,
    parse_args,
    parse_ts,
    read_jsonl,
)

_FLAT_RE = re.compile(rb'"(gen_ai|llm|ai|openinference|traceloop)\.[A-Za-z0-9_.]+"\s*:')
_VERCEL_OUTER = {"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"}
_INDEXED = re.compile(r"^(\d+)\.(.+)$")


# -- spans -----------------------------------------------------------------------------------------


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


# -- messages --------------------------------------------------------------------------------------


def _msg(role: Any) -> dict[str, Any]:
    return {"role": str(role or "user").lower(), "texts": [], "reasoning": [], "calls": [], "results": []}


def _loads(v: Any) -> Any:
    if isinstance(v, str) and v.strip()[:1] in ("[", "{"):
        try:
            return orjson.loads(v)
        except orjson.JSONDecodeError:
            return v
    return v


def _semconv(val: Any) -> list[dict[str, Any]]:
    """`gen_ai.input.messages` / `gen_ai.output.messages`: [{role, parts[...]}]."""
    out = []
    for m in _loads(val) if isinstance(_loads(val), list) else []:
        if not isinstance(m, dict):
            continue
        msg = _msg(m.get("role"))
        parts = m.get("parts")
        if not isinstance(parts, list):
            text = as_text(m.get("content"))
            parts = [{"type": "text", "content": text}] if text else []
        for p in parts:
            if not isinstance(p, dict):
                continue
            t = p.get("type")
            if t == "text":
                msg["texts"].append(as_text(p.get("content")) or "")
            elif t == "reasoning":
                msg["reasoning"].append(as_text(p.get("content")) or "")
            elif t == "tool_call":
                msg["calls"].append((p.get("id"), p.get("name"), parse_args(p.get("arguments"))))
            elif t == "tool_call_response":
                resp = p.get("response", p.get("result"))
                msg["results"].append((p.get("id"), resp if isinstance(resp, str) else _dump(resp), None))
            elif t in ("blob", "uri", "file", "image", "audio", "video"):
                msg["texts"].append(
                    f"[{p.get('modality') or t}{': ' + p['mime_type'] if p.get('mime_type') else ''}]"
                )
        out.append(msg)
    return out


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Group flattened `prefix.{i}.rest` attributes into one dict of `rest -> value` per index."""
    groups: dict[int, dict[str, Any]] = {}
    plen = len(prefix) + 1
    for k, v in attrs.items():
        if k.startswith(prefix + "."):
            m = _INDEXED.match(k[plen:])
            if m:
                groups.setdefault(int(m.group(1)), {})[m.group(2)] = v
    return [groups[i] for i in sorted(groups)]


def _flat_calls(
    g: dict[str, Any], prefix: str, id_key: str, name_key: str, args_key: str
) -> list[tuple[Any, Any, Any]]:
    calls = []
    for c in _indexed(g, prefix):
        if c.get(name_key) or c.get(id_key):
            calls.append((c.get(id_key), c.get(name_key), parse_args(c.get(args_key))))
    return calls


def _openllmetry(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    out = []
    for g in _indexed(attrs, prefix):
        msg = _msg(g.get("role") or ("assistant" if prefix.endswith("completion") else "user"))
        content = _loads(g.get("content"))
        text = as_text(content)
        if msg["role"] == "tool" and g.get("tool_call_id"):
            msg["results"].append((g["tool_call_id"], text, g.get("name")))
        elif text:
            msg["texts"].append(text)
        msg["calls"] = _flat_calls(g, "tool_calls", "id", "name", "arguments")
        if g.get("function_call.name"):
            msg["calls"].append((None, g["function_call.name"], parse_args(g.get("function_call.arguments"))))
        out.append(msg)
    return out


def _openinference(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    out = []
    for g in _indexed(attrs, prefix):
        msg = _msg(g.get("message.role"))
        text = as_text(g.get("message.content"))
        if not text:
            parts = [
                c.get("message_content.text")
                for c in _indexed(g, "message.contents")
                if c.get("message_content.type") in (None, "text") and c.get("message_content.text")
            ]
            text = "\n".join(parts) or None
        if msg["role"] == "tool" and g.get("message.tool_call_id"):
            msg["results"].append((g["message.tool_call_id"], text, g.get("message.name")))
        elif text:
            msg["texts"].append(text)
        msg["calls"] = _flat_calls(
            g, "message.tool_calls", "tool_call.id", "tool_call.function.name", "tool_call.function.arguments"
        )
        out.append(msg)
    return out


def _vercel_messages(val: Any) -> list[dict[str, Any]]:
    out = []
    for m in _loads(val) if isinstance(_loads(val), list) else []:
        if not isinstance(m, dict):
            continue
        msg = _msg(m.get("role"))
        content = m.get("content")
        for p in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            if not isinstance(p, dict):
                continue
            t = p.get("type")
            if t == "text" and p.get("text"):
                msg["texts"].append(str(p["text"]))
            elif t == "reasoning":
                msg["reasoning"].append(str(p.get("text") or ""))
            elif t == "tool-call":
                msg["calls"].append(
                    (p.get("toolCallId"), p.get("toolName"), parse_args(p.get("input", p.get("args"))))
                )
            elif t == "tool-result":
                res = p.get("output", p.get("result"))
                if isinstance(res, dict) and "value" in res:
                    res = res["value"]
                msg["results"].append(
                    (p.get("toolCallId"), res if isinstance(res, str) else _dump(res), p.get("toolName"))
                )
            elif t in ("image", "file"):
                msg["texts"].append(f"[{t}{': ' + p['mediaType'] if p.get('mediaType') else ''}]")
        out.append(msg)
    return out


def _vercel(attrs: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if "ai.prompt.messages" in attrs:
        inputs = _vercel_messages(attrs["ai.prompt.messages"])
    else:
        prompt = _loads(attrs.get("ai.prompt"))
        inputs = []
        if isinstance(prompt, dict):
            if prompt.get("system"):
                inputs.append({**_msg("system"), "texts": [str(prompt["system"])]})
            if prompt.get("messages"):
                inputs += _vercel_messages(prompt["messages"])
            elif prompt.get("prompt"):
                inputs.append({**_msg("user"), "texts": [as_text(prompt["prompt"]) or ""]})
    out = _msg("assistant")
    text = attrs.get("ai.response.text") or attrs.get("ai.response.object")
    if text:
        out["texts"].append(str(text))
    if attrs.get("ai.response.reasoning"):
        out["reasoning"].append(str(attrs["ai.response.reasoning"]))
    calls = _loads(attrs.get("ai.response.toolCalls"))
    for c in calls if isinstance(calls, list) else []:
        if isinstance(c, dict):
            out["calls"].append(
                (c.get("toolCallId"), c.get("toolName"), parse_args(c.get("input", c.get("args"))))
            )
    return inputs, ([out] if out["texts"] or out["calls"] or out["reasoning"] else [])


def _value_messages(attrs: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Fallback: `input.value`/`output.value` (or bare `input`/`output`) as a chat request/response."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    inp = _loads(attrs.get("input.value", attrs.get("input")))
    if isinstance(inp, dict) and isinstance(inp.get("messages"), list):
        inputs = _semconv(inp["messages"])
    elif inp:
        inputs = [{**_msg("user"), "texts": [as_text(inp) or ""]}]
    out = _loads(attrs.get("output.value", attrs.get("output")))
    if isinstance(out, dict) and isinstance(out.get("choices"), list) and out["choices"]:
        outputs = _semconv([(out["choices"][0] or {}).get("message") or {}])
    elif out:
        outputs = [{**_msg("assistant"), "texts": [as_text(out) or ""]}]
    return inputs, outputs


def _llm(sp: _Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str | None]:
    a = sp.attrs
    system = as_text(_loads(a.get("gen_ai.system_instructions")))
    if "gen_ai.input.messages" in a or "gen_ai.output.messages" in a:
        ins, outs = _semconv(a.get("gen_ai.input.messages")), _semconv(a.get("gen_ai.output.messages"))
    elif any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in a):
        ins, outs = _openllmetry(a, "gen_ai.prompt"), _openllmetry(a, "gen_ai.completion")
    elif any(k.startswith(("llm.input_messages.", "llm.output_messages.")) for k in a):
        ins, outs = _openinference(a, "llm.input_messages"), _openinference(a, "llm.output_messages")
    elif any(k.startswith("ai.") for k in a):
        ins, outs = _vercel(a)
    else:
        ins, outs = _value_messages(a)
    if system:
        ins = [{**_msg("system"), "texts": [system]}, *ins]
    model = next(
        (
            a[k]
            for k in (
                "gen_ai.response.model",
                "gen_ai.request.model",
                "llm.model_name",
                "ai.response.model",
                "ai.model.id",
            )
            if a.get(k)
        ),
        None,
    )
    return ins, outs, model


def _first(a: dict[str, Any], *keys: str) -> Any:
    return next(
        (a[k] for k in keys if isinstance(a.get(k), (int, float)) and not isinstance(a.get(k), bool)), None
    )


def _usage(a: dict[str, Any]) -> dict[str, Any]:
    return {
        "input_tokens": _first(
            a,
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
            "ai.usage.inputTokens",
            "ai.usage.promptTokens",
        ),
        "output_tokens": _first(
            a,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
            "ai.usage.outputTokens",
            "ai.usage.completionTokens",
        ),
        "cached_tokens": _first(
            a,
            "gen_ai.usage.cache_read_input_tokens",
            "gen_ai.usage.cache_read.input_tokens",
            "llm.token_count.prompt_details.cache_read",
            "ai.usage.cachedInputTokens",
        ),
        "reasoning_tokens": _first(
            a,
            "gen_ai.usage.reasoning_tokens",
            "llm.token_count.completion_details.reasoning",
            "ai.usage.reasoningTokens",
        ),
    }


def _dump(v: Any) -> str | None:
    if v is None:
        return None
    try:
        return orjson.dumps(v).decode()
    except TypeError:
        return json.dumps(v, default=str)


def _fingerprint(m: dict[str, Any]) -> str:
    return (
        _dump(
            [m["role"], m["texts"], m["reasoning"], [c[:2] for c in m["calls"]], [r[0] for r in m["results"]]]
        )
        or ""
    )


def _kind(sp: _Span) -> str:
    a = sp.attrs
    op = a.get("gen_ai.operation.name")
    oi = str(a.get("openinference.span.kind") or "").upper()
    tl = a.get("traceloop.span.kind")
    vop = str(a.get("ai.operationId") or (sp.name if sp.name.startswith("ai.") else ""))
    if op == "execute_tool" or oi == "TOOL" or tl == "tool" or vop == "ai.toolCall":
        return "tool"
    if op in ("invoke_agent", "create_agent") or oi == "AGENT" or tl == "agent":
        return "agent"
    if op == "embeddings" or oi in ("EMBEDDING", "RETRIEVER", "RERANKER") or vop.startswith("ai.embed"):
        return "embedding"
    if vop in _VERCEL_OUTER:
        return "llm_outer"
    if (
        op in ("chat", "text_completion", "generate_content")
        or oi == "LLM"
        or a.get("llm.request.type") in ("chat", "completion")
        or vop.endswith((".doGenerate", ".doStream"))
        or any(k.startswith(("gen_ai.input.messages", "gen_ai.prompt.", "llm.input_messages.")) for k in a)
    ):
        return "llm"
    return "other"


def _ts(ns: int) -> datetime | None:
    return parse_ts(ns / 1e9) if ns else None


# -- one trace -> one trajectory -------------------------------------------------------------------


class _Trace:
    def __init__(self, spans: list[_Span]):
        self.spans = sorted(spans, key=lambda s: (s.start, s.end))
        self.by_id = {s.span_id: s for s in self.spans if s.span_id}
        self.kind = {id(s): _kind(s) for s in self.spans}
        self.steps: list[dict[str, Any]] = []
        self.anomalies: list[str] = []
        self.link = CallLinker(self.steps, self.anomalies)
        self.fifo: list[dict[str, Any]] = []
        self.emitted: Counter[str] = Counter()
        self.step_of_span: dict[str, dict[str, Any]] = {}
        self.has_llm_below: set[str] = set()
        for s in self.spans:
            if self.kind[id(s)] == "llm":
                for anc in self._ancestors(s):
                    self.has_llm_below.add(anc.span_id)

    def _ancestors(self, s: _Span) -> Iterator[_Span]:
        seen = {s.span_id}
        pid = s.parent_id
        while pid and pid in self.by_id and pid not in seen:
            seen.add(pid)
            s = self.by_id[pid]
            yield s
            pid = s.parent_id

    def relevant(self) -> bool:
        return any(k in ("llm", "llm_outer", "tool", "agent") for k in self.kind.values())

    def _context(self, s: _Span) -> dict[str, Any]:
        chain = [s, *self._ancestors(s)]
        agents = [x for x in chain if self.kind[id(x)] == "agent"]
        if len(agents) < 2:
            return {"agent_id": "main", "depth": 0}
        inner = agents[0]
        a = inner.attrs
        name = (
            a.get("gen_ai.agent.name") or a.get("agent.name") or a.get("traceloop.entity.name") or inner.name
        )
        ctx: dict[str, Any] = {"agent_id": str(name or inner.span_id), "depth": len(agents) - 1}
        for anc in self._ancestors(inner):  # the call that spawned this agent
            step = self.step_of_span.get(anc.span_id)
            if step is not None:
                ctx["_parent"] = step
                break
        return ctx

    def build(self) -> None:
        for s in self.spans:
            k = self.kind[id(s)]
            if k == "tool":
                self._tool(s)
            elif k == "llm" or (
                k in ("llm_outer", "agent", "other")
                and s.span_id not in self.has_llm_below
                and self._has_content(s)
            ):
                self._model_call(s)
            if s.error:
                self.anomalies.append(f"span {s.name or s.span_id} failed: {s.error}")
        for st in self.link.unresolved():
            self.anomalies.append(f"call without result {st.get('call_id')}")

    @staticmethod
    def _has_content(s: _Span) -> bool:
        a = s.attrs
        return any(
            k in a
            for k in (
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "ai.prompt",
                "ai.prompt.messages",
                "ai.response.text",
                "input.value",
                "output.value",
            )
        ) or any(k.startswith(("gen_ai.prompt.", "llm.input_messages.")) for k in a)

    def _model_call(self, s: _Span) -> None:
        ins, outs, model = _llm(s)
        base = {**self._context(s), "timestamp": _ts(s.start)}
        consumed: Counter[str] = Counter()
        for m in ins:
            fp = _fingerprint(m)
            if consumed[fp] < self.emitted[fp]:
                consumed[fp] += 1
                continue
            consumed[fp] += 1
            self.emitted[fp] += 1
            self._emit(m, base)
        out_base = {**base, "timestamp": _ts(s.end)}
        first = len(self.steps)
        for m in outs:
            fp = _fingerprint(m)
            self.emitted[fp] += 1
            self._emit(m, out_base)
        if len(self.steps) == first:  # content not recorded: keep the call, with its usage
            self.steps.append(
                {
                    **out_base,
                    "kind": "assistant",
                    "role": "assistant",
                    "metadata": {"content_not_recorded": True},
                }
            )
        head = self.steps[first]
        head.update({k: v for k, v in _usage(s.attrs).items() if v is not None})
        if model:
            head["model"] = model
        if head.get("kind") != "tool_call" and s.end > s.start:
            head["duration_s"] = (s.end - s.start) / 1e9
        cost = s.attrs.get("llm.cost.total") or s.attrs.get("gen_ai.usage.cost")
        if isinstance(cost, (int, float)):
            head["metadata"] = {**(head.get("metadata") or {}), "cost_usd": cost}

    def _emit(self, m: dict[str, Any], base: dict[str, Any]) -> None:
        role = m["role"]
        text = "\n".join(t for t in m["texts"] if t) or None
        if role in ("system", "developer"):
            self.steps.append({**base, "kind": "system", "role": role, "text": text})
        elif role in ("user", "human"):
            self.steps.append({**base, "kind": "user", "role": role, "text": text})
        elif role in ("tool", "function", "ipython"):
            for cid, out, name in m["results"] or [(None, text, None)]:
                call = self.link.get(cid) if cid else (self.fifo.pop(0) if self.fifo else None)
                if call is not None:
                    if not call.get("_has_result"):
                        call["output"] = out
                        call["_has_result"] = True
                    continue
                self.anomalies.append(f"result without call {cid}")
                self.steps.append(
                    {
                        **base,
                        "kind": "tool_result",
                        "role": role,
                        "call_id": cid,
                        "tool_name": name,
                        "output": out,
                    }
                )
        else:
            if m["reasoning"]:
                self.steps.append(
                    {**base, "kind": "reasoning", "role": role, "text": "\n".join(m["reasoning"])}
                )
            if text:
                self.steps.append({**base, "kind": "assistant", "role": role, "text": text})
            for cid, name, args in m["calls"]:
                step = {
                    **base,
                    "kind": "tool_call",
                    "role": role,
                    "tool_name": name,
                    "arguments": args,
                    "call_id": cid,
                }
                if cid:
                    if self.link.get(cid) is None:
                        self.link.call(step)
                else:
                    self.steps.append(step)
                    self.fifo.append(step)
            for cid, out, name in m["results"]:  # Anthropic-style results inside a user/assistant turn
                self._emit({**_msg("tool"), "results": [(cid, out, name)]}, base)

    def _tool(self, s: _Span) -> None:
        a = s.attrs
        cid = next(
            (
                str(a[k])
                for k in ("gen_ai.tool.call.id", "tool.id", "tool_call.id", "ai.toolCall.id")
                if a.get(k)
            ),
            None,
        )
        name = (
            next(
                (
                    a[k]
                    for k in ("gen_ai.tool.name", "tool.name", "ai.toolCall.name", "traceloop.entity.name")
                    if a.get(k)
                ),
                None,
            )
            or s.name
        )
        args = next(
            (
                a[k]
                for k in (
                    "gen_ai.tool.call.arguments",
                    "ai.toolCall.args",
                    "ai.toolCall.input",
                    "input.value",
                    "traceloop.entity.input",
                    "input",
                )
                if k in a
            ),
            None,
        )
        res = next(
            (
                a[k]
                for k in (
                    "gen_ai.tool.call.result",
                    "ai.toolCall.result",
                    "ai.toolCall.output",
                    "output.value",
                    "traceloop.entity.output",
                    "output",
                )
                if k in a
            ),
            None,
        )
        fields: dict[str, Any] = {
            "output": res if isinstance(res, str) or res is None else _dump(res),
            "duration_s": (s.end - s.start) / 1e9 if s.end > s.start else None,
        }
        if s.error:
            fields["is_error"] = True
            fields["output"] = fields["output"] or s.error
        step = self.link.get(cid) if cid else None
        if step is None:
            step = {
                **self._context(s),
                "kind": "tool_call",
                "role": "tool",
                "tool_name": name,
                "arguments": parse_args(args),
                "call_id": cid,
                "timestamp": _ts(s.start),
            }
            if cid:
                self.link.call(step)
            else:
                self.steps.append(step)
        if not step.get("_has_result") or fields["output"] is not None:
            step.update({k: v for k, v in fields.items() if v is not None})
        step["_has_result"] = True
        self.step_of_span[s.span_id] = step

    def trajectory(self, trace_id: str | None) -> dict[str, Any]:
        main = [s for s in self.steps if s.get("agent_id", "main") == "main"]
        models = Counter(s["model"] for s in self.steps if s.get("model"))
        conventions = set()
        for s in self.spans:
            for k in s.attrs:
                head = k.split(".", 1)[0]
                if k.startswith(("gen_ai.prompt.", "gen_ai.completion.")):
                    conventions.add("openllmetry")
                elif head in ("gen_ai", "openinference", "traceloop", "ai") or k.startswith("llm."):
                    conventions.add(
                        {"gen_ai": "gen_ai", "ai": "vercel-ai", "traceloop": "openllmetry"}.get(
                            head, "openinference"
                        )
                    )
        roots = [s for s in self.spans if not s.parent_id or s.parent_id not in self.by_id]
        res = next((s.resource for s in self.spans if s.resource), {})
        service = res.get("service.name")
        if isinstance(service, str) and service.startswith("unknown_service"):
            service = None
        root_agent = next((s for s in self.spans if self.kind[id(s)] == "agent"), None)
        harness = service or (
            root_agent and (root_agent.attrs.get("gen_ai.agent.name") or root_agent.attrs.get("agent.name"))
        )
        a0 = self.spans[0].attrs if self.spans else {}
        meta = {
            "trace_id": trace_id,
            "conventions": sorted(conventions),
            "n_spans": len(self.spans),
            "scopes": sorted({s.scope for s in self.spans if s.scope}),
            "conversation_id": next(
                (
                    s.attrs.get(k)
                    for s in self.spans
                    for k in ("gen_ai.conversation.id", "session.id")
                    if s.attrs.get(k)
                ),
                None,
            ),
            "function_id": a0.get("ai.telemetry.functionId"),
        }
        costs = [
            s.attrs.get("llm.cost.total")
            for s in self.spans
            if isinstance(s.attrs.get("llm.cost.total"), (int, float))
        ]
        t: dict[str, Any] = {
            "harness": harness,
            "model": models.most_common(1)[0][0] if models else None,
            "task": next((s.get("text") for s in main if s.get("kind") == "user" and s.get("text")), None),
            "final_answer": next(
                (s.get("text") for s in reversed(main) if s.get("kind") == "assistant" and s.get("text")),
                None,
            ),
            "started_at": _ts(min((s.start for s in self.spans if s.start), default=0)),
            "ended_at": _ts(max((s.end for s in self.spans), default=0)),
            "cost_usd": sum(costs) if costs else None,
            "metadata": {k: v for k, v in meta.items() if v not in (None, [], "")},
            "anomalies": self.anomalies,
        }
        failed_root = next((s for s in roots if s.error), None)
        if failed_root is not None:
            t["exit_status"] = "error"
            t["error"] = failed_root.error
        return t


class OtelGenAiAdapter(Adapter):
    name = "otel-genai"
    runner = "otel_genai"
    extensions = (".json", ".jsonl", ".ndjson")
    priority = 40
    description = "OpenTelemetry GenAI spans: OTLP/JSON, SDK span dumps, flattened span attributes"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        if b'"resourceSpans"' in head_bytes or b'"resource_spans"' in head_bytes:
            return True
        if b'"spanContext"' in head_bytes and b'"attributes"' in head_bytes:
            return True
        if b'"context"' in head_bytes and b'"trace_id"' in head_bytes and b'"span_id"' in head_bytes:
            return True
        s = head_bytes.lstrip()
        return s[:1] == b"{" and bool(_FLAT_RE.search(s[:4096])) and b'"messages"' not in s[:64]

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "no resourceSpans/spanContext/span context and no gen_ai.*/llm.*/ai.* attribute keys"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        path = unit.primary
        spans: list[_Span] = []
        if path.name.lower().endswith((".jsonl", ".ndjson")):
            for rec in read_jsonl(path, ctx):
                got = list(self._spans_of(rec.obj))
                good = [s for s in got if isinstance(s, _Span)]
                if not good:
                    ctx.reject(rec, f"line {rec.line}: no spans (not an OTLP envelope or span object)")
                    continue
                spans += good
                if len(good) < len(got):
                    self_bad = len(got) - len(good)
                    spans_note = f"line {rec.line}: {self_bad} unreadable span(s) skipped"
                    ctx.quarantine(path, spans_note, "schema", rec.raw, rec.line, rec.offset)
        else:
            data = self._load(path, ctx)
            if data is None:
                return
            items = data if isinstance(data, list) and not _is_flat(data) else [data]
            for i, item in enumerate(items):
                for sp in self._spans_of(item):
                    if isinstance(sp, _Span):
                        ctx.seen_ok()
                        spans.append(sp)
                    else:
                        ctx.quarantine(
                            path, f"item {i}: not a span", "schema", (_dump(sp) or "").encode(), line=i
                        )
        by_trace: dict[str, list[_Span]] = {}
        for sp in spans:
            by_trace.setdefault(sp.trace_id or path.stem, []).append(sp)
        for trace_id, group in by_trace.items():
            tr = _Trace(group)
            if not tr.relevant():
                continue
            tr.build()
            t = tr.trajectory(trace_id if any(s.trace_id for s in group) else None)
            native = trace_id if any(s.trace_id for s in group) else None
            yield ParsedTrajectory(
                t, tr.steps, native_key=native, locator=f"trace={native}" if native else None
            )

    @staticmethod
    def _spans_of(item: Any) -> Iterator[Any]:
        if _is_envelope(item):
            yield from _envelope_spans(item)
        elif _is_span(item):
            sp = _span(item)
            yield sp if sp is not None else item
        elif _is_flat(item):
            sp = _Span()
            sp.attrs = dict(item)
            sp.name = str(item.get("ai.operationId") or item.get("gen_ai.operation.name") or "span")
            yield sp
        else:
            yield item

    @staticmethod
    def _load(path: Path, ctx: ParseContext) -> Any:
        try:
            data = path.read_bytes()
            return orjson.loads(data)
        except (OSError, orjson.JSONDecodeError):
            pass
        # Python's ConsoleSpanExporter writes pretty-printed span objects one after another.
        try:
            text = data.decode("utf-8")
        except (UnicodeDecodeError, UnboundLocalError):
            return load_json(path, ctx)
        dec = json.JSONDecoder()
        objs, i = [], 0
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                break
            try:
                obj, i = dec.raw_decode(text, i)
            except json.JSONDecodeError:
                return load_json(path, ctx)
            objs.append(obj)
        return objs if len(objs) > 1 and all(_is_span(o) for o in objs) else load_json(path, ctx)
