"""OpenAI Codex CLI session rollouts (`~/.codex/sessions/.../rollout-*.jsonl`).

Each line is `{"timestamp", "type", "payload"}`. The model-visible history is in `response_item`
lines; `event_msg` lines carry harness events (exit codes in `exec_command_end`, cumulative
`token_count` often emitted twice, the final answer in `task_complete`) and duplicate the messages
(`user_message`, `agent_message`). Messages come from response items; the event copies are used only
for a role that has no response-item message in the file (some rollouts are trimmed to events).

Tool outputs of unified exec and `shell_command` start with a harness header ("Chunk ID", "Wall time",
"Process exited with code N" / "Exit code: N", "Output:"); the header becomes `exit_code` and
`duration_s` and `output` keeps the body. Unified exec (`exec_command` + `write_stdin`) runs a command
in a PTY session that later `write_stdin` calls poll: a still-running call gets the command's
aggregated output and exit code from `exec_command_end`, and a poll step records the call it polls in
`metadata.polls` and inherits its programs and modality; its tool is `poll` (`write_stdin` when it types
characters). There is no success signal: the outcome is `unknown`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from mypy_extensions import mypyc_attr

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
)
from ._read import json_objects, read_jsonl_lines
from ._safe import BAD_SHAPE, rollback

_ROLLOUT_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md",
    "<permissions",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
)
_HEADER_KEYS = (
    "Chunk ID",
    "Wall time",
    "Process ",
    "Original token count",
    "Exit code",
    "Total output lines",
)
_CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def _is_injected(text: str) -> bool:
    s = text.lstrip()
    return s.startswith(_INJECTED_PREFIXES) or (s.startswith("<") and "AGENTS.md" in s[:200])


# What Codex answers a call it could not carry out (no exit-code header: no command ran), e.g.
# "write_stdin failed: stdin is closed for this session", "failed to parse function arguments: ..."
# (a tool's name has an underscore: "the job failed: ..." from a program is no refusal)
_REFUSED = re.compile(r"(?:[a-z]+_[a-z_]+(?: [a-z]+)? failed: |failed to parse function arguments)")

_EXEC_HEADER = re.compile(
    r"(?:(?:Chunk ID|Wall time|Process exited with code|Process running with session ID|Exit code"
    r"|Original token count|Total output lines)[^\n]*\n){1,8}(?:Output:\n|\Z)"
)
_HEADER_FIELD = re.compile(
    r"^(?:Wall time: (?P<wall>[\d.]+)|Process exited with code (?P<code>-?\d+)"
    r"|Exit code: (?P<code2>-?\d+)|Process running with session ID (?P<session>\S+))",
    re.M,
)


# The two headers Codex writes (unified exec; shell_command), matched and read in one pass. Anything
# else (other line orders, "Total output lines", no "Output:") goes the general way below, which gives
# the same fields for these two: groups (wall, code, session) and (code, wall) of `shell_command`.
_COMMON_HEADER = re.compile(
    r"Chunk ID: [^\n]*\nWall time: ([\d.]+)[^\n]*\n"
    r"(?:Process exited with code (-?\d+)|Process running with session ID (\S+))[^\n]*\n"
    r"Original token count: [^\n]*\nOutput:\n"
    r"|Exit code: (-?\d+)[^\n]*\nWall time: ([\d.]+)[^\n]*\nOutput:\n"
)


def split_exec_output(s: str) -> tuple[str, int | None, float | None, str | None]:
    """(body, exit code, wall time s, running session id) of a unified-exec / shell_command output."""
    c = _COMMON_HEADER.match(s)
    if c is not None:  # one regex call instead of the header match plus a field search (2x faster)
        wall, code_s, session, code2, wall2 = c.groups()
        if wall is None:
            wall, code_s = wall2, code2
        return (
            s[c.end() :],
            None if code_s is None else int(code_s),
            float(wall) if wall.count(".") <= 1 else None,
            session,
        )
    return _split_any_header(s)


def _split_any_header(s: str) -> tuple[str, int | None, float | None, str | None]:
    """`split_exec_output` for any header: its lines in any order, the last value of a field wins."""
    m = _EXEC_HEADER.match(s)
    if m is None:
        return s, None, None, None
    code = dur = session = None
    end = m.end()
    for f in _HEADER_FIELD.finditer(s, 0, end):
        name = f.lastgroup  # each branch has one non-empty group: the one that matched
        value = f.group(name)  # type: ignore[arg-type]
        if name == "wall":
            dur = float(value) if value.count(".") <= 1 else None
        elif name == "session":
            session = value
        else:
            code = int(value)
    return s[end:], code, dur, session


def _int(s: str) -> int | None:
    try:
        return int(s)
    except ValueError:
        return None


def _unwrap_output(output: Any) -> tuple[str | None, int | None, float | None, str | None]:
    """Output text, exit code, duration and running session id from a *_call_output payload."""
    if isinstance(output, dict):
        meta = output.get("metadata") or {}
        text = as_text(output.get("output") if "output" in output else output.get("content"))
        return text, meta.get("exit_code"), meta.get("duration_seconds"), None
    if not isinstance(output, str):
        return as_text(output), None, None, None
    if output.startswith('{"output"'):
        try:
            d = orjson.loads(output)
        except orjson.JSONDecodeError:
            d = None
        if isinstance(d, dict):
            meta = d.get("metadata") or {}
            return as_text(d.get("output")), meta.get("exit_code"), meta.get("duration_seconds"), None
    return split_exec_output(output)


class _State:
    """Everything gathered while reading one rollout."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.anomalies: list[str] = []
        self.link = CallLinker(self.steps, self.anomalies)
        self.t: dict[str, Any] = {"harness": "codex-cli"}
        self.meta: dict[str, Any] = {}
        self.item_roles: set[str] = set()  # roles that have response-item messages
        self.sessions: dict[str, dict[str, Any]] = {}  # unified-exec session id -> originating call step
        self.search_ids: dict[str, str] = {}  # query -> call id from web_search_end
        self.last_usage: dict[str, Any] | None = None
        self.model_step: dict[str, Any] | None = None  # last step of the current model response
        self.models: list[Any] = []  # as the rollout wrote them (a damaged line may hold a non-string)
        self.native: str | None = None
        self.event_task: str | None = None


