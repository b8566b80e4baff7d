"""Chat messages, tool calls and usage from one span, whatever attribute convention it uses."""

from __future__ import annotations

import re
from typing import Any

import orjson

from .._base import as_text, parse_args
from ._spans import _dump, _Span

_VERCEL_OUTER = {"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"}
_INDEXED = re.compile(r"^(\d+)\.(.+)$")


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
            # as_text: a text part that is not a string (a number, a list) must not fail the file
            parts = [
                as_text(c.get("message_content.text"))
                for c in _indexed(g, "message.contents")
                if c.get("message_content.type") in (None, "text") and c.get("message_content.text")
            ]
            text = "\n".join(p for p in parts if p) or None
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
        (  # the first model attribute that holds a name
            a[k]
            for k in (
                "gen_ai.response.model",
                "gen_ai.request.model",
                "llm.model_name",
                "ai.response.model",
                "ai.model.id",
            )
            if isinstance(a.get(k), str) and a[k]
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
