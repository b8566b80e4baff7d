"""OpenHands V0 event streams and evaluation `output.jsonl` rows.

A trajectory file is a JSON list of events: `{id, timestamp, source, message}` plus either
`action` (with `args`) or `observation` (with `content`, `extras`, `success`). An observation's
`cause` is the id of the action it answers; that is the call->result link. Actions produced by the
model carry `tool_call_metadata{function_name, tool_call_id, model_response}`, the litellm response
with the usage of that model call (repeated on every event of the response: counted once per
response id). The model's text is the action's `args.thought`. `finish` ends the run (its
`final_thought`/`thought`/`outputs` are the final answer); `agent_state_changed` and `null`
observations are bookkeeping.

Evaluation `output.jsonl` rows wrap the events as `history` (newer) or `[action, observation]` pairs
(older) and add `instance_id`, `instruction`, `test_result` (`git_patch`, and after SWE-bench
evaluation `report.resolved`), `metadata` (agent class, llm config), `metrics` and `error`.
Timestamps are naive local times: read as UTC.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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
    json_records,
    load_json,
    parse_args,
    parse_ts,
    read_jsonl,
)
from ._read import SNIFF_LINES
from ._safe import BAD_SHAPE, as_dict, as_id, as_int, as_list, as_num, as_str, raw_of_obj, rollback

_LIST_HEAD_RE = re.compile(rb'^\s*\[\s*\{\s*"id"\s*:\s*\d+')
_BOOKKEEPING_ACTIONS = {"change_agent_state", "null"}
_BOOKKEEPING_OBS = {"agent_state_changed", "null"}
_THOUGHT_KEYS = ("thought", "final_thought")
_ARG_DROP = {
    "thought",
    "confirmation_state",
    "is_confirmed",
    "impl_source",
    "translated_ipython_code",
    "hidden",
    "blocking",
}
_MESSAGE_ACTIONS = {"message", "system", "recall", "condensation", "condensation_request"}


class OpenHandsAdapter(Adapter):
    name = "openhands"
    runner = "openhands"
    extensions = (".json", ".jsonl")
    priority = 30
    description = "OpenHands V0 event-stream JSON lists and evaluation output.jsonl rows"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        if path.name.lower().endswith(".jsonl"):
            h = head_bytes.lstrip()
            for _ in range(SNIFF_LINES):  # look past damaged leading lines (the reader quarantines them)
                if h[:1] == b"{" or b"\n" not in h:
                    break
                h = h[h.index(b"\n") + 1 :].lstrip()
            return (
                h[:1] == b"{"
                and b'"instance_id"' in h
                and (b'"history"' in h or b'"agent_class"' in h)
                and b'"messages"' not in h[: h.find(b'"history"') if b'"history"' in h else len(h)]
            )
        if not _LIST_HEAD_RE.match(head_bytes):
            return False
        return b'"source"' in head_bytes and (b'"action"' in head_bytes or b'"observation"' in head_bytes)

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "not a JSON list of {id, source, action|observation} events nor an eval row with history"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        if unit.primary.name.lower().endswith(".jsonl"):
            yield from self._eval_rows(unit, ctx)
            return
        doc = load_json(unit.primary, ctx)
        if doc is None:
            return
        if not isinstance(doc, list):
            ctx.quarantine(unit.primary, "expected a JSON list of events", "schema", raw_of_obj(doc))
            return
        st = _Stream()
        for rec in json_records(unit.primary, ctx, doc):
            if not isinstance(rec.obj, dict) or not ("action" in rec.obj or "observation" in rec.obj):
                ctx.reject(rec, f"event {rec.line}: not an OpenHands action or observation")
                continue
            n = len(st.steps)
            try:
                st.event(rec.obj, rec.line)
            except BAD_SHAPE as e:
                rollback(st.steps, [st.link], n)
                ctx.reject(rec, f"event {rec.line}: unexpected shape ({type(e).__name__}: {e})")
        t = st.finish()
        yield ParsedTrajectory(t, st.steps, native_key=None)

    def _eval_rows(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        for rec in read_jsonl(unit.primary, ctx):
            row = rec.obj
            if not isinstance(row, dict) or not isinstance(row.get("history"), list):
                ctx.reject(rec, f"line {rec.line}: not an evaluation row (needs a `history` list)")
                continue
            st = _Stream()
            for i, ev in enumerate(_flatten_history(row["history"])):
                if not (isinstance(ev, dict) and ("action" in ev or "observation" in ev)):
                    st.anomalies.append(f"history[{i}] is not an event")
                    continue
                n = len(st.steps)
                try:
                    st.event(ev, None, i)
                except BAD_SHAPE as e:
                    rollback(st.steps, [st.link], n)
                    st.anomalies.append(f"history[{i}] dropped: unexpected shape ({type(e).__name__})")
            t = st.finish()
            _apply_eval_row(row, t)
            native = as_id(row.get("instance_id"))
            yield ParsedTrajectory(t, st.steps, native_key=native, locator=f"line={rec.line}")


def _flatten_history(history: list[Any]) -> Iterator[Any]:
    for item in history:
        if isinstance(item, (list, tuple)):
            yield from item
        else:
            yield item


class _Stream:
    """Translates one event stream into steps."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.anomalies: list[str] = []
        self.link = CallLinker(self.steps, self.anomalies)
        self.by_event: dict[Any, dict[str, Any]] = {}  # action event id -> call step
        self.responses: set[str] = set()
        self.models: dict[str, int] = {}
        self.state: str | None = None
        self.finished = False
        self.final: str | None = None
        self.task: str | None = None
        self.last_metrics: dict[str, Any] | None = None
        self.error: str | None = None

    def event(self, ev: dict[str, Any], line: int | None, index: int | None = None) -> None:
        base: dict[str, Any] = {
            "timestamp": ev.get("timestamp"),
            "source_line": line if line is not None else index,
        }
        if isinstance(ev.get("llm_metrics"), dict):
            self.last_metrics = ev["llm_metrics"]
        if "action" in ev:
            self._action(ev, base)
        else:
            self._observation(ev, base)

    def _usage(self, tcm: dict[str, Any]) -> dict[str, Any]:
        mr = as_dict(tcm.get("model_response"))
        if not mr:
            return {}
        model = as_str(mr.get("model"))
        if model:
            self.models[model] = self.models.get(model, 0) + 1
        rid = as_id(mr.get("id"))
        if rid in self.responses:
            return {"model": model, "first": False}
        if rid:
            self.responses.add(rid)
        u = as_dict(mr.get("usage"))
        ptd = as_dict(u.get("prompt_tokens_details"))
        cached = as_int(ptd.get("cached_tokens"))
        return {
            "model": model,
            "input_tokens": as_int(u.get("prompt_tokens")),
            "output_tokens": as_int(u.get("completion_tokens")),
            "cached_tokens": cached if cached is not None else as_int(u.get("cache_read_input_tokens")),
            "reasoning_tokens": as_int(as_dict(u.get("completion_tokens_details")).get("reasoning_tokens")),
            "first": True,
        }

    def _action(self, ev: dict[str, Any], base: dict[str, Any]) -> None:
        action = as_str(ev.get("action")) or "unknown"
        args = as_dict(ev.get("args"))
        src = ev.get("source")
        role = "user" if src == "user" else ("assistant" if src == "agent" else (as_str(src) or "unknown"))
        if action in _BOOKKEEPING_ACTIONS:
            return
        if action == "message":
            text = args.get("content") if args.get("content") is not None else ev.get("message")
            kind = "user" if src == "user" else "assistant"
            step = {**base, "kind": kind, "role": role, "text": as_text(text)}
            self.steps.append(step)
            if kind == "user" and self.task is None and step["text"]:
                self.task = step["text"]
            tcm = ev.get("tool_call_metadata")
            if isinstance(tcm, dict):
                step.update({k: v for k, v in self._usage(tcm).items() if v is not None and k != "first"})
            return
        if action in ("system", "recall"):
            text = args.get("content") or args.get("query") or ev.get("message")
            self.steps.append({**base, "kind": "system", "role": action, "text": as_text(text)})
            return
        if action in ("condensation", "condensation_request"):
            text = args.get("summary") or ev.get("message")
            meta = {
                k: args[k]
                for k in ("forgotten_event_ids", "forgotten_events_start_id", "forgotten_events_end_id")
                if args.get(k)
            }
            self.steps.append(
                {
                    **base,
                    "kind": "compaction",
                    "role": "system",
                    "text": as_text(text),
                    "metadata": meta or None,
                }
            )
            return
        tcm = as_dict(ev.get("tool_call_metadata"))
        usage = self._usage(tcm) if tcm else {}
        thought = next((args[k] for k in _THOUGHT_KEYS if isinstance(args.get(k), str) and args[k]), None)
        first = None
        if thought and (usage.get("first", True)) and action != "think":
            first = {**base, "kind": "assistant", "role": role, "text": thought, "model": usage.get("model")}
            self.steps.append(first)
        cid = as_id(tcm.get("tool_call_id")) or f"event-{as_id(ev.get('id'))}"
        step = {
            **base,
            "kind": "tool_call",
            "role": role,
            "tool_name": as_str(tcm.get("function_name")) or action,
            "arguments": _call_arguments(tcm, args),
            "call_id": cid,
            "model": usage.get("model"),
            "metadata": {"action": action},
        }
        carrier = first or step
        for k in ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"):
            if usage.get(k) is not None:
                carrier[k] = usage[k]
        self.link.call(step)
        eid = as_id(ev.get("id"))
        if eid is not None:
            self.by_event[eid] = step
        if action == "finish":
            self.finished = True
            self.final = (
                as_str(args.get("final_thought"))
                or as_str(args.get("thought"))
                or _outputs_text(args.get("outputs"))
                or as_str(ev.get("message"))
            )
            step["_has_result"] = True  # finish has no observation

    def _observation(self, ev: dict[str, Any], base: dict[str, Any]) -> None:
        obs = as_str(ev.get("observation")) or "unknown"
        extras = as_dict(ev.get("extras"))
        if obs == "agent_state_changed":
            self.state = as_str(extras.get("agent_state")) or self.state
            if extras.get("reason"):
                self.error = str(extras["reason"])
            return
        if obs == "null":
            return
        content = as_text(ev.get("content"))
        cause = as_id(ev.get("cause"))
        call = self.by_event.get(cause) if cause is not None else None
        if call is None:
            if obs == "error":
                self.steps.append(
                    {**base, "kind": "system", "role": "error", "text": content, "is_error": True}
                )
                self.error = content
            elif obs in ("recall", "condensation"):
                self.steps.append(
                    {**base, "kind": "system", "role": obs, "text": content or as_text(ev.get("message"))}
                )
            elif cause is not None and obs != "think":
                self.link.result(f"event-{cause}", orphan={**base}, output=content)
            elif content:
                self.steps.append({**base, "kind": "system", "role": str(obs), "text": content})
            return
        meta = as_dict(extras.get("metadata"))
        code = as_int(meta.get("exit_code"))
        suffix = str(meta.get("suffix") or "")
        timed_out = code == -1 or "timed out" in suffix.lower() or "no new output after" in suffix
        is_error = (
            obs in ("error", "user_rejected")
            or ev.get("success") is False
            or (code is not None and code not in (0, -1))
            or bool(content and content.startswith("ERROR:"))  # the file editor reports failures as text
        )
        t0, t1 = parse_ts(call.get("timestamp")), parse_ts(ev.get("timestamp"))
        fields: dict[str, Any] = {
            "output": content,
            "exit_code": code,
            "is_error": is_error or None,
            "timed_out": timed_out or None,
            "duration_s": max((t1 - t0).total_seconds(), 0.0) if t0 and t1 else None,
        }
        self.link.result(call["call_id"], **fields)

    def finish(self) -> dict[str, Any]:
        for s in self.link.unresolved():
            self.anomalies.append(f"call without result {s.get('call_id')}")
        t: dict[str, Any] = {
            "harness": "openhands",
            "task": self.task,
            "model": max(self.models, key=lambda m: self.models[m]) if self.models else None,
            "final_answer": self.final
            or next((s.get("text") for s in reversed(self.steps) if s.get("kind") == "assistant"), None),
            "exit_status": "finished" if self.finished else self.state,
            "anomalies": self.anomalies,
        }
        if self.state == "error":
            t["error"] = self.error
        m = self.last_metrics
        if m:
            _apply_metrics(m, t)
        meta: dict[str, Any] = {}
        if len(self.models) > 1:
            meta["models"] = sorted(self.models)
        if self.state:
            meta["agent_state"] = self.state
        t["metadata"] = meta or None
        return t