@mypyc_attr(allow_interpreted_subclasses=True)  # plugins may extend it
class CodexRolloutAdapter(Adapter):
    name = "codex-rollout"
    runner = "codex"
    extensions = (".jsonl",)
    priority = 10
    description = "Codex CLI session rollout JSONL (~/.codex/sessions/**/rollout-*.jsonl)"
    version = 2  # 2: a call Codex could not carry out ("write_stdin failed: ...") is an error

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        # the first line with a type (or an early header) decides: damaged lines before it are skipped
        for first in json_objects(head_bytes):
            if isinstance(first.get("type"), str) and first["type"] in _ROLLOUT_TYPES:
                if isinstance(first.get("payload"), dict):
                    return True
                continue  # a rollout line that lost its payload: the next line decides
            # Early 2025 rollouts: a bare session header line, then bare response items.
            if "id" in first and "instructions" in first:
                return path.name.startswith("rollout-")
            if isinstance(first.get("type"), str):
                return False
        return False

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        first = first_json_line(head_bytes)
        if first is None:
            return "first line is not a JSON object"
        return f"first line type={first.get('type')!r} has no rollout payload"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        st = _State()
        path = unit.primary
        item, event = self._item, self._event
        for d, line, off, raw in read_jsonl_lines(path, ctx):
            if type(d) is not dict:
                ctx.reject_line(
                    path, line, off, raw, f"line {line}: expected a JSON object, got {type(d).__name__}"
                )
                continue
            typ = d.get("type")
            p = d.get("payload")
            ts = d.get("timestamp")
            if type(typ) is not str or type(p) is not dict:  # (a well-formed line skips these checks)
                if typ is not None and type(typ) is not str:  # a list here raised TypeError (unhashable)
                    ctx.reject_line(
                        path, line, off, raw, f"line {line}: `type` is {type(typ).__name__}, not a line type"
                    )
                    continue
                if p is None and typ not in _ROLLOUT_TYPES:
                    if "instructions" in d and "id" in d:  # early format: a bare session header
                        st.native = d.get("id")
                        st.t["started_at"] = d.get("timestamp")
                        if d.get("instructions"):
                            st.steps.append(
                                {
                                    "kind": "system",
                                    "role": "system",
                                    "text": d["instructions"],
                                    "source_line": line,
                                }
                            )
                        continue
                    if type(d.get("type")) is not str:  # neither a rollout line nor an item: damaged
                        ctx.reject_line(
                            path,
                            line,
                            off,
                            raw,
                            f"line {line}: no `type` (not a rollout line nor a response item)",
                        )
                        continue
                    typ, p = "response_item", d  # early format: the line itself is the item
                elif type(typ) is not str:
                    ctx.reject_line(
                        path, line, off, raw, f"line {line}: `type` is {type(typ).__name__}, not a line type"
                    )
                    continue
                if type(p) is not dict:
                    ctx.reject_line(
                        path, line, off, raw, f"line {line}: `payload` of a {typ!r} line is not an object"
                    )
                    continue
            if (typ == "response_item" or typ == "event_msg") and type(p.get("type")) is not str:
                ctx.reject_line(path, line, off, raw, f"line {line}: {typ} payload without a `type`")
                continue
            n = len(st.steps)
            try:
                if typ == "response_item":
                    item(st, p, ts, line)
                elif typ == "event_msg":
                    event(st, p, ts, line)
                elif typ == "session_meta":
                    self._session_meta(st, p, ts, line)
                elif typ == "turn_context":
                    model = p.get("model")
                    if model and model not in st.models:
                        st.models.append(model)
                    if p.get("effort") and not st.t.get("reasoning_effort"):
                        st.t["reasoning_effort"] = p.get("effort")
                elif typ == "compacted":
                    st.steps.append(
                        {
                            "kind": "compaction",
                            "role": "system",
                            "text": p.get("message"),
                            "timestamp": ts,
                            "source_line": line,
                        }
                    )
            except BAD_SHAPE as e:  # a field of the wrong type: quarantine the line, undo its steps
                rollback(st.steps, [st.link], n)
                ctx.reject_line(
                    path, line, off, raw, f"line {line}: malformed {typ} line ({type(e).__name__}: {e})"
                )
        if ctx.records_ingested == 0:
            return
        yield self._finish(st)

    # -- lines -----------------------------------------------------------------------------------

    def _session_meta(self, st: _State, p: dict[str, Any], ts: Any, line: int | None) -> None:
        st.native = p.get("id") or st.native
        t = st.t
        t["runner_version"] = p.get("cli_version")
        t["started_at"] = p.get("timestamp") or ts
        origin = p.get("originator") or ""
        t["harness"] = "codex-exec" if "exec" in origin else "codex-cli"
        st.meta = {k: p[k] for k in ("cwd", "originator", "source", "model_provider") if p.get(k) is not None}
        if isinstance(p.get("git"), dict):
            st.meta["git"] = p["git"]
        instr = p.get("base_instructions") or p.get("instructions")
        text = instr.get("text") if isinstance(instr, dict) else instr
        if text:
            st.steps.append(
                {"kind": "system", "role": "system", "text": text, "timestamp": ts, "source_line": line}
            )

    def _event(self, st: _State, p: dict[str, Any], ts: Any, line: int | None) -> None:
        et = p.get("type")
        if et == "token_count":
            info = p.get("info")
            if isinstance(info, dict):
                total = info.get("total_token_usage")
                if isinstance(total, dict) and total and total != st.last_usage:  # often emitted twice
                    st.last_usage = total
                    lt = info.get("last_token_usage") or {}
                    step = st.model_step
                    if step is not None and lt:
                        step["input_tokens"] = lt.get("input_tokens")
                        step["output_tokens"] = lt.get("output_tokens")
                        step["reasoning_tokens"] = lt.get("reasoning_output_tokens")
                        step["cached_tokens"] = lt.get("cached_input_tokens")
                        st.model_step = None
        elif et == "exec_command_end":
            self._exec_end(st, p)
        elif et == "patch_apply_end":
            step = st.link.get(p.get("call_id"))
            if step is not None:
                if p.get("success") is False:
                    step["is_error"] = True
                if p.get("stderr"):
                    step["stderr"] = p["stderr"]
                if isinstance(p.get("changes"), dict):
                    step["metadata"] = {**(step.get("metadata") or {}), "changes": sorted(p["changes"])}
        elif et == "web_search_end":
            if p.get("call_id"):
                st.search_ids[p.get("query") or ""] = p["call_id"]
        elif et == "user_message" or et == "agent_message":
            msg = p.get("message")
            if msg:
                role = "user" if et == "user_message" else "assistant"
                st.steps.append(
                    {
                        "kind": role,
                        "role": role,
                        "text": msg,
                        "timestamp": ts,
                        "source_line": line,
                        "_event": True,
                    }
                )
                if role == "user" and st.event_task is None:
                    st.event_task = msg
        elif et == "task_complete":
            st.t["exit_status"] = "completed"
            if p.get("last_agent_message"):
                st.t["final_answer"] = p["last_agent_message"]
        elif et == "turn_aborted":
            st.anomalies.append(f"turn aborted ({p.get('reason')})")
            st.t["exit_status"] = "aborted"
        elif et == "error":
            st.steps.append(
                {
                    "kind": "system",
                    "role": "error",
                    "text": p.get("message"),
                    "is_error": True,
                    "timestamp": ts,
                    "source_line": line,
                }
            )

    def _exec_end(self, st: _State, p: dict[str, Any]) -> None:
        """Kept aside and applied at the end: it may come before or after the call's output item."""
        cid = p.get("call_id")
        step = st.link.get(cid)
        if step is None:
            st.anomalies.append(f"exec_command_end without call {cid}")
            return
        step["_exec_end"] = p

    @staticmethod
    def _apply_exec_end(step: dict[str, Any]) -> None:
        p = step.pop("_exec_end")
        code = p.get("exit_code")
        dur = p.get("duration")
        if isinstance(dur, dict):
            secs, nanos = dur.get("secs") or 0, dur.get("nanos") or 0
            if _is_number(secs) and _is_number(nanos):  # else damaged: no duration
                step["duration_s"] = secs + nanos / 1e9
        if code is not None:
            step["exit_code"] = code
        if (code not in (0, None)) or p.get("status") in ("failed", "declined"):
            step["is_error"] = True
        if code == 124 or p.get("status") == "timed_out":
            step["timed_out"] = True
        if p.get("stderr") and not step.get("stderr"):
            step["stderr"] = p["stderr"]
        if not step.get("output") and p.get("aggregated_output"):
            step["output"] = p["aggregated_output"]
        step["_has_result"] = True

    def _item(self, st: _State, p: dict[str, Any], ts: Any, line: int | None) -> None:
        it = p.get("type")
        steps = st.steps
        if it in _OUTPUT_TYPES:
            self._output(st, p, ts, line)
        elif it in _CALL_TYPES:
            st.model_step = self._call(st, p, it, ts, line)
        elif it == "reasoning":
            summary = p.get("summary") or []
            text = "\n".join(x.get("text", "") for x in summary if isinstance(x, dict)) or as_text(
                p.get("content")
            )
            s: dict[str, Any] = {
                "kind": "reasoning",
                "role": "assistant",
                "text": text or None,
                "timestamp": ts,
                "source_line": line,
            }
            if p.get("encrypted_content"):
                s["metadata"] = {"encrypted": True}
            steps.append(s)
            st.model_step = s
        elif it == "message":
            role = p.get("role")
            text = as_text(p.get("content"))
            if role == "assistant":
                st.item_roles.add("assistant")
                s = {"kind": "assistant", "role": role, "text": text, "timestamp": ts, "source_line": line}
                if p.get("phase"):
                    s["metadata"] = {"phase": p["phase"]}
                    if p["phase"] == "final_answer":
                        st.t["final_answer"] = text
                steps.append(s)
                st.model_step = s
                return
            injected = role in ("developer", "system") or bool(text and _is_injected(text))
            kind = "system" if injected else "user"
            if kind == "user":
                st.item_roles.add("user")
                if not st.t.get("task") and text:
                    st.t["task"] = text
            steps.append({"kind": kind, "role": role, "text": text, "timestamp": ts, "source_line": line})
        elif it == "web_search_call":
            action = p.get("action") or {}
            q = action.get("query") if isinstance(action, dict) else None
            s = {
                "kind": "tool_call",
                "role": "assistant",
                "tool_name": "web_search",
                "arguments": action,
                "call_id": st.search_ids.pop(q or "", None) or p.get("id"),
                "timestamp": ts,
                "source_line": line,
                "_has_result": True,  # Codex does not log web search results
                "is_error": p.get("status") == "failed",
            }
            st.link.call(s)
            st.model_step = s

    def _call(self, st: _State, p: dict[str, Any], it: str, ts: Any, line: int | None) -> dict[str, Any]:
        name = p.get("name") or ("shell" if it == "local_shell_call" else None)
        if p.get("namespace") and name:
            name = f"{p['namespace']}{name}"  # MCP tools: mcp__server__tool, as Claude Code names them
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
            origin = st.sessions.get(sid) if sid else None
            chars = args.get("chars") if isinstance(args, dict) else None
            s["tool"] = "write_stdin" if chars else "poll"
            if origin is not None:
                s["modality"] = origin.get("modality")
                s["programs"] = origin.get("programs") or []
                s["metadata"] = {"polls": origin.get("call_id"), "session_id": sid}
            else:
                s["modality"] = "compute"
        else:
            info = normalize_call(name, raw_args)
            s["tool"], s["programs"], s["modality"] = info.tool, list(info.programs), info.modality
            s["command"] = info.command
        if it == "local_shell_call" and p.get("status"):
            s["_has_result"] = p.get("status") == "completed"
        st.link.call(s)
        return s

    def _output(self, st: _State, p: dict[str, Any], ts: Any, line: int | None) -> None:
        cid = p.get("call_id")
        text, code, dur, session = _unwrap_output(p.get("output"))
        fields: dict[str, Any] = {"output": text, "duration_s": dur}
        step = st.link.get(cid)
        origin = None
        if step is not None and step.get("tool") == "poll":
            origin = st.link.get((step.get("metadata") or {}).get("polls"))
        if code is not None:
            fields["exit_code"] = code
            if origin is not None:
                # A poll observes the exit of the command it polls: the command is what failed.
                if origin.get("exit_code") is None:
                    origin["exit_code"] = code
                if code != 0:
                    origin["is_error"] = True
            elif code != 0:
                fields["is_error"] = True
        elif session is None and type(text) is str and _REFUSED.match(text):
            fields["is_error"] = True
        if step is not None and session is not None and step.get("tool") not in ("poll", "write_stdin"):
            st.sessions[session] = step
            md = step.get("metadata") or {}
            step["metadata"] = {**md, "session_id": session}
        st.link.result(cid, orphan={"timestamp": ts, "source_line": line}, **fields)

    # -- end of file -------------------------------------------------------------------------------

    def _finish(self, st: _State) -> ParsedTrajectory:
        t = st.t
        # Event copies of messages only stand in for a role with no response-item message.
        steps = [s for s in st.steps if not (s.pop("_event", False) and s["kind"] in st.item_roles)]
        if not t.get("task"):
            t["task"] = st.event_task
        if st.last_usage:
            u = st.last_usage
            t["input_tokens"] = u.get("input_tokens")
            t["output_tokens"] = u.get("output_tokens")
            t["reasoning_tokens"] = u.get("reasoning_output_tokens")
            t["cached_tokens"] = u.get("cached_input_tokens")
            t["total_tokens"] = u.get("total_tokens")
        for s in st.link.by_id.values():
            if "_exec_end" in s:
                self._apply_exec_end(s)
        for s in st.link.unresolved():
            st.anomalies.append(f"call without result {s.get('call_id')}")
        if not t.get("final_answer"):
            t["final_answer"] = next((s.get("text") for s in steps[::-1] if s["kind"] == "assistant"), None)
        t["model"] = st.models[-1] if st.models else None
        if len(st.models) > 1:
            st.meta["models"] = st.models
        t["metadata"] = st.meta or None
        t["anomalies"] = st.anomalies
        return ParsedTrajectory(t, steps, native_key=st.native)


def _is_number(v: Any) -> bool:
    return type(v) in (int, float)
