"""`codex exec --json` stdout (openai/codex `codex-rs/exec/src/exec_events.rs`).

A JSONL stream of thread events: `thread.started{thread_id}`, `turn.started`, `turn.completed{usage}`,
`turn.failed{error}`, `item.started|updated|completed{item}` and `error{message}`. An item is
`{id, type, ...}` (`item_type` in early 0.4x builds, where `agent_message` was `assistant_message`):
`agent_message{text}`, `reasoning{text}`, `command_execution{command, aggregated_output, exit_code,
status}`, `file_change{changes[{path, kind}], status}`, `mcp_tool_call{server, tool, arguments,
result, error, status}`, `collab_tool_call`, `web_search{query}`, `todo_list{items}`, `plan{text}`
and `error{message}`.

An item becomes one step when it is first seen; later `item.updated`/`item.completed` events for
the same id update that step in place (a todo list updated ten times is still one step). Usage in
`turn.completed` is per turn and summed. The stream records neither the prompt, the model nor a
success signal: task and model stay empty unless a sidecar supplies them, and the outcome is
`unknown`.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ._base import Adapter, ParseContext, ParsedTrajectory, SourceUnit, as_text, read_jsonl
from ._typed import typed_rows

_EVENT_TYPES = {
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "item.started",
    "item.updated",
    "item.completed",
}
_TOOL_ITEMS = {
    "command_execution",
    "file_change",
    "mcp_tool_call",
    "collab_tool_call",
    "web_search",
    "todo_list",
}
_FAILED = {"failed", "declined", "errored"}


def _item_type(item: dict[str, Any]) -> str | None:
    it = item.get("type") or item.get("item_type")
    if not isinstance(it, str):
        return None
    return "agent_message" if it == "assistant_message" else it


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _mcp_output(item: dict[str, Any]) -> str | None:
    res = item.get("result")
    if isinstance(res, dict):
        text = as_text(res.get("content"))
        if text:
            return text
        if res.get("structured_content") is not None:
            return orjson.dumps(res["structured_content"]).decode()
    err = item.get("error")
    if isinstance(err, dict):
        return err.get("message")
    return None


class CodexExecJsonAdapter(Adapter):
    name = "codex-exec-json"
    runner = "codex"
    extensions = (".jsonl", ".ndjson", ".json")
    priority = 12
    description = "`codex exec --json` event stream (thread.started / item.* / turn.completed)"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        seen = 0
        for line in io.BytesIO(head_bytes):
            s = line.strip()
            if not s:
                continue
            seen += 1
            if seen > 5:
                return False
            try:
                obj = orjson.loads(s)
            except orjson.JSONDecodeError:
                continue  # stderr chatter captured along with stdout
            if not isinstance(obj, dict):
                continue  # a damaged line (`null`, a list): the reader quarantines it
            typ = obj.get("type")
            if not isinstance(typ, str):
                continue  # a damaged event without a type
            if typ == "thread.started":
                if "thread_id" in obj:
                    return True
                continue  # damaged (no id): the events after it decide
            if typ in _EVENT_TYPES:
                return typ != "turn.started" or len(obj) == 1
            return False
        return False

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "no thread.started/turn.*/item.* event at the start"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        steps: list[dict[str, Any]] = []
        anomalies: list[str] = []
        items: dict[str, dict[str, Any]] = {}  # item id -> its (open) step
        t: dict[str, Any] = {"harness": "codex-exec"}
        thread: str | None = None
        turns = failed_turns = 0
        tok = {"input_tokens": 0, "cached_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0}
        have_usage = False
        pending_error: str | None = None
        for rec in read_jsonl(unit.primary, ctx):
            d = rec.obj
            if not isinstance(d, dict) or not isinstance(d.get("type"), str):
                ctx.reject(rec, f"line {rec.line}: not a codex exec event (no `type`)")
                continue
            typ = d["type"]
            if typ == "thread.started":
                if thread and d.get("thread_id") != thread:
                    anomalies.append(f"second thread {d.get('thread_id')} in the same stream")
                if thread:  # a resumed exec process numbers its items from item_0 again
                    self._close(items, anomalies)
                tid = d.get("thread_id")
                thread = thread or (str(tid) if isinstance(tid, (str, int)) and tid != "" else None)
            elif typ == "turn.started":
                turns += 1
            elif typ == "turn.completed":
                pending_error = None
                usage = d.get("usage")
                if isinstance(usage, dict):
                    have_usage = True
                    for k, src in (
                        ("input_tokens", "input_tokens"),
                        ("cached_tokens", "cached_input_tokens"),
                        ("output_tokens", "output_tokens"),
                        ("reasoning_tokens", "reasoning_output_tokens"),
                    ):
                        v = usage.get(src)
                        if isinstance(v, int):
                            tok[k] += v
            elif typ == "turn.failed":
                failed_turns += 1
                err = d.get("error")
                msg = err.get("message") if isinstance(err, dict) else as_text(err)
                t["error"] = msg
                t["exit_status"] = "turn_failed"
                steps.append(
                    {
                        "kind": "system",
                        "role": "error",
                        "text": msg,
                        "is_error": True,
                        "source_line": rec.line,
                    }
                )
            elif typ == "error":
                msg = d.get("message") or as_text(d.get("error"))
                pending_error = msg  # fatal only if no turn completes afterwards (retries also log here)
                steps.append(
                    {
                        "kind": "system",
                        "role": "error",
                        "text": msg,
                        "is_error": True,
                        "source_line": rec.line,
                    }
                )
            elif typ in ("item.started", "item.updated", "item.completed"):
                item = d.get("item")
                if (
                    not isinstance(item, dict)
                    or not isinstance(item.get("id"), (str, int))
                    or item["id"] == ""
                ):
                    ctx.reject(rec, f"line {rec.line}: {typ} without an item id")
                    continue
                self._item(item, typ, rec.line, steps, items, anomalies)
            elif typ == "request_user_input":
                qs = _list(d.get("questions"))
                text = "\n".join(as_text(q.get("question") if isinstance(q, dict) else q) or "" for q in qs)
                steps.append(
                    {"kind": "assistant", "role": "assistant", "text": text, "source_line": rec.line}
                )
            # item.plan.delta and unknown event types carry nothing the completed items do not.
        if ctx.records_ingested == 0:
            return
        self._close(items, anomalies)
        if pending_error is not None:
            t["error"] = pending_error
            t.setdefault("exit_status", "error")
        for s in steps:
            s.pop("_done", None)
        if have_usage:
            t.update(tok)
            t["total_tokens"] = tok["input_tokens"] + tok["output_tokens"]
        t["final_answer"] = next(
            (s.get("text") for s in reversed(steps) if s.get("kind") == "assistant"), None
        )
        t.setdefault("exit_status", "completed" if turns and not failed_turns else None)
        t["metadata"] = {"thread_id": thread, "turns": turns, "failed_turns": failed_turns}
        t["anomalies"] = anomalies
        t, steps = typed_rows(t, steps)
        yield ParsedTrajectory(t, steps, native_key=thread)

    @staticmethod
    def _close(items: dict[str, dict[str, Any]], anomalies: list[str]) -> None:
        for iid, step in items.items():
            if step.get("kind") == "tool_call" and not step.get("_done"):
                anomalies.append(f"item {iid} never completed")
        items.clear()

    def _item(
        self,
        item: dict[str, Any],
        event: str,
        line: int | None,
        steps: list[dict[str, Any]],
        items: dict[str, dict[str, Any]],
        anomalies: list[str],
    ) -> None:
        iid = str(item["id"])
        it = _item_type(item)
        step = items.get(iid)
        if step is not None and (
            (step.get("_done") and event == "item.started") or step["metadata"].get("item_type") != it
        ):
            step = None  # an id reused for another item
        if step is None:
            step = {"source_line": line, "metadata": {"item_id": iid, "item_type": it}}
            items[iid] = step
            steps.append(step)
        done = event == "item.completed"
        status = item.get("status") if isinstance(item.get("status"), str) else None
        if it == "agent_message":
            step.update(kind="assistant", role="assistant", text=item.get("text"))
        elif it == "reasoning":
            step.update(kind="reasoning", role="assistant", text=item.get("text"))
        elif it == "plan":
            step.update(kind="assistant", role="assistant", text=item.get("text"))
        elif it == "error":
            step.update(kind="system", role="error", text=item.get("message"), is_error=True)
        elif it in _TOOL_ITEMS:
            step.update(kind="tool_call", role="assistant", call_id=iid)
            self._tool(item, it, step)
            if status in _FAILED:
                step["is_error"] = True
        else:
            step.update(kind="system", role=it, text=as_text(item.get("text") or item.get("message")))
            if it not in (None, "") and done:
                anomalies.append(f"unknown item type {it!r}")
        if done:
            step["_done"] = True

    @staticmethod
    def _tool(item: dict[str, Any], it: str, step: dict[str, Any]) -> None:
        if it == "command_execution":
            step["tool_name"] = "command_execution"
            step["arguments"] = {"command": item.get("command")}
            if item.get("aggregated_output") or item.get("status") not in (None, "in_progress"):
                step["output"] = item.get("aggregated_output")  # "" while running is not a result yet
            code = item.get("exit_code")
            if isinstance(code, int):
                step["exit_code"] = code
                step["is_error"] = code != 0
                step["timed_out"] = code == 124
        elif it == "file_change":
            changes = [c for c in _list(item.get("changes")) if isinstance(c, dict)]
            step["tool_name"] = "apply_patch"
            step["arguments"] = {"changes": changes}
            step["output"] = "\n".join(f"{c.get('kind')} {c.get('path')}" for c in changes) or None
            step["metadata"]["changes"] = [c.get("path") for c in changes]
        elif it == "mcp_tool_call":
            step["tool_name"] = f"mcp__{item.get('server')}__{item.get('tool')}"
            step["arguments"] = item.get("arguments")
            out = _mcp_output(item)
            if out is not None:
                step["output"] = out
            if isinstance(item.get("error"), dict):
                step["is_error"] = True
        elif it == "collab_tool_call":
            step["tool_name"] = str(item.get("tool") or "collab")
            step["arguments"] = {
                "prompt": item.get("prompt"),
                "receiver_thread_ids": item.get("receiver_thread_ids"),
            }
            states = item.get("agents_states")
            if isinstance(states, dict) and states:
                step["output"] = "\n".join(
                    f"{k}: {v.get('status')} {v.get('message') or ''}".rstrip()
                    for k, v in states.items()
                    if isinstance(v, dict)
                )
            step["tool"], step["modality"] = "subagent", "compute"
        elif it == "web_search":
            step["tool_name"] = "web_search"
            step["arguments"] = {"query": item.get("query"), "action": item.get("action")}
        elif it == "todo_list":
            todo = [x for x in _list(item.get("items")) if isinstance(x, dict)]
            step["tool_name"] = "todo_list"
            step["arguments"] = {"items": todo}
            step["output"] = "\n".join(
                f"[{'x' if x.get('completed') else ' '}] {x.get('text')}" for x in todo
            )
            step["tool"], step["modality"] = "todo", "compute"