def _call_arguments(tcm: dict[str, Any], args: dict[str, Any]) -> Any:
    """The arguments the model sent (from the response's tool call), else the action's args."""
    mr = as_dict(tcm.get("model_response"))
    cid = as_id(tcm.get("tool_call_id"))
    if mr and cid:
        for ch in as_list(mr.get("choices")):
            for tc in as_list(as_dict(as_dict(ch).get("message")).get("tool_calls")):
                if isinstance(tc, dict) and tc.get("id") == cid:
                    return parse_args(as_dict(tc.get("function")).get("arguments"))
    return {k: v for k, v in args.items() if k not in _ARG_DROP}


def _outputs_text(outputs: Any) -> str | None:
    if isinstance(outputs, dict) and outputs:
        return orjson.dumps(outputs).decode()
    return None


def _apply_metrics(m: dict[str, Any], t: dict[str, Any]) -> None:
    acc = as_dict(m.get("accumulated_token_usage"))
    if acc:
        t["input_tokens"] = as_int(acc.get("prompt_tokens"))
        t["output_tokens"] = as_int(acc.get("completion_tokens"))
        t["cached_tokens"] = as_int(acc.get("cache_read_tokens"))
    if as_num(m.get("accumulated_cost")) is not None:
        t["cost_usd"] = as_num(m["accumulated_cost"])


