"""Node-level rules: labels, statuses, modality refinement, and the constants the edge rules share."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ..formats.swe_agent import REFUSED_EDIT
from ._stepio import StepIO
from ._tokens import DOC_EXT, ext_of, words

PARALLEL_GAP_S = 1.0
"""Calls of one agent this close together (and with nothing between them) were issued in one response."""
UBIQUITY = 8
"""A value printed by more steps than this is too common to count as a data dependency."""
LAST_LINE_MAX = 24
"""An output whose last line is this short printed a result (`515`, `3`): typing it later is a data use."""
VALUE_TEXT_MAX = 2_000
"""Characters of a command or argument text searched for typed-in values."""
SUMMARY_TEXT_MAX = 40_000
"""Characters of a compaction summary, sub-agent report or answer searched for the paths, URLs and values
it names (Claude Code's summaries list the files they touched past 8,000 characters)."""
FINISH_TOOLS = words(
    "submit finish mark_task_complete task_complete attempt_completion complete_task final_answer"
)
"""Tools that end a run by handing in the result: the last call to one is the answer step."""
NO_RESULT_TOOLS = frozenset(["web_search"]) | FINISH_TOOLS
"""Tools whose results runners do not log (hosted web search; a hand-in, after which the run ends): a
missing result is not an anomaly, and a hand-in without one is `ok`."""


def records_the_session(step: dict[str, Any]) -> bool:
    """`asciinema rec`, which Terminal-Bench's harness starts first: it records the session until the
    session ends, so the recording holds no result of it (a missing result is no anomaly)."""
    command = step.get("command")
    return type(command) is str and command.startswith("asciinema rec")


BENIGN_EXIT_1 = frozenset(["grep", "egrep", "fgrep", "rg", "diff", "cmp", "test", "["])
"""Programs whose exit code 1 means "no match" / "differs", not failure."""
_ERROR_LINE = re.compile(
    r"(?:[\w./-]*/)?(?:ba|z|da|k|)sh(?::\s*(?:line\s+)?\d+)?: (?!warning:).+"
    r"|[\w.+/-]+: (?:.*: )?(?:[Cc]ommand not found|[Nn]o such file or directory|[Pp]ermission denied"
    r"|[Oo]peration not permitted|not found)(?: \(os error \d+\))?"
)
"""A shell's own error message (`zsh:1: operation not permitted: ps`, `bash: line 1: x: command not
found`, `sh: 1: x: not found`) or a program's failure to find or open something (`cat: a.txt: No such file
or directory`)."""
_ERROR_LINES_MAX = 8
DOC_PROGRAMS = words("pdftotext pdftoppm pdfinfo pdfimages pandoc libreoffice soffice docx2txt mutool qpdf")
CONTROL_CHARS = {c: " " for c in [*range(0, 32), *range(127, 160)]}
"""C0, DEL and C1 controls (U+009B is a CSI as much as ESC [ is): replaced by a space in labels."""
ROUTER_FAILURE_TOOLS = frozenset(["write_stdin", "exec_command"])
"""Codex tools whose output, when their router could not carry the call out, is the error itself and
starts `<tool> failed:` (`write_stdin failed: stdin is closed for this session; ...`, `write_stdin
failed: Unknown process id 7`, `exec_command failed: CreateProcess ...`), with no exit code or error flag."""


def clean_label(text: str | None, width: int = 80) -> str | None:
    """First non-empty line of a text, control characters removed, cut to `width`."""
    if not text:
        return None
    head = text[: width * 4].lstrip()
    if not head and len(text) > width * 4:
        head = text.lstrip()[: width * 4]
    cut = head.find("\n")
    line = (head if cut < 0 else head[:cut]).strip()
    if not line.isprintable():  # printable text has no control characters: nothing to replace
        line = line.translate(CONTROL_CHARS)
    return line if len(line) <= width else line[: width - 1] + "…"


def ts(v: Any) -> float | None:
    if isinstance(v, datetime):
        return v.timestamp()
    if isinstance(v, (int, float)):
        return float(v)
    return None


EXIT_STATUS_RUNNERS = frozenset(
    ["claude_code", "codex", "openhands", "inspect_ai", "mini_swe_agent", "who_and_when"]
)
"""Runners whose logs say how every command ended (an exit code, or an error flag set on failure): a
command of theirs with neither succeeded, whatever its output shows (`ls x 2>&1 | head` exits 0)."""


def node_status(step: dict[str, Any], exit_status_logged: bool = True) -> str:
    """ok, error, timeout or no-output (see docs/dag.md, "Node status"). `exit_status_logged=False` for
    runners whose logs do not say how a command ended: their failures are read from the output."""
    kind = step.get("kind")
    out = step.get("output")
    err = bool(step.get("is_error"))
    code = step.get("exit_code")
    if kind in ("tool_call", "tool_result"):
        if step.get("timed_out") or code == 124 or (err and "timed out" in (out or "")[:300].lower()):
            return "ok" if out and _SERVING.search(out[:4000]) else "timeout"
        progs = step.get("programs") or ()
        if (
            code == 1
            and ((step.get("tool") or "") in BENIGN_EXIT_1 or (progs and progs[-1] in BENIGN_EXIT_1))
            and not step.get("stderr")
        ):
            if not out or not out.strip():
                return "no-output"
            return "error" if _only_error_lines(out) else "ok"
        if err or (code is not None and code != 0):
            return "error"
        if out and _router_failed(step.get("tool_name"), out):
            return "error"
        if out and REFUSED_EDIT in out[-600:]:  # SWE-agent's editor refused the edit (linter errors)
            return "error"
        if out and out[0] in _REFUSAL_FIRST and _policy_refused(out):
            return "error"
        if out and _page_failed(step, out):
            return "error"
        if out and out[:1] == "<" and polls_background(step) and _task_failed(out):
            return "error"
        if out is None or not out.strip():
            return "ok" if code == 0 or (out is None and step.get("tool") in FINISH_TOOLS) else "no-output"
        if code is None and not err and not exit_status_logged and _failed_by_output(step, out):
            return "error"
        return "ok"
    if err and not _is_verdict(step):  # a logged API error, a harness's "could not parse your response"
        return "error"
    if kind == "compaction" and not (step.get("text") or "").strip():
        return "no-output"
    return "ok"


_SETTING_UP = words("cd pushd popd export source . set unset alias true env")
"""Programs that only prepare the shell (`cd /app && tail -50 log.txt`): the next one does the work."""
_SERVING = re.compile(
    r"Serving HTTP on |Running on https?://|[Ll]istening (?:on|at) (?:https?://|port |[\d.:\[])"
    r"|Uvicorn running on |Local:\s+https?://|[Ss]erver (?:started|running|listening) (?:on|at) "
    r"|Started server on |started server on |Jupyter Server .* is running at"
)
"""What a server prints once it is up. A runner that stops waiting for a command that is serving (OpenHands:
"no new output after 30 seconds", exit code -1) timed out only in name: a server runs until stopped."""
_SHOWING_PROGRAMS = words("cat head tail less more nl tac bat grep egrep fgrep rg ag sed awk jq view strings")
"""Programs that show text they read: an error at the end of what they print is the file's, not theirs."""
_WARNING = r"\S+:\d+: \w*Warning: .*"
_WARNING_LINE = re.compile(_WARNING)
_TRAILER_LINE = re.compile(
    r"\((?:Open file|Current directory): .*\)|bash-\$|(?:\(\S+\) )?[\w.-]+@[\w.-]+:[^\n]*[#$]|" + _WARNING
)
"""Lines after a command's own output: SWE-agent's status lines and prompt, a terminal's empty prompt, and
the interpreter's shutdown warnings (`sys:1: RuntimeWarning: coroutine ... was never awaited`, with the
indented source line a warning may have under it)."""
_EXCEPTION_LINE = re.compile(
    r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning)|StopIteration)(?:: .*)?"
)
_PYTEST_FAILED = re.compile(
    r"=+ [^=]{0,200}?\b\d+ (?:failed|errors?)\b[^=]{0,200}? in [\d.]+\s*m?s[^=]{0,60}=+"
)
_SUMMARY_MAX = 300  # pytest's summary line is short: longer last lines are not matched at all
_TRACEBACK = "Traceback (most recent call last):"
_TAIL_CHARS = 8_000


