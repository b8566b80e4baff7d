"""Claude Code headless output: `claude -p --output-format stream-json --verbose` (and the Agent SDK).

One JSON object per line: `system/init` (session, model, tools, version), `assistant` and `user`
lines carrying Messages-API content blocks (one block per line, sharing `message.id`; usage is
counted once per id), `parent_tool_use_id` on the lines of a sub-agent (set to the spawning
Task/Agent tool_use id), `system/task_started` naming that sub-agent, and a final `result` line
(`subtype`, `is_error`, `num_turns`, `result` text, `total_cost_usd`, `usage`, `modelUsage`).

`stream_event` lines (with `--include-partial-messages`) hold raw SSE deltas; the CLI also emits
the complete `assistant` lines, so deltas are only reassembled for a message id that never
arrives complete. `control_request`/`control_response`/`keep_alive` lines (SDK mode) are dropped.

`result.is_error`/`subtype` says whether the run errored, not whether the task was solved: it is
mapped to `exit_status`/`error` and the outcome stays `unknown`. A file holding several sessions
(a new `system/init` with another `session_id`) yields one trajectory per session.
"""

from __future__ import annotations

import io
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
    parse_args,
    read_jsonl,
)
from ._typed import typed_rows

_SUBAGENT_TOOLS = {"Task", "Agent"}
_DROP_TYPES = {"control_request", "control_response", "control_cancel_request", "keep_alive"}
_EXIT_RE = re.compile(r"^Exit code (-?\d+)")
# SSE delta type -> (field of the delta, field of the content block it extends)
_DELTA_FIELDS = {
    "text_delta": ("text", "text"),
    "thinking_delta": ("thinking", "thinking"),
    "input_json_delta": ("partial_json", "_json"),
}


def _sid(v: Any) -> str | None:
    """An id usable as a key: strings and integers only (malformed lines may hold anything)."""
    if isinstance(v, str) and v:
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return None


