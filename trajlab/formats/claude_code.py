"""Claude Code session transcripts (`~/.claude/projects/<cwd>/<sessionId>.jsonl`).

One API response is split into one line per content block; the lines share `message.id`, and each
repeats `usage`, so tokens are counted once per message id. Sub-agents live in
`<sessionId>/subagents/agent-<agentId>.jsonl` (2.1.x; read as companions and spliced in after the
Task call that spawned them) or only as `agent_progress` lines in the main file (older versions).
A sub-agent file is linked to its Task call by `toolUseResult.agentId` on the call's result, else by the
call's `agent_progress` lines (`parentToolUseID` = the Task call id, `data.agentId` = the agent).
Compaction is a `compact_boundary` line followed by a user line with `isCompactSummary`; the
compaction agent's own transcript (`agent-acompact-*.jsonl`) is placed just before it.
A message whose `parentUuid` is neither the previous message nor the line just before it (progress lines
are links of the chain too) starts a branch (a rewind, a retry): it keeps `metadata.{uuid, parent_uuid}`.
There is no success signal: the outcome is `unknown`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mypy_extensions import mypyc_attr

from ._base import (
    Adapter,
    CallLinker,
    ParseContext,
    ParsedTrajectory,
    SourceUnit,
    as_text,
    first_json_line,
)
from ._read import json_objects, read_jsonl_lines
from ._safe import BAD_SHAPE, as_int, raw_of_obj, rollback
from ._scan import through_last
from ._typed import text_of

_LINE_TYPES = {
    "user",
    "assistant",
    "system",
    "summary",
    "progress",
    "file-history-snapshot",
    "queue-operation",
}
_EXIT_RE = re.compile(r"^Exit code (-?\d+)")
_NOISE_PREFIXES = (
    "<command-name>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<command-message>",
    "<task-notification>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted",
    "Caveat:",
)
_SLASH_NAME = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_SLASH_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_SUBAGENT_TOOLS = {"Task", "Agent"}


def _usage_tokens(usage: dict[str, Any]) -> dict[str, int | None]:
    # counts that are not integers (damaged lines) count as absent instead of breaking the sum
    inp = as_int(usage.get("input_tokens")) or 0
    cc = as_int(usage.get("cache_creation_input_tokens")) or 0
    cr = as_int(usage.get("cache_read_input_tokens")) or 0
    out = as_int(usage.get("output_tokens"))
    return {"input_tokens": inp + cc + cr, "output_tokens": out, "cached_tokens": cr}


def _slash_prompt(text: str) -> str | None:
    """`/cmd args` for a slash-command message that carries arguments (the user's real request)."""
    if "<command-name>" not in text[:400]:
        return None
    args = _SLASH_ARGS.search(text, 0, through_last(text, "</command-args>"))
    if not args or not args.group(1).strip():
        return None
    name = _SLASH_NAME.search(text, 0, through_last(text, "</command-name>"))
    return f"{name.group(1) if name else ''} {args.group(1).strip()}".strip()


def _user_kind(text: str, is_meta: bool) -> tuple[str, str]:
    """(kind, text) of a plain user message: harness noise is `system`; slash commands keep their args."""
    prompt = _slash_prompt(text)
    if prompt is not None:
        return "user", prompt
    if is_meta or text.lstrip().startswith(_NOISE_PREFIXES):
        return "system", text
    return "user", text


class _Transcript:
    """Steps of one transcript file (the main session or one sub-agent)."""

    def __init__(self, agent_id: str, depth: int):
        self.agent_id = agent_id
        self.depth = depth
        self.steps: list[dict[str, Any]] = []
        self.anomalies: list[str] = []
        self.link = CallLinker(self.steps, self.anomalies)
        self.usage_step: dict[str, dict[str, Any]] = {}  # message id -> step that carries its tokens
        self.usage: dict[str, dict[str, int | None]] = {}  # message id -> latest token counts
        self.models: list[str] = []
        self.task: str | None = None
        self.meta: dict[str, Any] = {}
        self.version: str | None = None
        self.session_id: str | None = None
        self.spawned: dict[str, Any] = {}  # agentId -> spawning call id (as the transcript wrote it)
        # parent tool use id -> embedded sub-agent lines (line number, message), deduplicated by uuid
        self.progress: dict[Any, list[tuple[int | None, dict[str, Any]]]] = {}
        self.progress_seen: set[str] = set()
        self.progress_agent: dict[Any, str] = {}  # parent tool use id (any JSON value) -> agentId
        self.last_uuid: str | None = None
        self.last_line_uuid: str | None = None  # of the last line of any type, progress lines too
        self.pending_compaction: dict[str, Any] | None = None
        self.last_ts: Any = None


def _relative(path: Path, base: Path) -> str:
    """`path` relative to `base` when below it (`<session>/subagents/agent-x.jsonl`), else its name."""
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.name


@mypyc_attr(allow_interpreted_subclasses=True)  # plugins may extend it
class ClaudeCodeAdapter(Adapter):
    name = "claude-code"
    runner = "claude_code"
    extensions = (".jsonl",)
    priority = 20
    version = 3  # 2: a message whose parent is a progress line follows on from it (no branch); 3: a
    # sub-agent transcript's steps name their file (`metadata.source_file`): `source_line` is a line of it
    description = "Claude Code transcripts (~/.claude/projects/**/<session>.jsonl, subagents/agent-*.jsonl)"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        # the first line with a `type` decides (a damaged first line is quarantined by the reader)
        for first in json_objects(head_bytes):
            typ = first.get("type")
            if not isinstance(typ, str):
                continue
            if typ not in _LINE_TYPES:
                return False
            if "sessionId" in first or "leafUuid" in first or "messageId" in first or "uuid" in first:
                return True
        return False

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        first = first_json_line(head_bytes)
        if first is None:
            return "first line is not a JSON object"
        return f"first line type={first.get('type')!r} without sessionId/uuid"

    def companions(self, path: Path) -> list[Path]:
        sub = path.parent / path.stem / "subagents"
        if sub.is_dir():
            return sorted(sub.glob("agent-*.jsonl"))
        return []

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        is_subagent_file = unit.primary.parent.name == "subagents" and unit.primary.name.startswith("agent-")
        main_agent = unit.primary.stem.removeprefix("agent-") if is_subagent_file else "main"
        main = _Transcript(main_agent, 0)
        self._read(unit.primary, ctx, main)
        if ctx.records_ingested == 0:
            return
        subs: dict[str, _Transcript] = {}
        for comp in unit.companions:
            aid = comp.stem.removeprefix("agent-")
            tr = _Transcript(aid, 1)
            self._read(comp, ctx, tr)
            # `source_line` of these steps counts lines of the sub-agent's file, not of the session's
            where = _relative(comp, unit.primary.parent)
            for st in tr.steps:
                md = st.get("metadata")
                if md is None or type(md) is dict:
                    st["metadata"] = {**(md or {}), "source_file": where}
            subs[aid] = tr
        anomalies = list(main.anomalies)
        for tr in subs.values():
            anomalies += [f"sub-agent {tr.agent_id}: {a}" for a in tr.anomalies]
        # Sub-agents known only from agent_progress lines (no transcript file, older versions).
        with_file = set(subs)  # these have their messages in their own file: their progress lines repeat them
        for parent_call, lines in main.progress.items():
            aid = main.progress_agent.get(parent_call) or f"task-{str(parent_call)[-8:]}"
            if aid in with_file:
                # the progress lines still link the file to its Task call when the result has no
                # `toolUseResult.agentId` (older versions, a truncated result, a run cut off before it);
                # the result's agentId, read first, keeps priority
                main.spawned.setdefault(aid, parent_call)
                continue
            if aid in subs:  # another call's progress lines already named this agent (a reused or damaged id)
                anomalies.append(f"agent_progress of call {parent_call} names agent {aid} again; kept apart")
                aid = f"{aid}-{str(parent_call)[-8:]}"
            tr = _Transcript(aid, 1)
            for line, obj in lines:
                self._progress_message(unit.primary, ctx, line, obj, tr)
            subs[aid] = tr
            main.spawned.setdefault(aid, parent_call)
        steps = self._splice(main, subs, anomalies)
        if is_subagent_file:
            anomalies.append("sub-agent transcript ingested on its own: parent session file not found")
        models = main.models or [m for tr in subs.values() for m in tr.models]
        final = next(
            (
                s.get("text")
                for s in steps[::-1]
                if s.get("kind") == "assistant" and s.get("agent_id") == main.agent_id
            ),
            None,
        )
        t: dict[str, Any] = {
            "harness": "claude-code",
            "runner_version": main.version,
            "model": models[0] if models else None,
            "task": main.task,
            "final_answer": final,
            "anomalies": anomalies,
            "metadata": {**main.meta, **({"models": models} if len(set(models)) > 1 else {})} or None,
        }
        # Token totals: once per API response (message id), over the session and its sub-agents.
        usages = [u for tr in (main, *subs.values()) for u in tr.usage.values()]
        if usages:
            for k in ("input_tokens", "output_tokens", "cached_tokens"):
                t[k] = sum(u.get(k) or 0 for u in usages)
        native = main.session_id or unit.primary.stem
        if is_subagent_file:
            native = f"{native}/{main_agent}"
        yield ParsedTrajectory(t, steps, native_key=native)

    # -- reading ------------------------------------------------------------------------------

    def _read(self, path: Path, ctx: ParseContext, tr: _Transcript) -> None:
        steps = tr.steps
        line_of = self._line
        for d, line, off, raw in read_jsonl_lines(path, ctx):
            if type(d) is not dict or type(d.get("type")) is not str:
                ctx.reject_line(
                    path, line, off, raw, f"{path.name} line {line}: not a transcript line (no `type`)"
                )
                continue
            n = len(steps)
            try:
                why = line_of(d, line, tr)
            except BAD_SHAPE as e:  # a field of the wrong type: quarantine the line, undo its steps
                rollback(steps, [tr.link], n)
                why = f"malformed {str(d.get('type'))[:40]!r} line ({type(e).__name__}: {e})"
            if why:
                ctx.reject_line(path, line, off, raw, f"{path.name} line {line}: {why}")

    def _progress_message(
        self, path: Path, ctx: ParseContext, line: int | None, obj: dict[str, Any], tr: _Transcript
    ) -> None:
        """Replay a sub-agent message embedded in an agent_progress line; one that cannot be used is
        quarantined with its line (it was counted as ingested when the line was read)."""
        n = len(tr.steps)
        try:
            why = self._line(obj, line, tr) if isinstance(obj.get("type"), str) else "message without a type"
        except BAD_SHAPE as e:  # was raised out of the adapter: the whole session was lost
            rollback(tr.steps, [tr.link], n)
            why = f"malformed message ({type(e).__name__}: {e})"
        if why:
            reason = f"{path.name} line {line}: agent_progress {why}"
            ctx.quarantine(path, reason, "schema", raw_of_obj(obj), line, counted=True)

    def _line(self, d: dict[str, Any], line: int | None, tr: _Transcript) -> str | None:
        """Read one transcript line into `tr`; the reason when the line cannot be used."""
        typ = d.get("type")
        if typ == "progress":
            if isinstance(d.get("uuid"), str):
                # the main thread's chain runs through progress lines: a message whose parent is one
                # follows on from it, no branch
                tr.last_line_uuid = d["uuid"]
            data = d.get("data")
            if not isinstance(data, dict):
                return "progress line without a `data` object"
            if data.get("type") == "agent_progress":
                msg = data.get("message")
                parent = d.get("parentToolUseID") or data.get("parentToolUseID")
                if not isinstance(msg, dict) or not parent:
                    return "agent_progress line without a message object or parentToolUseID"
                key = msg.get("uuid") or str(line)
                if key not in tr.progress_seen:
                    tr.progress_seen.add(key)
                    tr.progress.setdefault(parent, []).append((line, msg))
                if data.get("agentId"):
                    tr.progress_agent[parent] = str(data["agentId"])
            return None
        if typ in ("file-history-snapshot", "queue-operation", "summary"):
            if typ == "summary" and d.get("summary"):
                tr.meta.setdefault("title", d["summary"])
            return None
        ts = d.get("timestamp")
        if tr.session_id is None:
            tr.session_id = d.get("sessionId")
        if tr.version is None and d.get("version"):
            tr.version = d["version"]
            tr.meta = {k: d[k] for k in ("cwd", "gitBranch", "slug") if d.get(k)}
        uuid = d.get("uuid")
        parent = d.get("parentUuid")
        base: dict[str, Any] = {
            "agent_id": tr.agent_id,
            "depth": tr.depth,
            "timestamp": ts,
            "source_line": line,
        }
        if (
            parent
            and tr.last_uuid
            and parent != tr.last_uuid
            and parent != tr.last_line_uuid
            and typ in ("user", "assistant")
        ):
            base["metadata"] = {"uuid": uuid, "parent_uuid": parent}  # a branch (rewind, retry)
        if uuid:
            tr.last_uuid = tr.last_line_uuid = uuid
        if typ == "system":
            if not isinstance(d.get("subtype"), str):  # was counted as ingested and dropped
                return "system line without a subtype"
            self._system(d, base, tr)
            return None
        msg = d.get("message")
        if typ not in ("assistant", "user"):
            return None  # other line types carry nothing for the trajectory
        if not isinstance(msg, dict):
            return f"{typ} line whose `message` is not an object"
        if typ == "assistant":
            n = len(tr.steps)
            damaged = self._assistant(msg, base, tr)
            if damaged and len(tr.steps) == n:  # nothing usable in it: quarantined, not dropped
                if msg.get("content") is None:
                    return "assistant message without content"
                return f"assistant message with {damaged} unreadable content block(s) and nothing else"
            return None
        return self._user(d, msg, base, tr)

    def _system(self, d: dict[str, Any], base: dict[str, Any], tr: _Transcript) -> None:
        sub = d.get("subtype")
        if sub == "compact_boundary":
            step = {
                **base,
                "kind": "compaction",
                "role": "system",
                "text": d.get("content"),
                "metadata": d.get("compactMetadata") or {},
            }
            tr.steps.append(step)
            tr.pending_compaction = step
        elif sub == "api_error":
            text = as_text(d.get("content")) or str(d.get("error"))
            tr.steps.append({**base, "kind": "system", "role": "api_error", "text": text, "is_error": True})
        elif sub == "local_command":
            tr.steps.append(
                {**base, "kind": "system", "role": "local_command", "text": as_text(d.get("content"))}
            )

    def _assistant(self, msg: dict[str, Any], base: dict[str, Any], tr: _Transcript) -> int:
        """Steps of an assistant message; returns the number of damaged blocks (no object, no type,
        a text block without text)."""
        damaged = 0
        mid = msg.get("id")
        model = msg.get("model")
        if model is not None and type(model) is not str:  # damaged input: kept as text
            model = text_of(model)
        if model and model != "<synthetic>" and model not in tr.models:
            tr.models.append(model)
        usage = msg.get("usage")
        tokens = _usage_tokens(usage) if isinstance(usage, dict) else None
        if tokens is not None and mid:
            # Each line of a split response repeats `usage`; the last one has the final output count.
            prev = tr.usage.get(mid)
            if prev is None or (tokens["output_tokens"] or 0) >= (prev["output_tokens"] or 0):
                tr.usage[mid] = tokens
                owner = tr.usage_step.get(mid)
                if owner is not None:
                    owner.update(tokens)
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": as_text(content)}]
        for b in blocks:
            if not isinstance(b, dict) or not isinstance(b.get("type"), str):
                damaged += 1
                continue
            bt = b.get("type")
            if bt == "text":
                text = b.get("text")
                if not isinstance(text, str):
                    damaged += 1
                    continue
                if not text.strip():
                    continue  # whitespace-only blocks carry nothing but the repeated usage
                step = {**base, "kind": "assistant", "role": "assistant", "text": text}
                tr.steps.append(step)
            elif bt in ("thinking", "redacted_thinking"):
                step = {**base, "kind": "reasoning", "role": "assistant", "text": b.get("thinking")}
                tr.steps.append(step)
            elif bt in ("tool_use", "server_tool_use"):
                step = {
                    **base,
                    "kind": "tool_call",
                    "role": "assistant",
                    "tool_name": b.get("name"),
                    "arguments": b.get("input"),
                    "call_id": b.get("id"),
                }
                if b.get("name") in _SUBAGENT_TOOLS:
                    step["tool"] = "subagent"
                    step["modality"] = "compute"
                tr.link.call(step)
            elif bt == "web_search_tool_result":  # a server tool's result inside the response
                tr.link.result(b.get("tool_use_id"), orphan={**base}, output=as_text(b.get("content")))
                continue
            else:
                continue
            if model and model != "<synthetic>" and tr.depth:
                # a sub-agent may run on another model than the session (Task `model: haiku`...)
                step["model"] = model
            if mid and tokens is not None and mid not in tr.usage_step:
                tr.usage_step[mid] = step
                step.update(tr.usage[mid])
        return damaged

    def _user(
        self, d: dict[str, Any], msg: dict[str, Any], base: dict[str, Any], tr: _Transcript
    ) -> str | None:
        content = msg.get("content")
        if not isinstance(content, (str, list)):
            return f"user message whose content is {type(content).__name__}, not text or blocks"
        if isinstance(content, str) or (
            isinstance(content, list)
            and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        ):
            text = as_text(content) or ""
            if d.get("isCompactSummary"):
                if tr.pending_compaction is not None and not tr.pending_compaction.get("_summary"):
                    tr.pending_compaction["text"] = text
                    tr.pending_compaction["_summary"] = True
                else:
                    tr.steps.append({**base, "kind": "compaction", "role": "user", "text": text})
                return None
            kind, text = _user_kind(text, bool(d.get("isMeta")))
            tr.steps.append({**base, "kind": kind, "role": "user", "text": text})
            if kind == "user" and tr.task is None:
                tr.task = text
            return None
        tur = d.get("toolUseResult")
        for b in content:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_result":
                cid = b.get("tool_use_id")
                out = as_text(b.get("content"))
                is_err = bool(b.get("is_error"))
                fields: dict[str, Any] = {"output": out, "is_error": is_err}
                if isinstance(tur, dict):
                    if tur.get("stderr"):
                        fields["stderr"] = tur["stderr"]
                    if tur.get("interrupted"):
                        fields["timed_out"] = True
                    if tur.get("agentId") and isinstance(cid, str):
                        tr.spawned[str(tur["agentId"])] = cid
                    dur = tur.get("durationMs") or tur.get("totalDurationMs")
                    if isinstance(dur, (int, float)):
                        fields["duration_s"] = dur / 1000.0
                if out and is_err:
                    m = _EXIT_RE.match(out)
                    if m:
                        fields["exit_code"] = int(m.group(1))
                    if "timed out" in out[:200].lower():
                        fields["timed_out"] = True
                tr.link.result(cid, orphan={**base}, **fields)
            elif b.get("type") == "text" and b.get("text"):
                kind, text = _user_kind(b["text"], bool(d.get("isMeta")))
                tr.steps.append({**base, "kind": kind, "role": "user", "text": text})
                if kind == "user" and tr.task is None:
                    tr.task = text
        return None

    # -- splicing sub-agents ----------------------------------------------------------------------

    def _splice(
        self, main: _Transcript, subs: dict[str, _Transcript], anomalies: list[str]
    ) -> list[dict[str, Any]]:
        spawned = dict(main.spawned)
        for tr in subs.values():
            spawned.update(tr.spawned)
        by_call: dict[str, list[str]] = {}
        for aid, cid in spawned.items():
            if aid in subs:
                by_call.setdefault(cid, []).append(aid)
        placed: set[str] = set()
        compaction_agents = [aid for aid in subs if aid.startswith("acompact")]

        def emit(
            tr: _Transcript, depth: int, out: list[dict[str, Any]], parent: dict[str, Any] | None
        ) -> None:
            compactions = {id(s) for s in tr.steps if s.get("kind") == "compaction"} if tr is main else set()
            for s in tr.steps:
                s.pop("_summary", None)
                if id(s) in compactions and compaction_agents:
                    aid = compaction_agents.pop(0)
                    placed.add(aid)
                    for cs in subs[aid].steps:
                        cs["depth"] = depth + 1
                        cs["_parent"] = s
                        cs["metadata"] = {**(cs.get("metadata") or {}), "compaction_agent": True}
                        out.append(cs)
                s["depth"] = depth
                if parent is not None:
                    s["_parent"] = parent
                out.append(s)
                cid = s.get("call_id") if s.get("kind") == "tool_call" else None
                for aid in by_call.get(cid or "", []):
                    if aid not in placed:
                        placed.add(aid)
                        emit(subs[aid], depth + 1, out, s)

        out: list[dict[str, Any]] = []
        emit(main, 0, out, None)
        for aid, tr in subs.items():
            if aid not in placed:
                anomalies.append(f"sub-agent {aid} has no spawning call in the session")
                emit(tr, 1, out, None)
        for s in out:
            if s.get("kind") == "tool_call" and not s.get("_has_result"):
                anomalies.append(f"call without result {s.get('call_id')}")
        return out