def _failed_by_output(step: dict[str, Any], out: str) -> bool:
    """A command whose runner logs no exit status (SWE-agent, terminals, chat logs) failed when its
    output ends the way a failed program's does: an uncaught Python exception (a traceback, or a
    `SyntaxError` under its `File` line), a pytest summary with failures, or nothing but shell errors
    (`bash: x: command not found`). A traceback or test summary that a program showing files (`cat`,
    `tail`, `grep`) prints is a log's, not its own failure."""
    if not step.get("command"):
        return False
    progs = step.get("programs") or ()
    lines = out[-_TAIL_CHARS:].splitlines()
    end = len(lines)
    while end:
        line = lines[end - 1].rstrip()
        if not line or _TRAILER_LINE.fullmatch(line):
            end -= 1
        elif line[0].isspace() and end >= 2 and _WARNING_LINE.fullmatch(lines[end - 2].rstrip()):
            end -= 2
        else:
            break
    if not end:
        return False
    last = lines[end - 1].strip()
    first = next((x for x in progs if x not in _SETTING_UP), None)
    if first in _SHOWING_PROGRAMS:
        pass
    elif len(last) <= _SUMMARY_MAX and _PYTEST_FAILED.fullmatch(last):
        return True
    elif _EXCEPTION_LINE.fullmatch(last):
        for j in range(end - 2, -1, -1):
            line = lines[j]
            if line.startswith(_TRACEBACK):
                return True
            if line.startswith("  File ") and last.startswith(
                ("SyntaxError", "IndentationError", "TabError")
            ):
                return True
            if line.strip() and not line[0].isspace():
                return False
        return False
    return _only_error_lines("\n".join(lines[:end]))