def _num(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _usage_tokens(usage: dict[str, Any]) -> dict[str, int | None]:
    inp = _num(usage.get("input_tokens"))
    cc = _num(usage.get("cache_creation_input_tokens"))
    cr = _num(usage.get("cache_read_input_tokens"))
    out = usage.get("output_tokens")
    return {"input_tokens": inp + cc + cr, "output_tokens": out if _num(out) else None, "cached_tokens": cr}


def _stream_marker(obj: dict[str, Any]) -> bool | None:
    """True if a line is unmistakably stream-json, False if it is something else, None if undecided."""
    typ = obj.get("type")
    if not isinstance(typ, str):
        return None  # SDK control traffic or a damaged line without a usable `type`: the next line decides
    if typ in _DROP_TYPES or ("type" not in obj and isinstance(obj.get("response"), dict)):
        return None  # SDK control traffic: look at the next line
    if "sessionId" in obj or "parentUuid" in obj:
        return False  # a Claude Code transcript line
    if typ == "system":
        return True if "session_id" in obj else None  # without any session id: damaged, look further
    if typ in ("assistant", "user"):
        return True if "parent_tool_use_id" in obj else None
    if typ == "result":
        return "num_turns" in obj or "total_cost_usd" in obj
    if typ == "stream_event":
        return isinstance(obj.get("event"), dict)
    return False


class _Session:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.anomalies: list[str] = []
        self.link = CallLinker(self.steps, self.anomalies)
        self.t: dict[str, Any] = {"harness": "claude-code"}
        self.meta: dict[str, Any] = {}
        self.session_id: str | None = None
        self.seen_messages: set[str] = set()
        self.usage_step: dict[str, dict[str, Any]] = {}  # message id -> step that carries its tokens
        self.agent_of_call: dict[str, str] = {}  # spawning tool_use id -> sub-agent id
        self.models: list[str] = []
        self.task: str | None = None
        self.partial: dict[str, dict[str, Any]] = {}  # message id -> reassembled stream message
        self.partial_order: list[tuple[int, str]] = []  # (step position, message id)
        self.current_partial: str | None = None
        self.lines = 0

    def empty(self) -> bool:
        return not self.steps and self.lines == 0


class ClaudeStreamJsonAdapter(Adapter):
    name = "claude-stream-json"
    runner = "claude_code"
    extensions = (".jsonl", ".ndjson")
    priority = 15  # before the transcript adapter, which would take a `system` line with a uuid
    description = "Claude Code `-p --output-format stream-json --verbose` / Agent SDK message streams"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        for n, line in enumerate(io.BytesIO(head_bytes)):
            if n >= 8:
                return False
            s = line.strip()
            if not s:
                continue
            try:
                obj = orjson.loads(s)
            except orjson.JSONDecodeError:
                continue  # a damaged line: the reader quarantines it, the lines after it decide
            if not isinstance(obj, dict):
                continue
            verdict = _stream_marker(obj)
            if verdict is not None:
                return verdict
        return False

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "no system/init, result, stream_event or parent_tool_use_id line at the start"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        sess = _Session()
        for rec in read_jsonl(unit.primary, ctx):
            d = rec.obj
            if not isinstance(d, dict):
                ctx.reject(rec, f"line {rec.line}: expected a JSON object, got {type(d).__name__}")
                continue
            typ = d.get("type")
            if "type" not in d and isinstance(d.get("response"), dict):
                continue  # an SDK control response whose type was lost in conversion
            if not isinstance(typ, str):
                ctx.reject(rec, f"line {rec.line}: not a stream-json message (no `type`)")
                continue
            if typ in _DROP_TYPES:
                continue
            sid = _sid(d.get("session_id"))
            if typ == "system" and d.get("subtype") == "init" and sess.session_id and sid != sess.session_id:
                yield from self._finish(sess)
                sess = _Session()
            sess.lines += 1
            if sid and not sess.session_id:
                sess.session_id = sid
            why = self._line(d, rec.line, sess)
            if why:  # counted as read, but nothing of it can be used
                ctx.reject(rec, f"line {rec.line}: {why}")
        if not sess.empty():
            yield from self._finish(sess)

    # -- one line --------------------------------------------------------------------------------

    def _line(self, d: dict[str, Any], line: int | None, s: _Session) -> str | None:
        """Read one line into the session; the reason when the line cannot be used."""
        typ = d.get("type")
        parent = _sid(d.get("parent_tool_use_id"))
        agent = (s.agent_of_call.get(parent) or f"task-{parent[-8:]}") if parent else "main"
        base: dict[str, Any] = {"agent_id": agent, "depth": 1 if parent else 0, "source_line": line}
        if parent:
            spawn = s.link.get(parent)
            if spawn is not None:
                base["_parent"] = spawn
        if typ == "system":
            if not isinstance(d.get("subtype"), str):
                return "system line without a subtype"
            self._system(d, base, s)
        elif typ in ("assistant", "user"):
            if typ == "user":
                self._flush_partials(s)
            msg = d.get("message")
            if not isinstance(msg, dict):
                return f"{typ} line whose `message` is not an object"
            if typ == "user":
                self._user(msg, d, base, s)
                return None
            n = len(s.steps)
            damaged = self._assistant(msg, base, s)
            if damaged and len(s.steps) == n:
                return f"assistant message with {damaged} unreadable content block(s) and nothing else"
        elif typ == "stream_event":
            self._stream_event(d.get("event"), base, s)
        elif typ == "result":
            self._result(d, s)
        return None

    def _system(self, d: dict[str, Any], base: dict[str, Any], s: _Session) -> None:
        sub = d.get("subtype")
        if sub == "init":
            s.t["runner_version"] = d.get("claude_code_version")
            if d.get("model") and d["model"] not in s.models:
                s.models.insert(0, d["model"])
            for k in ("cwd", "tools", "permissionMode", "mcp_servers", "agents", "output_style"):
                if d.get(k) not in (None, [], ""):
                    s.meta[k] = d[k]
        elif sub == "task_started":
            tid, call = _sid(d.get("task_id")), _sid(d.get("tool_use_id"))
            if tid and call:
                s.agent_of_call[call] = str(tid)
                step = s.link.get(call)
                if step is not None:
                    step.setdefault("metadata", {})["agent_id"] = str(tid)
        elif sub == "task_notification":
            status = d.get("status")
            if status and status != "completed":
                s.anomalies.append(f"sub-agent {d.get('task_id')} ended {status}")
        elif sub == "compact_boundary":
            meta = d.get("compact_metadata") or d.get("compactMetadata") or {}
            s.steps.append({**base, "kind": "compaction", "role": "system", "metadata": meta})
        elif sub in ("api_error", "error"):
            s.steps.append(
                {**base, "kind": "system", "role": sub, "text": as_text(d.get("error")), "is_error": True}
            )

    def _assistant(self, msg: dict[str, Any], base: dict[str, Any], s: _Session) -> int:
        """Steps of an assistant message; returns the number of damaged blocks (no object or no `type`)."""
        damaged = 0
        mid = _sid(msg.get("id"))
        model = msg.get("model") if isinstance(msg.get("model"), str) else None
        if model and model != "<synthetic>" and model not in s.models:
            s.models.append(model)
        usage = msg.get("usage") if isinstance(msg.get("usage"), dict) else None
        first = bool(mid) and mid not in s.usage_step  # the first block with usage carries the tokens
        if mid:
            s.seen_messages.add(mid)
        owner = s.usage_step.get(mid) if mid else None
        if owner is not None and usage:
            # Each line of a split response repeats `usage`; a later one has the final output count.
            tokens = _usage_tokens(usage)
            if (tokens["output_tokens"] or 0) >= (owner.get("output_tokens") or 0):
                owner.update(tokens)
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": as_text(content)}]
        for b in blocks:
            if not isinstance(b, dict) or not isinstance(b.get("type"), str):
                damaged += 1
                continue
            bt = b.get("type")
            if bt == "text":
                step = {**base, "kind": "assistant", "role": "assistant", "text": b.get("text")}
            elif bt in ("thinking", "redacted_thinking"):
                step = {**base, "kind": "reasoning", "role": "assistant", "text": b.get("thinking")}
            elif bt in ("tool_use", "server_tool_use"):
                step = {
                    **base,
                    "kind": "tool_call",
                    "role": "assistant",
                    "tool_name": b.get("name"),
                    "arguments": b.get("input"),
                    "call_id": _sid(b.get("id")),
                }
                if _sid(b.get("name")) in _SUBAGENT_TOOLS:
                    step["tool"], step["modality"] = "subagent", "compute"
            else:
                continue
            if model and base["depth"]:
                step["model"] = model
            if first and usage and mid:  # (`first` implies `mid`)
                step.update(_usage_tokens(usage))
                s.usage_step[mid] = step
                first = False
            if step["kind"] == "tool_call":
                s.link.call(step)
            else:
                s.steps.append(step)
        return damaged

    def _user(self, msg: dict[str, Any], d: dict[str, Any], base: dict[str, Any], s: _Session) -> None:
        content = msg.get("content")
        if not isinstance(content, list) or not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            text = as_text(content) or ""
            s.steps.append({**base, "kind": "user", "role": "user", "text": text})
            if s.task is None and base["agent_id"] == "main" and text:
                s.task = text
            return
        tur = d.get("tool_use_result")
        for b in content:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and b.get("text"):
                s.steps.append({**base, "kind": "user", "role": "user", "text": b["text"]})
                continue
            if b.get("type") != "tool_result":
                continue
            cid = _sid(b.get("tool_use_id"))
            out = as_text(b.get("content"))
            is_err = bool(b.get("is_error"))
            fields: dict[str, Any] = {"output": out, "is_error": is_err}
            if isinstance(tur, dict):
                if tur.get("stderr"):
                    fields["stderr"] = tur["stderr"]
                if tur.get("interrupted"):
                    fields["timed_out"] = True
                if _sid(tur.get("agentId")) and cid:
                    s.agent_of_call.setdefault(cid, str(tur["agentId"]))
                dur = tur.get("durationMs") or tur.get("totalDurationMs")
                if isinstance(dur, (int, float)):
                    fields["duration_s"] = dur / 1000.0
            if out and is_err:
                m = _EXIT_RE.match(out)
                if m:
                    fields["exit_code"] = int(m.group(1))
            s.link.result(cid, orphan=dict(base), **fields)

    def _stream_event(self, ev: Any, base: dict[str, Any], s: _Session) -> None:
        """Reassemble raw SSE deltas into a message, used only if its complete line never comes."""
        if not isinstance(ev, dict):
            return
        et = ev.get("type")
        if et == "message_start":
            m = ev.get("message")
            msg = m if isinstance(m, dict) else {}
            mid = _sid(msg.get("id"))
            if mid:
                s.current_partial = mid
                s.partial[mid] = {**msg, "content": [], "_base": base}
                s.partial_order.append((len(s.steps), mid))
            return
        cur = s.partial.get(s.current_partial or "")
        if cur is None:
            return
        if et == "content_block_start":
            block = dict(ev["content_block"]) if isinstance(ev.get("content_block"), dict) else {}
            block["_json"] = ""
            cur["content"].append(block)
        elif et == "content_block_delta" and cur["content"]:
            block = cur["content"][-1]
            dv = ev.get("delta")
            delta = dv if isinstance(dv, dict) else {}
            dtype = delta.get("type")
            field = _DELTA_FIELDS.get(dtype) if isinstance(dtype, str) else None
            if field is not None and isinstance(delta.get(field[0]), str):
                prev = block.get(field[1])
                block[field[1]] = (prev if isinstance(prev, str) else "") + delta[field[0]]
        elif et == "message_delta":
            usage = ev.get("usage")
            if isinstance(usage, dict):
                pu = cur.get("usage")
                prev_usage = pu if isinstance(pu, dict) else {}
                cur["usage"] = {**prev_usage, **usage}
        elif et == "message_stop":
            cur["_stopped"] = True
            s.current_partial = None

    def _result(self, d: dict[str, Any], s: _Session) -> None:
        t = s.t
        sub = d.get("subtype")
        t["exit_status"] = sub or ("error" if d.get("is_error") else None)
        if d.get("is_error") or (sub and sub != "success"):
            errors = d.get("errors")
            msg = "; ".join(str(e) for e in errors) if isinstance(errors, list) and errors else None
            t["error"] = msg or (d.get("result") if isinstance(d.get("result"), str) else None) or sub
        if isinstance(d.get("result"), str):
            t["final_answer"] = d["result"]
        if isinstance(d.get("total_cost_usd"), (int, float)):
            t["cost_usd"] = float(d["total_cost_usd"])
        if isinstance(d.get("duration_ms"), (int, float)):
            t["duration_s"] = d["duration_ms"] / 1000.0
        mu = d.get("modelUsage")
        if isinstance(mu, dict) and mu:
            inp = out = cached = 0
            for m in mu.values():
                if isinstance(m, dict):
                    cr = _num(m.get("cacheReadInputTokens"))
                    inp += _num(m.get("inputTokens")) + _num(m.get("cacheCreationInputTokens")) + cr
                    out += _num(m.get("outputTokens"))
                    cached += cr
            t["input_tokens"], t["output_tokens"], t["cached_tokens"] = inp, out, cached
            for name in mu:
                if name not in s.models:
                    s.models.append(name)
        elif isinstance(d.get("usage"), dict):
            t.update(_usage_tokens(d["usage"]))
        for k in ("num_turns", "duration_api_ms", "permission_denials", "stop_reason"):
            if d.get(k) not in (None, []):
                s.meta[k] = d[k]

    # -- end of a session --------------------------------------------------------------------------

    def _flush_partials(self, s: _Session, everything: bool = False) -> None:
        """Turn finished delta-only messages into steps, at the position where they started."""
        keep: list[tuple[int, str]] = []
        rebuild: list[tuple[int, str]] = []
        for pos, mid in s.partial_order:
            if mid in s.seen_messages:
                continue
            (rebuild if everything or s.partial[mid].get("_stopped") else keep).append((pos, mid))
        s.partial_order = keep
        for pos, mid in reversed(rebuild):
            msg = s.partial.pop(mid)
            base = msg.pop("_base")
            for block in msg["content"]:
                raw = block.pop("_json", "")
                if block.get("type") in ("tool_use", "server_tool_use"):
                    block["input"] = parse_args(raw) if raw else block.get("input")
            tail = s.steps[pos:]
            del s.steps[pos:]
            self._assistant(msg, base, s)
            added = len(s.steps) - pos
            s.steps.extend(tail)
            s.partial_order = [(p + added if p > pos else p, m) for p, m in s.partial_order]
            s.anomalies.append(f"message {mid} rebuilt from stream_event deltas")

    def _finish(self, s: _Session) -> Iterator[ParsedTrajectory]:
        self._flush_partials(s, everything=True)
        for step in s.link.unresolved():
            s.anomalies.append(f"call without result {step.get('call_id')}")
        t = s.t
        if not t.get("final_answer"):
            t["final_answer"] = next(
                (
                    st.get("text")
                    for st in reversed(s.steps)
                    if st.get("kind") == "assistant" and st.get("agent_id") == "main"
                ),
                None,
            )
        t["model"] = s.models[0] if s.models else None
        if len(s.models) > 1:
            s.meta["models"] = s.models
        t["task"] = s.task
        t["metadata"] = s.meta or None
        t["anomalies"] = s.anomalies
        if "exit_status" not in t:
            s.anomalies.append("no result line: the run did not finish (or the stream was cut)")
        loc = f"session={s.session_id}" if s.session_id else None
        typed_rows(t, s.steps)
        yield ParsedTrajectory(t, s.steps, native_key=s.session_id, locator=loc)
