"""OpenAI Codex CLI session rollouts (`~/.codex/sessions/.../rollout-*.jsonl`).

Each line is `{"timestamp", "type", "payload"}`. The model-visible history is in `response_item`
lines; `event_msg` lines carry harness events (exit codes in `exec_command_end`, cumulative
`token_count`, the final answer in `task_complete`) and duplicate the messages, so messages are taken
from response items and from events only when a file has no response-item messages at all.

Unified exec (`exec_command` + `write_stdin`) runs a command in a PTY session that later
`write_stdin` calls poll; a poll step records the call it polls in `metadata.polls` and inherits its
tool and modality. There is no success signal in a rollout: the outcome is `unknown`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..normalize import normalize_call
from ._base import (
    Adapter,
    CallLinker,
    ParseContext,
    ParsedTrajectory,
    SourceUnit,
    as_text,
    first_json_line,
    parse_args,
    parse_ts,
    read_jsonl,
)

_ROLLOUT_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_EXIT_RE = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")
_SESSION_RE = re.compile(r"Process running with session ID (\d+)")
_WALL_RE = re.compile(r"Wall time:\s*([\d.]+)\s*s")
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md",
    "<permissions",
    "<INSTRUCTIONS>",
)


def _is_injected(text: str) -> bool:
    s = text.lstrip()
    return s.startswith(_INJECTED_PREFIXES) or (s.startswith("<") and "AGENTS.md" in s[:200])


def _unwrap_output(output: Any) -> tuple[str | None, int | None, float | None]:
    """Output text, exit code and duration from the several shapes of a function_call_output."""
    if isinstance(output, dict):
        text = as_text(output.get("output") if "output" in output else output.get("content"))
        meta = output.get("metadata") or {}
        return text, meta.get("exit_code"), meta.get("duration_seconds")
    if not isinstance(output, str):
        return as_text(output), None, None
    s = output
    if s.startswith('{"output"'):
        try:
            d = orjson.loads(s)
        except orjson.JSONDecodeError:
            d = None
        if isinstance(d, dict):
            meta = d.get("metadata") or {}
            return as_text(d.get("output")), meta.get("exit_code"), meta.get("duration_seconds")
    code = None
    dur = None
    head = s[:400]
    m = _EXIT_RE.search(head)
    if m:
        code = int(m.group(1))
    m = _WALL_RE.search(head)
    if m:
        dur = float(m.group(1))
    return s, code, dur


class CodexRolloutAdapter(Adapter):
    name = "codex-rollout"
    runner = "codex"
    extensions = (".jsonl",)
    priority = 10
    description = "Codex CLI session rollout JSONL (~/.codex/sessions/**/rollout-*.jsonl)"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        first = first_json_line(head_bytes)
        if not first:
            return False
        if first.get("type") in _ROLLOUT_TYPES and isinstance(first.get("payload"), dict):
            return True
        # Early 2025 rollouts: a bare session header line, then bare response items.
        return path.name.startswith("rollout-") and "id" in first and "instructions" in first

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        first = first_json_line(head_bytes)
        if first is None:
            return "first line is not a JSON object"
        return f"first line type={first.get('type')!r} has no rollout payload"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        steps: list[dict[str, Any]] = []
        anomalies: list[str] = []
        link = CallLinker(steps, anomalies)
        t: dict[str, Any] = {"harness": "codex-cli"}
        event_messages: list[dict[str, Any]] = []
        have_item_messages = False
        sessions: dict[str, dict[str, Any]] = {}  # unified-exec session id -> originating call step
        pending_search: dict[str, str] = {}  # query -> call id from web_search_end
        last_usage = None
        last_model_step: dict[str, Any] | None = None
        models: list[str] = []
        native = None
        for rec in read_jsonl(unit.primary, ctx):
            d = rec.obj
            if not isinstance(d, dict):
                ctx.reject(rec, f"line {rec.line}: expected a JSON object, got {type(d).__name__}")
                continue
            typ = d.get("type")
            p = d.get("payload")
            ts = d.get("timestamp")
            if p is None and typ not in _ROLLOUT_TYPES:
                # early format: the line itself is the item
                if "instructions" in d and "id" in d:
                    native = d.get("id")
                    t["started_at"] = parse_ts(d.get("timestamp"))
                    if d.get("instructions"):
                        steps.append(
                            {
                                "kind": "system",
                                "role": "system",
                                "text": d["instructions"],
                                "source_line": rec.line,
                            }
                        )
                    continue
                typ, p = "response_item", d
            if not isinstance(p, dict):
                ctx.reject(rec, f"line {rec.line}: `payload` of a {typ!r} line is not an object")
                continue
            if typ == "session_meta":
                native = p.get("id") or native
                t["runner_version"] = p.get("cli_version")
                t["started_at"] = parse_ts(p.get("timestamp") or ts)
                origin = p.get("originator") or ""
                t["harness"] = "codex-exec" if "exec" in origin else "codex-cli"
                meta = {
                    k: p.get(k)
                    for k in ("cwd", "originator", "source", "model_provider")
                    if p.get(k) is not None
                }
                if isinstance(p.get("git"), dict):
                    meta["git"] = p["git"]
                t["_meta"] = meta
                instr = p.get("base_instructions") or p.get("instructions")
                text = instr.get("text") if isinstance(instr, dict) else instr
                if text:
                    steps.append(
                        {
                            "kind": "system",
                            "role": "system",
                            "text": text,
                            "timestamp": ts,
                            "source_line": rec.line,
                        }
                    )
            elif typ == "turn_context":
                model = p.get("model")
                if model and model not in models:
                    models.append(model)
                if p.get("effort") and not t.get("reasoning_effort"):
                    t["reasoning_effort"] = p.get("effort")
            elif typ == "response_item":
                last_model_step = (
                    self._item(p, ts, rec.line, steps, link, sessions, pending_search) or last_model_step
                )
                if p.get("type") == "message":
                    have_item_messages = True
                    if p.get("role") == "user" and not t.get("task"):
                        txt = steps[-1].get("text") if steps and steps[-1].get("kind") == "user" else None
                        if txt:
                            t["task"] = txt
                    if p.get("role") == "assistant" and p.get("phase") == "final_answer":
                        t["final_answer"] = steps[-1].get("text")
            elif typ == "event_msg":
                et = p.get("type")
                if et == "exec_command_end":
                    cid = p.get("call_id")
                    dur = p.get("duration") or {}
                    secs = (
                        (dur.get("secs") or 0) + (dur.get("nanos") or 0) / 1e9
                        if isinstance(dur, dict)
                        else None
                    )
                    code = p.get("exit_code")
                    step = link.get(cid)
                    fields = {
                        "exit_code": code,
                        "duration_s": secs,
                        "stderr": p.get("stderr") or None,
                        "is_error": (code not in (0, None)) or p.get("status") in ("failed", "declined"),
                        "timed_out": code == 124 or p.get("status") == "timed_out",
                    }
                    if step is None:
                        anomalies.append(f"exec_command_end without call {cid}")
                    else:
                        for k, v in fields.items():
                            if v is not None and (k != "is_error" or v):
                                step[k] = v
                        if not step.get("output") and p.get("aggregated_output"):
                            step["output"] = p["aggregated_output"]
                        step["_has_result"] = True
                elif et == "patch_apply_end":
                    step = link.get(p.get("call_id"))
                    if step is not None:
                        if p.get("success") is False:
                            step["is_error"] = True
                        if p.get("stderr"):
                            step["stderr"] = p["stderr"]
                        changes = p.get("changes")
                        if isinstance(changes, dict):
                            step["_changes"] = sorted(changes)
                elif et == "web_search_end":
                    q = p.get("query") or ""
                    if p.get("call_id"):
                        pending_search[q] = p["call_id"]
                elif et == "token_count":
                    info = p.get("info")
                    if isinstance(info, dict):
                        total = info.get("total_token_usage")
                        if total and total != last_usage:
                            last_usage = total
                            lt = info.get("last_token_usage") or {}
                            if last_model_step is not None and lt:
                                last_model_step["input_tokens"] = lt.get("input_tokens")
                                last_model_step["output_tokens"] = lt.get("output_tokens")
                                last_model_step["reasoning_tokens"] = lt.get("reasoning_output_tokens")
                                last_model_step["cached_tokens"] = lt.get("cached_input_tokens")
                                last_model_step = None
                elif et == "task_complete":
                    if p.get("last_agent_message"):
                        t["final_answer"] = p["last_agent_message"]
                elif et == "turn_aborted":
                    anomalies.append(f"turn aborted ({p.get('reason')})")
                    t["exit_status"] = "aborted"
                elif et == "user_message":
                    msg = p.get("message")
                    if msg:
                        event_messages.append(
                            {
                                "kind": "user",
                                "role": "user",
                                "text": msg,
                                "timestamp": ts,
                                "source_line": rec.line,
                            }
                        )
                        if not t.get("_event_task"):
                            t["_event_task"] = msg
                elif et == "agent_message":
                    if p.get("message"):
                        event_messages.append(
                            {
                                "kind": "assistant",
                                "role": "assistant",
                                "text": p["message"],
                                "timestamp": ts,
                                "source_line": rec.line,
                            }
                        )
                elif et == "error":
                    steps.append(
                        {
                            "kind": "system",
                            "role": "error",
                            "text": p.get("message"),
                            "is_error": True,
                            "timestamp": ts,
                            "source_line": rec.line,
                        }
                    )
            elif typ == "compacted":
                steps.append(
                    {
                        "kind": "compaction",
                        "role": "system",
                        "text": p.get("message"),
                        "timestamp": ts,
                        "source_line": rec.line,
                    }
                )
        if ctx.records_ingested == 0:
            return
        if not have_item_messages and event_messages:
            steps.extend(event_messages)
            steps.sort(key=lambda s: (s.get("timestamp") or "", s.get("source_line") or 0))
        if not t.get("task"):
            t["task"] = t.get("_event_task")
        t.pop("_event_task", None)
        if last_usage:
            t["input_tokens"] = last_usage.get("input_tokens")
            t["output_tokens"] = last_usage.get("output_tokens")
            t["reasoning_tokens"] = last_usage.get("reasoning_output_tokens")
            t["cached_tokens"] = last_usage.get("cached_input_tokens")
            t["total_tokens"] = last_usage.get("total_tokens")
        for s in steps:
            ch = s.pop("_changes", None)
            if ch:
                s["metadata"] = {**(s.get("metadata") or {}), "changes": ch}
        for s in link.unresolved():
            anomalies.append(f"call without result {s.get('call_id')}")
        if not t.get("final_answer"):
            t["final_answer"] = next(
                (s.get("text") for s in reversed(steps) if s.get("kind") == "assistant"), None
            )
        t["model"] = models[-1] if models else None
        meta = t.pop("_meta", {})
        if len(models) > 1:
            meta["models"] = models
        t["metadata"] = meta or None
        t["anomalies"] = anomalies
        yield ParsedTrajectory(t, steps, native_key=native)

    def _item(
        self,
        p: dict[str, Any],
        ts: Any,
        line: int | None,
        steps: list[dict[str, Any]],
        link: CallLinker,
        sessions: dict[str, dict[str, Any]],
        pending_search: dict[str, str],
    ) -> dict[str, Any] | None:
        """Translate one response item; returns the step if it came from the model (for token usage)."""
        it = p.get("type")
        if it == "message":
            role = p.get("role")
            text = as_text(p.get("content"))
            if role == "assistant":
                s = {"kind": "assistant", "role": role, "text": text, "timestamp": ts, "source_line": line}
                if p.get("phase"):
                    s["metadata"] = {"phase": p["phase"]}
                steps.append(s)
                return s
            kind = "system" if role in ("developer", "system") or (text and _is_injected(text)) else "user"
            steps.append({"kind": kind, "role": role, "text": text, "timestamp": ts, "source_line": line})
            return None
        if it == "reasoning":
            summary = p.get("summary") or []
            text = "\n".join(x.get("text", "") for x in summary if isinstance(x, dict)) or as_text(
                p.get("content")
            )
            s = {
                "kind": "reasoning",
                "role": "assistant",
                "text": text or None,
                "timestamp": ts,
                "source_line": line,
            }
            if p.get("encrypted_content"):
                s["metadata"] = {"encrypted": True}
            steps.append(s)
            return s
        if it in ("function_call", "custom_tool_call", "local_shell_call"):
            name = p.get("name") or ("shell" if it == "local_shell_call" else None)
            if it == "custom_tool_call":
                raw_args: Any = {"input": p.get("input")}
            elif it == "local_shell_call":
                raw_args = p.get("action") or {}
            else:
                raw_args = p.get("arguments")
            s: dict[str, Any] = {
                "kind": "tool_call",
                "role": "assistant",
                "tool_name": name,
                "arguments": raw_args,
                "call_id": p.get("call_id") or p.get("id"),
                "timestamp": ts,
                "source_line": line,
            }
            if name == "write_stdin":
                args = parse_args(raw_args)
                sid = str(args.get("session_id")) if isinstance(args, dict) else None
                origin = sessions.get(sid) if sid else None
                chars = args.get("chars") if isinstance(args, dict) else None
                s["tool"] = "poll" if not chars else "write_stdin"
                if origin is not None:
                    s["modality"] = origin.get("modality")
                    s["programs"] = origin.get("programs") or []
                    s["metadata"] = {"polls": origin.get("call_id"), "session_id": sid}
                else:
                    s["modality"] = "compute"
            elif name == "apply_patch" and it == "custom_tool_call":
                s["command"] = None
            if it == "local_shell_call" and p.get("status"):
                s["_has_result"] = p.get("status") == "completed"
            link.call(s)
            if s.get("tool") is None:
                info = normalize_call(name, parse_args(raw_args))
                s["tool"], s["programs"], s["modality"] = info.tool, list(info.programs), info.modality
                s["command"] = info.command
            return s
        if it in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            cid = p.get("call_id")
            text, code, dur = _unwrap_output(p.get("output"))
            step = link.get(cid)
            fields: dict[str, Any] = {"output": text, "duration_s": dur}
            if code is not None:
                fields["exit_code"] = code
                fields["is_error"] = code != 0
            if step is not None and text:
                m = _SESSION_RE.search(text[:400])
                if m:
                    origin = sessions.get(m.group(1))
                    if origin is None or step.get("tool") not in ("poll", "write_stdin"):
                        sessions[m.group(1)] = step
            link.result(cid, orphan={"timestamp": ts, "source_line": line}, **fields)
            return None
        if it == "web_search_call":
            action = p.get("action") or {}
            q = action.get("query") if isinstance(action, dict) else None
            cid = pending_search.pop(q or "", None) or p.get("id")
            s = {
                "kind": "tool_call",
                "role": "assistant",
                "tool_name": "web_search",
                "arguments": action,
                "call_id": cid,
                "timestamp": ts,
                "source_line": line,
                "_has_result": True,  # web search results are not logged by Codex
                "is_error": p.get("status") == "failed",
            }
            link.call(s)
            return s
        if it == "ghost_snapshot":
            return None
        return None