def ran_nothing(s: dict[str, Any]) -> bool:
    """A code executor's turn with no code to run (AutoGen's "There is no code from the last 1 message for
    me to execute"): no action after the last message, and no dead end."""
    return s.get("tool") in _CODE_RUNNERS and not (s.get("command") or s.get("arguments"))


_CODE_RUNNERS = frozenset(["execute_code", "python"])
BACKGROUND_POLLS = frozenset(["taskoutput", "bashoutput"])
"""Claude Code's tools that fetch what a background command (`Command running in background with ID: x`)
has printed so far, and at the end its status and exit code: polls of that command."""


def polls_background(step: dict[str, Any]) -> bool:
    """Is the step one of Claude Code's polls of a background command? By the runner's tool name: the
    normalized tool (`poll` since rows v5) is shared with Codex's `write_stdin` polls."""
    return (step.get("tool_name") or "").lower() in BACKGROUND_POLLS


_TASK_EXIT = re.compile(r"<exit_code>(-?\d{1,6})</exit_code>")


def _task_failed(out: str) -> bool:
    """A background task's report says it failed: `<status>failed</status>` or a non-zero exit code."""
    head = out[:2000]
    if "<status>failed</status>" in head:
        return True
    m = _TASK_EXIT.search(head)
    return m is not None and m.group(1) != "0"


def is_setup(step: dict[str, Any]) -> bool:
    """A step of the harness's setup phase (`metadata.phase = "setup"`: Terminal-Bench's agent install)."""
    meta = step.get("metadata")
    if isinstance(meta, str):
        return '"phase":"setup"' in meta or '"phase": "setup"' in meta
    return isinstance(meta, dict) and meta.get("phase") == "setup"


_PAGE_ERRORS = (
    "chrome-error://",
    "This site can’t be reached",
    "This site can't be reached",
    "ERR_NAME_NOT_RESOLVED",
)
"""What a browser shows when the page did not load (Chrome's error page, as a web agent reports it)."""
_BROWSER_TOOLS = frozenset(["browser", "web_browser", "web_fetch"])


def _page_failed(step: dict[str, Any], out: str) -> bool:
    return (step.get("tool") or "") in _BROWSER_TOOLS and any(e in out[:3000] for e in _PAGE_ERRORS)


def _is_verdict(step: dict[str, Any]) -> bool:
    """A verifier's message (Terminal-Bench's test results): its failure is the run's outcome, not a step's."""
    if step.get("kind") != "system":
        return False
    meta = step.get("metadata")
    if isinstance(meta, str):
        return '"phase":"test"' in meta or '"phase": "test"' in meta
    return isinstance(meta, dict) and meta.get("phase") == "test"


def _only_error_lines(out: str) -> bool:
    """The output is nothing but a few error lines. With exit code 1 from a grep, which then printed
    nothing itself, they came from another program of the command (its stderr merged into the output,
    as Codex and Claude Code log it): that program failed, so the step did (`ps -ef | rg x` where `ps`
    is not permitted), where a `grep` that only found nothing would print nothing."""
    lines = [x.strip() for x in out[:4000].splitlines() if x.strip()]
    return 0 < len(lines) <= _ERROR_LINES_MAX and all(_ERROR_LINE.fullmatch(x) for x in lines)


_POLICY_REFUSALS = ("Browser Use rejected this action",)
"""How a tool's own output starts when a policy refused the call (Codex's Browser Use, wrapped as MCP text
content or not): nothing was done, with no exit code or error flag."""
_MCP_TEXT = '[{"type":"text","text":"'
_REFUSAL_FIRST = frozenset("[B \t\r\n")  # what such an output can start with (a cheap first test)


def _policy_refused(out: str) -> bool:
    head = out[:400].lstrip()
    if head.startswith(_MCP_TEXT):
        head = head[len(_MCP_TEXT) :]
    return head.startswith(_POLICY_REFUSALS)


def _router_failed(tool_name: str | None, out: str) -> bool:
    """The output is the runner's own report that it could not run this call (see ROUTER_FAILURE_TOOLS);
    only the tool it names counts, so a command printing such a log line is no failure."""
    return tool_name in ROUTER_FAILURE_TOOLS and out.lstrip()[: len(tool_name) + 8] == f"{tool_name} failed:"


def name_of(s: dict[str, Any]) -> str:
    return (s.get("tool_name") or "\0").lower()


def modality(s: dict[str, Any], io: StepIO, tool: str | None) -> str:
    m = s.get("modality") or "compute"
    if m in ("file", "compute"):
        if tool in DOC_PROGRAMS or not DOC_PROGRAMS.isdisjoint(s.get("programs") or ()):
            return "document"
        if io.docs is None:  # a cached (shared) StepIO keeps the answer for every step running it
            io.docs = any(ext_of(p) in DOC_EXT for p in (*io.consumed, *(x for x, _ in io.produced)))
        if io.docs:
            return "document"
    return m
