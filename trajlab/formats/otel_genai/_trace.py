"""One trace -> one trajectory: span order, message deduplication, tool results, sub-agents."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from .._base import CallLinker, parse_args
from ._messages import _fingerprint, _kind, _llm, _msg, _usage
from ._spans import _dump, _Span, _str, _ts


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
            for raw_id, out, name in m["results"] or [(None, text, None)]:
                cid = _str(raw_id) or None
                call = self.link.get(cid) if cid else (self.fifo.pop(0) if self.fifo else None)
                if call is not None:
                    if not call.get("_has_result"):
                        call["output"] = out
                        call["_has_result"] = True
                    continue
                if cid:  # the linker pairs it with its call if that comes later (out of order)
                    self.link.result(cid, orphan={**base, "role": role, "tool_name": _str(name)}, output=out)
                    continue
                self.anomalies.append(f"result without call {cid}")
                self.steps.append(
                    {
                        **base,
                        "kind": "tool_result",
                        "role": role,
                        "call_id": cid,
                        "tool_name": _str(name),
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
            for raw_id, name, args in m["calls"]:
                cid = _str(raw_id) or None
                step = {
                    **base,
                    "kind": "tool_call",
                    "role": role,
                    "tool_name": _str(name),
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
        if isinstance(res, str) and res.startswith('"'):  # JSON.stringify of a string (Vercel AI SDK)
            with contextlib.suppress(json.JSONDecodeError):
                res = json.loads(res)
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
            conventions.update(_conventions(s.attrs))
        roots = [s for s in self.spans if not s.parent_id or s.parent_id not in self.by_id]
        res = next((s.resource for s in self.spans if s.resource), {})
        service = res.get("service.name") if isinstance(res.get("service.name"), str) else None
        if service and service.startswith("unknown_service"):
            service = None
        root_agent = next((s for s in self.spans if self.kind[id(s)] == "agent"), None)
        harness = service or (
            root_agent and (root_agent.attrs.get("gen_ai.agent.name") or root_agent.attrs.get("agent.name"))
        )
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
            "function_id": next(
                (
                    s.attrs["ai.telemetry.functionId"]
                    for s in self.spans
                    if s.attrs.get("ai.telemetry.functionId")
                ),
                None,
            ),
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


_SEMCONV_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.id",
)


def _conventions(a: dict[str, Any]) -> set[str]:
    """Which attribute conventions a span uses (a span may mix several)."""
    found = set()
    if any(k in a for k in _SEMCONV_KEYS):
        found.add("gen_ai")
    if any(
        k.startswith(("gen_ai.prompt.", "gen_ai.completion.", "traceloop.", "llm.request.type", "llm.usage."))
        for k in a
    ):
        found.add("openllmetry")
    if "openinference.span.kind" in a or any(
        k.startswith(("llm.input_messages.", "llm.output_messages.", "llm.token_count.", "llm.model_name"))
        for k in a
    ):
        found.add("openinference")
    if any(k.startswith("ai.") for k in a):
        found.add("vercel-ai")
    return found
