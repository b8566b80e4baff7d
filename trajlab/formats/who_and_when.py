"""Who&When failure-attribution logs (ag2ai/Agents_Failure_Attribution, `Who&When/*/<n>.json`).

One file is one failed multi-agent run: `history[{content, role, name?}]` plus the task `question`,
its `ground_truth`, and a human annotation of the decisive mistake (`mistake_agent`,
`mistake_step` = 0-based index into `history`, `mistake_reason`). Each history message becomes
exactly one step, so `steps.step_index == mistake_step` points at the annotated message; the
question goes into `trajectory.task` instead of an extra step, and the annotation is kept in the
trajectory metadata under `who_and_when`.

Two subsets: Hand-Crafted (Magentic-One; the agent is the `role`, e.g. `Orchestrator (-> WebSurfer)`)
and Algorithm-Generated (CaptainAgent/AutoGen; the agent is `name`, roles are `user`/`assistant`).
A message from the code-executing agent (`Computer_terminal`, `ComputerTerminal`) is stored as a
`tool_call` step whose arguments are the code blocks of the latest message that had any (the
Orchestrator's `(thought)` messages are not sent to the terminal and do not count) and whose
output is the execution result, still one step per message.

Magentic-One's WebSurfer and FileSurfer act on the web and on local files and then report what
they did ("I typed 'q' into the browser search bar.", "I clicked 'Details'.", "Address:
file:///workspace/a.mp3"): such a report is a `tool_call` step too (`web_search {query}`,
`web_browser {action, ...}`, `open_local_file {path}`) whose output is the report, so the page it
shows is tool evidence rather than agent text. Their other messages (summaries, answers) stay text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..normalize import PYTHON_LANGS, SHELL_LANGS
from ._base import Adapter, ParseContext, ParsedTrajectory, SourceUnit, as_text, load_json
from ._safe import raw_of_obj
from ._scan import through_last
from ._typed import typed_rows

_TERMINALS = {"computer_terminal", "computerterminal"}
_ROLE_AGENT_RE = re.compile(r"^(?P<agent>[^()]+?)\s*\((?P<what>[^)]*)\)\s*$")
# the info string after the language is bounded: unbounded, a line of many ``` without a newline
# makes every opening scan to the end of the line (quadratic)
_CODE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]{0,200}\n(.*?)```", re.S)
_EXIT_RES = (
    re.compile(r"exitcode:\s*(-?\d+)"),
    re.compile(r"exited with Unix exit code:\s*(-?\d+)"),
    re.compile(r"exit code:?\s*(-?\d+)", re.I),
)
_FINAL_RE = re.compile(r"FINAL ANSWER:\s*(.+)")
_MARKERS = (b'"mistake_agent"', b'"mistake_step"', b'"question_ID"')
_WEB_SURFERS = {"websurfer", "web_surfer"}
_FILE_SURFERS = {"filesurfer", "file_surfer"}
# The first paragraph of a WebSurfer action report (a clicked label may span lines).
_TYPED = "I typed '"
_BARS = ("the browser search bar", "the browser address bar")
_CLICKED_RE = re.compile(r"I clicked (?:'(?P<target>.*)'|the (?P<what>browser back button|control))\.", re.S)
_SCROLLED_RE = re.compile(r"I scrolled (?P<dir>up|down) one page in the browser\.")
_PAGE_RE = re.compile(r"Here is a screenshot of \[[^\]\n]*\]\((?P<url>[^)\s]+)\)")
# Bing's query box announces itself by its character counter.
_SEARCH_BOX_RE = re.compile(r"'\d+ characters out of \d+'")
_ADDRESS_RE = re.compile(r"Address: (?P<addr>\S+)")
# FileSurfer's own failure lines, near the top of its report (below them it shows the file's contents,
# which may say anything)
_FILE_ERROR_RE = re.compile(r"^Title: Error 404$|^File not found:|^Error\. Could not transcribe", re.M)
_FILE_ERROR_HEAD = 1000
# The terminal's notice that it found nothing to run (AutoGen's code executor agents)
_NO_CODE_RE = re.compile(
    r"\s*(?:There is no code from the last \d+ messages? for me to execute|No code blocks? (?:found|detected))",
    re.I,
)


def _agent_of(msg: dict[str, Any]) -> tuple[str, str | None]:
    """(agent id, what) from a message: `name` when present, else the role with `(thought)` etc. split off."""
    name = msg.get("name")
    r = msg.get("role")
    role = r if isinstance(r, str) else ""
    if isinstance(name, str) and name:
        return name, None
    m = _ROLE_AGENT_RE.match(role)
    if m:
        return m.group("agent").strip(), m.group("what").strip()
    return role or "unknown", None


def _code_blocks(text: str) -> list[tuple[str, str]]:
    if "```" not in text:
        return []
    return [(lang.lower(), code) for lang, code in _CODE_RE.findall(text, 0, through_last(text, "```"))]


def _exec_call(blocks: list[tuple[str, str]] | None) -> tuple[str, dict[str, Any] | None]:
    if not blocks:
        return "execute_code", None
    langs = {lang for lang, _ in blocks}
    code = "\n".join(c for _, c in blocks)
    if langs <= PYTHON_LANGS:
        return "python", {"code": code}
    if langs <= SHELL_LANGS:
        return "bash", {"command": code}
    return "execute_code", {"code_blocks": [{"language": lang, "code": c} for lang, c in blocks]}


def _exit_code(text: str) -> int | None:
    head = text[:300]
    for rx in _EXIT_RES:
        m = rx.search(head)
        if m:
            return int(m.group(1))
    return None


def _typed(head: str) -> tuple[str, str] | None:
    """(typed text, where) of `I typed 'TEXT' into WHERE.`; WHERE is a browser bar or a quoted field.
    The typed text may itself hold `' into '`: the last one splits (string search, linear in the
    length, where a regex with two greedy groups backtracks quadratically)."""
    if not head.startswith(_TYPED) or not head.endswith("."):
        return None
    body = head[len(_TYPED) : -1]
    for bar in _BARS:
        if body.endswith("' into " + bar):
            return body[: -len("' into " + bar)], bar
    k = body.rfind("' into '")
    if k < 0 or not body.endswith("'") or k + len("' into '") > len(body) - 1:
        return None
    return body[:k], body[k + len("' into ") :]


def _web_action(text: str) -> tuple[str, dict[str, Any], str | None] | None:
    """(tool, arguments, URL of the page shown after it) of a WebSurfer action report, or None for its
    other messages."""
    head = text.split("\n\n", 1)[0].strip()
    args: dict[str, Any]
    if typed := _typed(head):
        words, into = typed
        if into == _BARS[0] or _SEARCH_BOX_RE.fullmatch(into):
            return "web_search", {"query": words}, _shown_page(text)
        if into == _BARS[1]:
            return "web_browser", {"action": "visit", "url": words}, _shown_page(text)
        args = {"action": "type", "text": words, "field": into[1:-1]}
    elif m := _CLICKED_RE.fullmatch(head):
        what = m.group("what")
        args = {"action": "back"} if what == "browser back button" else {"action": "click"}
        if m.group("target") is not None:
            args["target"] = m.group("target")
    elif m := _SCROLLED_RE.fullmatch(head):
        args = {"action": f"scroll_{m.group('dir')}"}
    else:
        return None
    return "web_browser", args, _shown_page(text)


def _shown_page(text: str) -> str | None:
    """The URL of the page a WebSurfer report ends on (`Here is a screenshot of [title](url)`). The page
    line follows the report's first paragraph; a bounded window keeps a huge message with many unclosed
    `[` from costing a search per opening bracket over the whole text."""
    page = _PAGE_RE.search(text, 0, text.find("\n\n") + 4000 if "\n\n" in text else 4000)
    return page.group("url") if page else None


def _file_action(text: str) -> tuple[dict[str, Any] | None, bool] | None:
    """(arguments, is_error) of a FileSurfer report, or None for its other messages."""
    if text.startswith("File surfer encountered an error"):
        return None, True
    m = _ADDRESS_RE.match(text)
    if not m:
        return None
    addr = m.group("addr")
    path = unquote(addr[len("file://") :]) if addr.startswith("file://") else addr
    return {"path": path}, bool(_FILE_ERROR_RE.search(text, 0, _FILE_ERROR_HEAD))


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


class WhoAndWhenAdapter(Adapter):
    name = "who-and-when"
    runner = "who_and_when"
    extensions = (".json",)
    priority = 30
    version = 6  # 2: WebSurfer/FileSurfer action reports are tool calls; 3: "no code to execute" is no
    # error, and a CaptainAgent terminal runs only the last message's code; 4: a WebSurfer action's
    # page_url is the page it acted on (the one its previous report showed), not the page it led to;
    # 5: `is_correct` gives the reward (1/0); 6: the terminal's "no code to execute" notice is a message
    # (kind assistant, metadata {"ran": false}), not a tool call
    description = "Who&When failure-attribution logs (history + mistake_agent/mistake_step annotation)"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        if head_bytes.lstrip()[:1] != b"{":
            return False
        if any(m in head_bytes for m in _MARKERS):
            return True
        # Hand-Crafted files put a long `history` first: look for the annotation at the end instead.
        if b'"history"' not in head_bytes[:256]:
            return False
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - 8192))
                tail = f.read()
        except OSError:
            return False
        return any(m in tail for m in _MARKERS)

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "no Who&When annotation keys (mistake_agent/mistake_step/question_ID)"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        path = unit.primary
        d = load_json(path, ctx)
        if d is None:
            return
        if not isinstance(d, dict) or not isinstance(d.get("history"), list):
            reason = "not a Who&When log: expected an object with a `history` list"
            try:  # the file's own bytes (load_json has just read them whole)
                raw = path.read_bytes()
            except OSError:
                raw = raw_of_obj(d)
            ctx.quarantine(path, reason, "schema", raw)
            return
        ctx.seen_ok()
        anomalies: list[str] = []
        steps: list[dict[str, Any]] = []
        last_blocks: list[tuple[str, str]] | None = None
        last_blocks_at: int | None = None
        agents: list[str] = []
        pages: dict[str, str] = {}  # per web surfer: the URL of the page its browser shows
        subset = "Algorithm-Generated" if "system_prompt" in d or "is_correct" in d else "Hand-Crafted"
        if path.parent.name in ("Hand-Crafted", "Algorithm-Generated"):
            subset = path.parent.name
        generated = subset == "Algorithm-Generated"
        for i, msg in enumerate(d["history"]):
            if not isinstance(msg, dict):
                # Keep the slot so that step_index still equals the history index.
                anomalies.append(f"history[{i}] is not a message object")
                steps.append({"kind": "system", "role": None, "text": as_text(msg), "source_line": i})
                continue
            agent, what = _agent_of(msg)
            text = as_text(msg.get("content")) or ""
            role = msg.get("role") if isinstance(msg.get("role"), str) else None
            base = {"role": role, "agent_id": agent, "source_line": i}
            if agent not in agents and role != "human":
                agents.append(agent)
            if agent.lower() in _TERMINALS and _NO_CODE_RE.match(text):
                # "There is no code from the last 1 message for me to execute": the terminal ran
                # nothing, so this is a message of the chat, not a tool call (29 such turns of the
                # corpus had counted as calls)
                steps.append({**base, "kind": "assistant", "text": text, "metadata": {"ran": False}})
                last_blocks = None
                continue
            if agent.lower() in _TERMINALS:
                tool_name, args = _exec_call(last_blocks)
                code = _exit_code(text)
                step = {
                    **base,
                    "kind": "tool_call",
                    "tool_name": tool_name,
                    "arguments": args,
                    "output": text,
                    "exit_code": code,
                    # only a failed exit status is an error
                    "is_error": code not in (0, None),
                    "metadata": {"executes_step": last_blocks_at} if args is not None else None,
                }
                if args is None:
                    anomalies.append(f"history[{i}]: execution output without a preceding code block")
                last_blocks = None
                steps.append(step)
                continue
            surfer = agent.lower()
            web = _web_action(text) if surfer in _WEB_SURFERS else None
            if web is not None:
                tool_name, args, shown = web
                # A click, a typed field, a scroll or the back button acts on the page the surfer's
                # browser showed last (its previous report's page), not on the page it leads to.
                if tool_name == "web_browser" and args["action"] != "visit" and pages.get(agent):
                    args["page_url"] = pages[agent]
                if shown:
                    pages[agent] = shown
                steps.append(
                    {
                        **base,
                        "kind": "tool_call",
                        "tool_name": tool_name,
                        "arguments": args,
                        "output": text,
                        "is_error": False,
                    }
                )
                continue
            local = _file_action(text) if surfer in _FILE_SURFERS else None
            if local is not None:
                steps.append(
                    {
                        **base,
                        "kind": "tool_call",
                        "tool_name": "open_local_file",
                        "arguments": local[0],
                        "output": text,
                        "is_error": local[1],
                    }
                )
                if local[0] is None:
                    anomalies.append(f"history[{i}]: FileSurfer could not read its call's arguments")
                continue
            if role == "human":
                # The person asking is not one of the agents: their message belongs to `main`.
                steps.append({**base, "kind": "user", "text": text, "agent_id": "main"})
            elif what == "thought":
                steps.append({**base, "kind": "reasoning", "text": text})
            else:
                step = {**base, "kind": "assistant", "text": text}
                if what and what.startswith("->"):
                    step["metadata"] = {"to": what[2:].strip()}
                steps.append(step)
            # A `(thought)` message is the Orchestrator's own ledger or plan, not sent to the terminal:
            # a code block quoted in it (the team list of a new plan) is not what the terminal runs.
            blocks = _code_blocks(text) if what != "thought" else None
            if blocks:
                last_blocks, last_blocks_at = blocks, i
            elif generated and what != "thought":
                # CaptainAgent's terminal runs the code of the last message only ("no code from the last
                # 1 message"): an earlier message's code is not what it runs next. (Magentic-One's
                # Orchestrator speaks between the Coder's code and the terminal, so there it is kept.)
                last_blocks, last_blocks_at = None, None
        ann = {
            "mistake_agent": d.get("mistake_agent"),
            "mistake_step": _int(d.get("mistake_step")),
            "mistake_reason": d.get("mistake_reason"),
            "is_corrected": d.get("is_corrected"),
        }
        if d.get("mistake_type") is not None:
            ann["mistake_type"] = d["mistake_type"]
        ms = ann["mistake_step"]
        if ms is None or not 0 <= ms < len(steps):
            anomalies.append(f"mistake_step {d.get('mistake_step')!r} is not an index into history")
        elif ann["mistake_agent"] and steps[ms].get("agent_id") != ann["mistake_agent"]:
            anomalies.append(
                f"mistake_step {ms} was said by {steps[ms].get('agent_id')!r}, not {ann['mistake_agent']!r}"
            )
        reward: float | None = None
        if "is_correct" in d and isinstance(d["is_correct"], bool):
            outcome = "success" if d["is_correct"] else "failure"
            source = "who_and_when:is_correct"
            reward = 1.0 if d["is_correct"] else 0.0  # a boolean signal maps to 0/1, as elsewhere
        else:
            outcome, source = "failure", "who_and_when:annotated_failure"
        final = None
        for s in reversed(steps):
            body = s.get("text") or s.get("output") or ""
            m = _FINAL_RE.search(body) if "FINAL ANSWER" in body else None
            if m:
                final = m.group(1).strip()
                break
        meta: dict[str, Any] = {"who_and_when": ann, "subset": subset, "agents": agents}
        if d.get("system_prompt") is not None:
            meta["system_prompt"] = d["system_prompt"]
        t: dict[str, Any] = {
            "task": as_text(d.get("question")),
            "task_id": None if d.get("question_ID") is None else str(d["question_ID"]),
            "benchmark": "who_and_when",
            "difficulty": str(d["level"]) if d.get("level") is not None else None,
            "harness": "magentic-one" if subset == "Hand-Crafted" else "captain-agent",
            "expected_answer": None if d.get("ground_truth") is None else str(d["ground_truth"]),
            "final_answer": final,
            "outcome": outcome,
            "reward": reward,
            "outcome_source": source,
            "metadata": meta,
            "anomalies": anomalies,
        }
        native = f"{subset}/{path.stem}:{d.get('question_ID') or ''}"
        t, steps = typed_rows(t, steps)
        yield ParsedTrajectory(t, steps, native_key=native)