def _apply_eval_row(row: dict[str, Any], t: dict[str, Any]) -> None:
    t["task_id"] = as_id(row.get("instance_id"))
    if row.get("instruction"):
        t["task"] = as_text(row["instruction"])
    tr = as_dict(row.get("test_result"))
    report = tr.get("report") if isinstance(tr.get("report"), dict) else None
    if report is None and isinstance(row.get("report"), dict):
        report = row["report"]
        src = "report.resolved"
    else:
        src = "test_result.report.resolved"
    if report is not None and isinstance(report.get("resolved"), bool):
        t["outcome"] = "success" if report["resolved"] else "failure"
        t["reward"] = 1.0 if report["resolved"] else 0.0
        t["outcome_source"] = src
    elif isinstance(row.get("resolved"), bool):
        t["outcome"] = "success" if row["resolved"] else "failure"
        t["reward"] = 1.0 if row["resolved"] else 0.0
        t["outcome_source"] = "resolved"
    if isinstance(tr.get("git_patch"), str) and tr["git_patch"].strip():
        t["final_answer"] = tr["git_patch"]
    md = as_dict(row.get("metadata"))
    t["model"] = as_str(as_dict(md.get("llm_config")).get("model")) or t.get("model")
    if as_str(md.get("dataset")):
        t["benchmark"] = md["dataset"]
    if as_str(md.get("data_split")):
        t["split"] = md["data_split"]
    _apply_metrics(as_dict(row.get("metrics")), t)
    if row.get("error"):
        t["error"] = str(row["error"])
        t["exit_status"] = "error"
    meta = dict(t.get("metadata") or {})
    for k in ("agent_class", "max_iterations", "git_commit", "eval_output_dir", "start_time"):
        if md.get(k) is not None:
            meta[k] = md[k]
    if report:
        meta["report"] = report
    t["metadata"] = meta or None
    t["harness"] = "openhands"
