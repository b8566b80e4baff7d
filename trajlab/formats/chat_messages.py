"""Chat-completions message lists: SFT/eval dataset rows, one trajectory per row.

A file is a JSON list of rows, one row object, JSONL rows, or a bare list of messages (one
conversation). A row holds its messages under `messages` (OpenAI: SWE-Gym, SWE-smith),
`conversations` (ShareGPT `{from, value}`, Harbor traces export) or `trajectory` (nebius
SWE-agent `{role, text}`), plus row fields mapped to the trajectory: `resolved`/`target`/
`is_correct`/`success` (bool) or `reward`/`score` (number) -> outcome, `instance_id` -> task id,
`model`/`model_name` -> model, patches and test logs -> metadata.

Roles are normalised (`ai`/`gpt`/`model` -> assistant, `human` -> user, `function`/`observation`
-> tool, `developer` -> system); text is `content`, `text` or `value`. Structured `tool_calls` link
to `tool` messages by `tool_call_id`; a legacy `function_call` links to the next function message.
Actions embedded in assistant text are parsed into calls when a row has none: SWE-smith
`<function=name><parameter=p>v</parameter></function>`, Terminus JSON `{"commands":
[{"keystrokes"}]}` and (SWE-agent rows) the last fenced code block; the next user/tool message is
their observation. `<think>` blocks become reasoning steps.

Harbor traces exports hold one row per episode, each repeating the conversation so far: the rows
of one trial (`run_id`, `trial_name`) are grouped and their new messages appended in episode order.
Files named `*.traj.json` belong to the mini-swe-agent adapter and are never claimed here.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._base import (
    Adapter,
    CallLinker,
    ParseContext,
    ParsedTrajectory,
    Record,
    SourceUnit,
    as_text,
    json_records,
    load_json,
    parse_args,
    read_jsonl,
)
from ._finish import outcome_from_reward
from ._harbor_trial import terminus_task
from ._read import json_objects
from ._safe import raw_of_obj
from ._scan import through_last
from ._typed import typed_rows

_MSG_KEYS = ("messages", "conversations", "conversation", "trajectory")
_ROLES = {
    "assistant": "assistant",
    "ai": "assistant",
    "gpt": "assistant",
    "model": "assistant",
    "bot": "assistant",
    "chatbot": "assistant",
    "function_call": "assistant",
    "user": "user",
    "human": "user",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
    "observation": "tool",
    "environment": "tool",
}
_OUTCOME_BOOL = ("resolved", "target", "is_resolved", "is_correct", "correct", "success", "solved", "passed")
_MAPPED = {
    *_MSG_KEYS,
    "instance_id",
    "task_id",
    "model",
    "model_name",
    "model_name_or_path",
    "agent",
    "exit_status",
}
_THINK_RE = re.compile(r"<think>(.*?)</think>", re.S)
_FUNC_RE = re.compile(r"<function=([\w.\-]+)>(.*?)(?:</function>|$)", re.S)
_PARAM_RE = re.compile(r"<parameter=([\w.\-]+)>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.S)
_FENCE_RE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)
_EXIT_RES = (
    re.compile(r"\[Command finished with exit code (-?\d+)\]"),
    re.compile(r"\[The command completed with exit code (-?\d+)\.?\]"),
    re.compile(r"<returncode>(-?\d+)</returncode>"),
    re.compile(r"^Exit code:? (-?\d+)", re.M),
)
_SWE_AGENT_CMDS = {
    "open",
    "goto",
    "scroll_down",
    "scroll_up",
    "create",
    "edit",
    "search_dir",
    "search_file",
    "find_file",
    "submit",
}


def _sid(v: Any) -> str | None:
    """An id usable as a key: strings and integers only."""
    if isinstance(v, str) and v:
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return None


def _looks_like_message(d: Any) -> bool:
    return (
        isinstance(d, dict)
        and ("role" in d or "from" in d)
        and any(k in d for k in ("content", "text", "value", "tool_calls", "function_call"))
    )


def _messages_of(row: Any) -> tuple[str, list[Any]] | None:
    if not isinstance(row, dict):
        return None
    for k in _MSG_KEYS:
        v = row.get(k)
        if isinstance(v, list) and v and _looks_like_message(v[0]):
            return k, v
    return None


_ROLE_RE = re.compile(r'"(role|from)"\s*:\s*"(user|assistant|system|human|gpt|ai|tool|developer)"')
_KEY_RE = re.compile(r'"(messages|conversations|conversation|trajectory)"\s*:\s*\[\s*')


def _depths(text: str, positions: Iterator[int]) -> Iterator[tuple[int, int]]:
    """(position, JSON nesting depth there) for increasing positions, in one pass over the text."""
    depth, i = 0, 0
    in_str = esc = False
    for pos in positions:
        for ch in text[i:pos]:
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
        i = pos
        yield pos, depth


def _first_element(text: str, at: int) -> Any:
    """Decode the JSON value starting at `text[at]` (a list's first element) or None."""
    try:
        return json.JSONDecoder().raw_decode(text, at)[0]
    except (json.JSONDecodeError, RecursionError):
        return None


def _is_harbor_episode(row: dict[str, Any]) -> bool:
    return (
        "episode" in row
        and isinstance(row.get("conversations"), list)
        and ("trial_name" in row or "run_id" in row)
    )


def _episode_no(row: dict[str, Any]) -> int:
    m = re.search(r"(\d+)", str(row.get("episode") or ""))
    return int(m.group(1)) if m else 0


def _msg_text(m: dict[str, Any]) -> str | None:
    for k in ("content", "text", "value"):
        if k in m and m[k] is not None:
            return as_text(m[k])
    return None


def _exit_code(text: str) -> int | None:
    for rx in _EXIT_RES:
        m = rx.search(text[-600:]) or rx.search(text[:600])
        if m:
            return int(m.group(1))
    return None


def _terminus_json(text: str) -> dict[str, Any] | None:
    """The Terminus response object (`analysis`/`plan`/`commands`) embedded in assistant text."""
    if '"commands"' not in text and '"task_complete"' not in text:
        return None
    dec = json.JSONDecoder()
    start = 0
    for _ in range(50):
        i = text.find("{", start)
        if i < 0:
            return None
        try:
            obj, _end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            start = i + 1
            continue
        if isinstance(obj, dict) and ("commands" in obj or "task_complete" in obj):
            return obj
        start = i + 1
    return None


def _outcome(row: dict[str, Any]) -> tuple[str, float | None, str | None]:
    for k in _OUTCOME_BOOL:
        v = row.get(k)
        if isinstance(v, bool):
            return ("success" if v else "failure"), (1.0 if v else 0.0), k
    for k in ("reward", "score"):
        v = row.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return outcome_from_reward(float(v)), float(v), k
    res = row.get("result")
    if isinstance(res, bool):
        return ("success" if res else "failure"), (1.0 if res else 0.0), "result"
    if isinstance(res, (int, float)):
        return outcome_from_reward(float(res)), float(res), "result"
    if isinstance(res, dict):
        r = res.get("reward")
        if r is None and isinstance(res.get("verifier_result"), dict):
            r = (res["verifier_result"].get("rewards") or {}).get("reward")
        if isinstance(r, (int, float)) and not isinstance(r, bool):
            return outcome_from_reward(float(r)), float(r), "result.reward"
    return "unknown", None, None


class _Conversation:
    """Turns one message list into steps, linking tool results to their calls."""

    def __init__(self, style: str):
        self.style = style
        self.steps: list[dict[str, Any]] = []
        self.anomalies: list[str] = []
        self.link = CallLinker(self.steps, self.anomalies)
        self.fifo: list[dict[str, Any]] = []  # calls without ids, waiting for a tool message
        self.text_calls: list[dict[str, Any]] = []  # calls parsed from text, waiting for an observation
        self.task: str | None = None
        self.embedded = 0
        self.embedded_kinds: set[str] = set()

    def add(self, i: int, m: Any) -> None:
        if not isinstance(m, dict):
            self.anomalies.append(f"message {i} is not an object")
            return
        raw_role = str(m.get("role") or m.get("from") or "").lower()
        role = _ROLES.get(raw_role)
        text = _msg_text(m)
        base: dict[str, Any] = {"role": raw_role or None, "source_line": i}
        if role is None:
            self.anomalies.append(f"message {i}: unknown role {raw_role!r} stored as system")
            role = "system"
        if raw_role == "function_call" and text:  # ShareGPT function-calling datasets
            m = {**m, "function_call": parse_args(text)}
            text = None
        if role == "system":
            self.steps.append({**base, "kind": "system", "text": text})
        elif role == "user":
            if self.text_calls:
                self._observe(text or "", base)
            else:
                self.steps.append({**base, "kind": "user", "text": text})
                if self.task is None and text:
                    self.task = text
        elif role == "assistant":
            self._assistant(m, text, base)
        else:
            self._tool(m, text, base)

    def _assistant(self, m: dict[str, Any], text: str | None, base: dict[str, Any]) -> None:
        for k in ("reasoning_content", "reasoning", "thinking"):
            if isinstance(m.get(k), str) and m[k]:
                self.steps.append({**base, "kind": "reasoning", "text": m[k]})
        body = text or ""
        end = through_last(body, "</think>")
        thinks = _THINK_RE.findall(body, 0, end)
        if thinks:
            self.steps.append({**base, "kind": "reasoning", "text": "\n".join(t.strip() for t in thinks)})
            body = (_THINK_RE.sub("", body[:end]) + body[end:]).strip()
        tool_calls = m.get("tool_calls")
        calls = tool_calls if isinstance(tool_calls, list) else []
        parsed = None if calls or m.get("function_call") else self._embedded(body)
        if body:
            step = {**base, "kind": "assistant", "text": body}
            if parsed and parsed[1]:
                step["metadata"] = parsed[1]
            self.steps.append(step)
        for c in calls:
            if not isinstance(c, dict):
                continue
            func = c.get("function")
            fn = func if isinstance(func, dict) else c
            step = {
                **base,
                "kind": "tool_call",
                "tool_name": fn.get("name"),
                "arguments": parse_args(fn.get("arguments", fn.get("input"))),
                "call_id": _sid(c.get("id")),
            }
            if step["call_id"]:
                self.link.call(step)
            else:
                self.steps.append(step)
                self.fifo.append(step)
        fc = m.get("function_call")
        if isinstance(fc, dict) and fc.get("name"):
            step = {
                **base,
                "kind": "tool_call",
                "tool_name": fc.get("name"),
                "arguments": parse_args(fc.get("arguments")),
            }
            self.steps.append(step)
            self.fifo.append(step)
        if parsed:
            for name, args in parsed[0]:
                step = {**base, "kind": "tool_call", "tool_name": name, "arguments": args}
                step["metadata"] = {"parsed_from_text": True}
                self.steps.append(step)
                self.text_calls.append(step)
                self.embedded += 1

    def _embedded(self, text: str) -> tuple[list[tuple[str, Any]], dict[str, Any]] | None:
        """Actions written as text: SWE-smith XML, Terminus JSON, or a SWE-agent code block."""
        if "<function=" in text:
            out = []
            for name, body in _FUNC_RE.findall(text):
                params = {k: v.strip("\n") for k, v in _PARAM_RE.findall(body)}
                out.append((name, params))
            self.embedded_kinds.add("function_xml")
            return (out, {}) if out else None
        term = _terminus_json(text)
        if term is not None:
            raw_cmds = term.get("commands")
            cmds = [c for c in raw_cmds if isinstance(c, dict)] if isinstance(raw_cmds, list) else []
            meta = {"task_complete": term["task_complete"]} if "task_complete" in term else {}
            self.embedded_kinds.add("terminus_json")
            return [("bash_command", c) for c in cmds], meta
        if self.style == "trajectory":
            blocks = _FENCE_RE.findall(text)
            if blocks:
                cmd = blocks[-1].strip()
                word = cmd.split(None, 1)[0] if cmd else ""
                self.embedded_kinds.add("fenced_block")
                return [(word if word in _SWE_AGENT_CMDS else "bash", {"command": cmd})], {}
        return None

    def _result_fields(self, text: str | None) -> dict[str, Any]:
        out = text or ""
        fields: dict[str, Any] = {"output": text}
        code = _exit_code(out) if out else None
        if code is not None:
            fields["exit_code"] = code
        body = out.removeprefix("OBSERVATION:").lstrip()
        fields["is_error"] = (code not in (0, None)) or body.startswith("ERROR:")
        return fields

    def _observe(self, text: str, base: dict[str, Any]) -> None:
        """The message after text-embedded actions is their observation (kept on the last call)."""
        calls, self.text_calls = self.text_calls, []
        fields = self._result_fields(text)
        if text.startswith("Previous response had parsing errors"):
            fields["is_error"] = True  # the harness rejected the response: nothing ran
        for c in calls[:-1]:
            c["_has_result"] = True
            c["metadata"] = {**c.get("metadata", {}), "output_on_step": "next call of the batch"}
        last = calls[-1]
        last.update({k: v for k, v in fields.items() if v is not None})
        last["_has_result"] = True

    def _tool(self, m: dict[str, Any], text: str | None, base: dict[str, Any]) -> None:
        fields = self._result_fields(text)
        cid = _sid(m.get("tool_call_id")) or _sid(m.get("tool_use_id"))
        if cid:
            self.link.result(cid, orphan={**base, "tool_name": m.get("name")}, **fields)
            self.fifo = [s for s in self.fifo if s.get("call_id") != cid]
            return
        if self.fifo:
            name = m.get("name")
            idx = next((j for j, s in enumerate(self.fifo) if name and s.get("tool_name") == name), 0)
            step = self.fifo.pop(idx)
            step.update({k: v for k, v in fields.items() if v is not None})
            step["_has_result"] = True
            return
        if self.text_calls:
            self._observe(text or "", base)
            return
        self.anomalies.append(f"tool message {base['source_line']} without a call")
        self.steps.append({**base, "kind": "tool_result", "tool_name": m.get("name"), **fields})

    def finish(self) -> None:
        pending = [s for s in self.steps if s.get("kind") == "tool_call" and not s.get("_has_result")]
        for s in pending:
            self.anomalies.append(f"call without result {s.get('call_id') or s.get('tool_name')}")


class ChatMessagesAdapter(Adapter):
    name = "chat-messages"
    runner = "chat_messages"
    extensions = (".json", ".jsonl", ".ndjson")
    priority = 90  # generic: every specific format is tried first
    version = 2  # 2: a Harbor traces export's task is the task inside the Terminus prompt
    description = "Chat-completions message lists: OpenAI messages, ShareGPT conversations, dataset rows"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        name = path.name.lower()
        if name.endswith((".traj.json", ".traj")):
            return False
        if name.endswith((".jsonl", ".ndjson")):
            objs = list(json_objects(head_bytes))
            if objs:  # any of the first rows (one damaged row does not hide the file)
                return any(_messages_of(o) is not None for o in objs)
            line = next((ln for ln in io.BytesIO(head_bytes) if ln.strip()), b"")
            return self._sniff_text(line.decode("utf-8", "ignore").lstrip(), row=True)
        return self._sniff_text(head_bytes.decode("utf-8", "ignore").lstrip(), row=False)

    @staticmethod
    def _sniff_text(s: str, row: bool) -> bool:
        if s[:1] == "[" and not row:
            el = _first_element(s, len(s) - len(s[1:].lstrip()))
            if el is not None:
                return _looks_like_message(el) or _messages_of(el) is not None
            if not re.match(r"\[\s*\{", s):
                return False  # the first row did not fit in the head: look inside it below
        elif s[:1] != "{":
            return False
        want = 2 if s[:1] == "[" else 1  # a key of the row itself, not one nested deeper (Inspect logs)
        ends = {m.start(): m.end() for m in _KEY_RE.finditer(s)}
        for pos, depth in _depths(s, iter(ends)):
            if depth == want:
                el = _first_element(s, ends[pos])
                if el is None:  # the first message is cut off by the end of the head
                    return bool(_ROLE_RE.search(s, ends[pos]))
                return _looks_like_message(el)
        return False

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        if path.name.lower().endswith((".traj.json", ".traj")):
            return "*.traj.json belongs to the mini-swe-agent / SWE-agent adapters"
        return "no messages/conversations/trajectory list of {role|from, content|text|value} messages"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        path = unit.primary
        groups: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
        if path.name.lower().endswith((".jsonl", ".ndjson")):
            records: Iterator[Record] = read_jsonl(path, ctx)
            jsonl = True
        else:
            data = load_json(path, ctx)
            if data is None:
                return
            jsonl = False
            if isinstance(data, dict) or (isinstance(data, list) and data and _looks_like_message(data[0])):
                ctx.seen_ok()
                row = data if isinstance(data, dict) else {"messages": data}
                if _messages_of(row) is None:
                    ctx.quarantine(
                        path,
                        f"{path.name}: no message list in the row",
                        "schema",
                        raw_of_obj(data),
                        counted=True,
                    )
                    return
                yield from self._row(row, None)
                return
            if not isinstance(data, list):
                ctx.quarantine(
                    path,
                    f"{path.name}: expected rows or messages, got {type(data).__name__}",
                    "schema",
                    raw_of_obj(data),
                )
                return
            records = json_records(path, ctx, data)
        for rec in records:
            n = (rec.line or 1) - 1 if jsonl else rec.line or 0
            row = rec.obj
            if _messages_of(row) is None:
                ctx.reject(rec, f"row {n}: no messages/conversations/trajectory list of messages")
                continue
            if _is_harbor_episode(row):
                key = (str(row.get("run_id") or ""), str(row.get("trial_name") or ""))
                groups.setdefault(key, []).append((n, row))
                continue
            yield from self._row(row, f"row={n}")
        for (run_id, trial), rows in groups.items():
            yield from self._harbor(run_id, trial, rows)

    # -- one trajectory ----------------------------------------------------------------------------

    def _row(self, row: dict[str, Any], locator: str | None) -> Iterator[ParsedTrajectory]:
        found = _messages_of(row)
        assert found is not None
        key, msgs = found
        conv = _Conversation(key)
        for i, m in enumerate(msgs):
            conv.add(i, m)
        conv.finish()
        t = self._trajectory(row, conv, key)
        native = row.get("traj_id") or row.get("trajectory_id") or row.get("id")
        if native is None and row.get("instance_id"):
            native = "/".join(str(x) for x in (row.get("run_id"), row["instance_id"]) if x)
        typed_rows(t, conv.steps)
        yield ParsedTrajectory(
            t, conv.steps, native_key=None if native is None else str(native), locator=locator
        )

    def _harbor(
        self, run_id: str, trial: str, rows: list[tuple[int, dict[str, Any]]]
    ) -> Iterator[ParsedTrajectory]:
        rows = sorted(rows, key=lambda r: _episode_no(r[1]))
        conv = _Conversation("conversations")
        prev: list[Any] = []
        i = 0
        for _n, row in rows:
            msgs = row["conversations"]
            if prev and msgs[: len(prev)] == prev:
                new = msgs[len(prev) :]
            else:
                new = msgs
                if prev:
                    conv.anomalies.append(f"{row.get('episode')} does not continue the previous episode")
                    conv.text_calls = []  # a new context: what follows is not their observation
                    conv.steps.append({"kind": "compaction", "role": "system", "source_line": i})
            for m in new:
                conv.add(i, m)
                i += 1
            prev = msgs
        conv.finish()
        last = rows[-1][1]
        t = self._trajectory(last, conv, "conversations")
        if isinstance(t.get("task"), str):
            t["task"] = terminus_task(t["task"])  # the Terminus prompt holds the task, as in the ATIF file
        t["task_id"] = last.get("task")
        t["metadata"] = {
            **(t.get("metadata") or {}),
            "episodes": [r.get("episode") for _, r in rows],
            "rows": [n for n, _ in rows],
        }
        typed_rows(t, conv.steps)
        yield ParsedTrajectory(
            t, conv.steps, native_key=f"{run_id}/{trial}", locator=f"run={run_id};trial={trial}"
        )

    def _trajectory(self, row: dict[str, Any], conv: _Conversation, key: str) -> dict[str, Any]:
        outcome, reward, source = _outcome(row)
        meta = {k: v for k, v in row.items() if k not in _MAPPED and k != source}
        if conv.embedded:
            meta["actions_parsed_from_text"] = conv.embedded
        harness = row.get("agent") if isinstance(row.get("agent"), str) else None
        names = {
            s.get("tool_name")
            for s in conv.steps
            if s.get("kind") == "tool_call" and isinstance(s.get("tool_name"), str)
        }
        if not harness:
            if key == "trajectory" or conv.embedded_kinds & {"function_xml", "fenced_block"}:
                harness = "swe-agent"
            elif "terminus_json" in conv.embedded_kinds:
                harness = "terminus"
            elif names & {"execute_bash", "str_replace_editor", "execute_ipython_cell", "finish"}:
                harness = "openhands"
        target = row.get("target")
        final = None
        for s in reversed(conv.steps):
            if s.get("kind") == "assistant":
                final = _FUNC_RE.sub("", s.get("text") or "").strip() or None
                if final:
                    break
        return {
            "task": conv.task,
            "task_id": row.get("instance_id") or row.get("task_id"),
            "model": row.get("model") or row.get("model_name") or row.get("model_name_or_path"),
            "harness": harness,
            "outcome": outcome,
            "reward": reward,
            "outcome_source": source,
            "expected_answer": target if isinstance(target, str) else None,
            "exit_status": row.get("exit_status"),
            "final_answer": final,
            "metadata": meta or None,
            "anomalies": conv.anomalies,
        }
