"""What one step reads and writes: shell commands via `_shellio`, runner tools by their arguments."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson

from ..normalize import PYTHON_LANGS, SHELL_LANGS
from ._programs import ShellIO, patch_targets
from ._shellio import control_words, shell_io
from ._tokens import code_io, is_pathlike, is_url, norm_path, scan, words

PATH_KEYS = (
    "file_path",
    "path",
    "filePath",
    "filename",
    "file",
    "notebook_path",
    "image_path",
    "target_file",
)
URL_KEYS = ("url", "uri", "href", "link")
# Argument keys that steer a tool rather than carry data: their values never count as typed-in values.
CONTROL_KEYS = words(
    "yield_time_ms max_output_tokens timeout timeout_ms limit offset replace_all session_id workdir description run_in_background output_mode head_limit -n -A -B -C -i type glob subagent_type model justification sandbox_permissions with_escalated_permissions shell login tty max_tokens"
)
SETUP_TOOLS = words("pip apt npm yarn pnpm conda brew cargo gem uv apk dnf yum poetry")
BOOKKEEPING_TOOLS = words("todo think todowrite update_plan exitplanmode askuserquestion enterplanmode")
LISTING_TOOLS = frozenset(["glob", "ls", "find", "grep"])
ACI_COMMANDS = words(
    "open create goto scroll_up scroll_down edit insert append find_file search_file search_dir"
)
"""SWE-agent 0.x tools whose single `command` argument is the whole command line."""


@dataclass
class StepIO:
    produced: list[tuple[str, str]] = field(default_factory=list)
    produced_dirs: list[tuple[str, str]] = field(default_factory=list)
    consumed: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)
    written_code: dict[str, str] = field(default_factory=dict)
    lists_dir: str | None = None
    cwd: str | None = None
    open_file: str | None = None  # the file an editor-style tool (SWE-agent `open`/`edit`) works on
    deleted: list[str] = field(default_factory=list)
    value_text: str = ""
    line_refs: tuple[str, ...] = ()  # values of value_text that name a line to show (`view_range` start)
    primary: str | None = None
    shared: bool = False  # the lists belong to a cached ShellIO
    docs: bool | None = None  # does it read or write a document file (`_nodes.modality`; computed once)
    edit_probe: str | None = None  # what a read must have shown for this edit (`edit_probe`); "" none

    def unshared(self) -> StepIO:
        return dataclasses.replace(
            self,
            produced=list(self.produced),
            consumed=list(self.consumed),
            urls=list(self.urls),
            shared=False,
            docs=None,
        )  # the main input (first consumed path or URL), used by the retry rule


def parse_args(arguments: str | None) -> Any:
    if not arguments:
        return None
    s = arguments.lstrip()
    if s[:1] in "{[":
        try:
            return orjson.loads(s)
        except orjson.JSONDecodeError:
            return arguments
    return arguments


def _from_shell(sio: ShellIO) -> StepIO:
    """A view of a (cached, shared) ShellIO; call `unshared()` before changing its lists."""
    return StepIO(
        produced=sio.produced,
        produced_dirs=sio.produced_dirs,
        consumed=sio.consumed,
        words=sio.words,
        urls=sio.urls,
        scripts=sio.scripts,
        edits=sio.edits,
        written_code=sio.written_code,
        lists_dir=sio.lists_dir,
        cwd=sio.cwd,
        deleted=sio.deleted,
        shared=True,
    )


@lru_cache(maxsize=8192)
def _shell_step(command: str, cwd: str | None) -> StepIO:
    """The StepIO of a command line run in `cwd`; cached and shared (`unshared()` before changing it)."""
    io = _from_shell(shell_io(command, cwd))
    io.value_text = _without_controls(command)
    if io.cwd is None:
        io.cwd = cwd
    _attach_primary(io)
    return io


def _without_controls(command: str) -> str:
    """The command text where typed-in values are looked for: control arguments (`sed -n '1,220p'`,
    `head -n 50`, `sleep 50`) are blanked out, each at its first occurrence after its program."""
    at = 0
    for prog, w in control_words(command):
        k = command.find(prog, at)
        start = _whole_word(command, w, k if k >= 0 else at)
        if start >= 0:
            end = start + len(w)
            command = command[:start] + " " * len(w) + command[end:]
            at = end
    return command


_TOUCHING = re.compile(r"[\w.,]").match  # what may not touch a control word (the rule's lookarounds)


def _bounded(c: str) -> bool:
    return _TOUCHING(c) is None


def _whole_word(text: str, w: str, at: int) -> int:
    """Where `w` first occurs in `text` from `at` not touching a word character, `.` or `,` (no regex
    compiled per word: a build sees thousands of distinct ones)."""
    i = text.find(w, at)
    while i >= 0:
        j = i + len(w)
        if (i == 0 or _bounded(text[i - 1])) and (j == len(text) or _bounded(text[j])):
            return i
        i = text.find(w, i + 1)
    return -1


def _data_values(args: dict[str, Any]) -> str:
    """The argument text a tool was given, minus control keys (where typed-in values are looked for)."""
    parts: list[str] = []
    for k, v in args.items():
        if k in CONTROL_KEYS:
            continue
        if k == "view_range":
            parts += _view_start(v)
        elif isinstance(v, str):
            parts.append(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            parts.append(str(v))
        elif isinstance(v, (list, dict)):
            parts.append(orjson.dumps(v).decode())
    return "\n".join(parts)


_FIRST_INT = re.compile(r"-?\d+")


def _view_start(v: Any) -> list[str]:
    """The first line an editor's `view_range` shows (often a line a grep printed); not `297,357` read
    as 297357, and the end is only the size of the window. Runners log it as a list or as the string
    `"[791, 808]"`."""
    if isinstance(v, list):
        return [str(x) for x in v[:1] if isinstance(x, int) and not isinstance(x, bool)]
    if isinstance(v, str):
        m = _FIRST_INT.search(v)
        return [m.group()] if m else []
    return []


def step_io(step: dict[str, Any], cwd: str | None, open_file: str | None = None) -> StepIO:
    """Reads and writes of a tool-call step, resolving relative paths against `cwd`; `open_file` is
    the file an editor-style tool has open (SWE-agent `edit` changes it without naming it)."""
    raw = step.get("arguments")
    command = step.get("command")
    tool = (step.get("tool") or "").lower()
    name = (step.get("tool_name") or "").lower()
    args: Any = None
    if command:
        if (raw and '"workdir"' in raw) or (raw and '"cwd"' in raw):
            args = parse_args(raw)
            if isinstance(args, dict):
                wd = args.get("workdir") or args.get("cwd")
                if isinstance(wd, str) and wd:
                    cwd = wd
        return _shell_step(command, cwd)
    args = parse_args(raw)
    io = StepIO(cwd=cwd)
    if not isinstance(args, dict):
        text = args if isinstance(args, str) else ""
        if tool == "apply_patch" or name == "apply_patch":
            _patch(io, text, cwd)
        io.value_text = text
        _attach_primary(io)
        return io
    aci = args.get("command") if len(args) == 1 else None
    if isinstance(aci, str) and (name in ACI_COMMANDS or aci.split(None, 1)[:1] == [name]):
        _aci(io, aci, cwd, open_file)
        io.value_text = aci
        _attach_primary(io)
        return io
    path = next((args[k] for k in PATH_KEYS if isinstance(args.get(k), str) and args[k]), None)
    p = norm_path(path, cwd) if path else None
    if tool in ("read", "image_read"):
        if p:
            io.consumed.append(p)
    elif tool == "write":
        if p:
            io.produced.append((p, "tool-write"))
            content = args.get("content") or args.get("file_text")
            if isinstance(content, str):
                io.written_code[p] = content
    elif tool == "edit":
        sub = args.get("command")
        if sub in ("view",):
            if p:
                io.consumed.append(p)
        elif sub == "create":
            if p:
                io.produced.append((p, "tool-write"))
                if isinstance(args.get("file_text"), str):
                    io.written_code[p] = args["file_text"]
        elif p:
            io.edits.append(p)
            io.produced.append((p, "tool-edit"))
            io.edit_probe = "" if sub == "undo_edit" else edit_probe(args)
        elif open_file and (
            "replacement_text" in args or "start_line" in args or ("search" in args and "replace" in args)
        ):
            # SWE-agent's function-calling `edit` (start_line, end_line, replacement_text; or the
            # windowed editor's search, replace[, replace-all]) changes the open file without naming it
            io.edits.append(open_file)
            io.produced.append((open_file, "tool-edit"))
    elif tool == "apply_patch" or name == "apply_patch":
        patch = str(args.get("input") or args.get("patch") or args.get("command") or "")
        _patch(io, patch, cwd)
        _changes(io, step.get("metadata"))
        lines = patch.splitlines()
        io.edit_probe = _longest_line(
            [x[1:] for x in lines if x[:1] == "-" and x[:3] != "---"]
        ) or _longest_line(
            [x[1:] for x in lines if x[:1] == " "]  # a patch that only adds lines: its context lines
        )
    elif tool in LISTING_TOOLS:
        if p:
            io.words.append(p)
            io.lists_dir = p
    elif isinstance(args.get("code_blocks"), list):
        _code_blocks(io, args["code_blocks"], cwd)
    elif tool == "python" or name in ("execute_python", "run_ipython", "ipython", "python"):
        code = args.get("code") or args.get("script") or args.get("input")
        if isinstance(code, str):
            written, read, urls = code_io(code)
            io.produced += [(norm_path(w, cwd), "code-write") for w in written]
            io.consumed += [norm_path(r, cwd) for r in read]
            io.urls += urls
    elif p and tool not in BOOKKEEPING_TOOLS:
        io.consumed.append(p)
    for k in URL_KEYS:
        v = args.get(k)
        if isinstance(v, str) and is_url(v):
            io.urls.append(v)
    io.value_text = _data_values(args)
    if "view_range" in args:
        io.line_refs = tuple(_view_start(args["view_range"]))
    if tool in ("subagent", "web_fetch", "browser") or name.startswith("mcp"):
        # A prompt or free-form argument may name files and URLs the callee will read.
        paths, urls, _ = scan(io.value_text)
        io.consumed += [norm_path(x, cwd) for x in paths if x.startswith("/") and is_pathlike(x)]
        io.urls += [u for u in urls if u not in io.urls]
    _attach_primary(io)
    return io


_PROBE_MIN = 6


def edit_probe(args: dict[str, Any]) -> str | None:
    """The longest line of an editor call's old text (`old_string`, `old_str`, MultiEdit's `edits`, the
    windowed editor's `search`): a read that showed the file there shows it. None when there is none."""
    olds = [args.get(k) for k in ("old_string", "old_str", "search")]
    edits = args.get("edits")
    if isinstance(edits, list):
        olds += [e.get("old_string") for e in edits[:20] if isinstance(e, dict)]
    return _longest_line([line for o in olds if isinstance(o, str) for line in o[:20_000].splitlines()])


def _longest_line(lines: list[str]) -> str | None:
    best = max((x.strip() for x in lines), key=len, default="")[:200]
    return best if len(best) >= _PROBE_MIN else None


def _code_blocks(io: StepIO, blocks: list[Any], cwd: str | None) -> None:
    """A code executor's run of a message's blocks (AutoGen's `{"code_blocks": [{"language", "code"}]}`):
    what its Python blocks and shell blocks read and write."""
    for blk in blocks[:20]:
        if not isinstance(blk, dict) or not isinstance(blk.get("code"), str):
            continue
        lang = str(blk.get("language") or "").lower()
        code = blk["code"][:100_000]
        if lang in SHELL_LANGS:
            sio = shell_io(code, cwd)
            io.produced += sio.produced
            io.produced_dirs += sio.produced_dirs
            io.consumed += sio.consumed
            io.urls += sio.urls
            io.scripts += sio.scripts
            io.edits += sio.edits
            io.deleted += sio.deleted
        elif lang in PYTHON_LANGS:
            written, read, urls = code_io(code)
            io.produced += [(norm_path(w, cwd), "code-write") for w in written]
            io.consumed += [norm_path(r, cwd) for r in read]
            io.urls += urls


def _patch(io: StepIO, text: str, cwd: str | None) -> None:
    for path, kind in patch_targets(text):
        p = norm_path(path, cwd)
        if kind in ("update", "delete"):
            io.edits.append(p)
        if kind != "delete":
            io.produced.append((p, "apply-patch"))
        else:
            io.deleted.append(p)


def _aci(io: StepIO, command: str, cwd: str | None, open_file: str | None) -> None:
    """SWE-agent's file commands (`open F`, `create F`, `edit N:M` on the open file, `find_file`...)."""
    first = command.partition("\n")[0]
    words = [w.strip("\"'") for w in first.split()]
    if not words:
        return
    cmd, rest = words[0], words[1:]
    io.open_file = open_file
    if cmd in ("open", "create") and rest:
        p = norm_path(rest[0], cwd)
        io.open_file = p
        if cmd == "create":
            io.produced.append((p, "tool-write"))
        else:
            io.consumed.append(p)
    elif cmd in ("goto", "scroll_up", "scroll_down") and open_file:
        io.consumed.append(open_file)
    elif cmd in ("edit", "insert", "append") and open_file:
        io.edits.append(open_file)
        io.produced.append((open_file, "tool-edit"))
        start = rest[0].partition(":")[0] if cmd == "edit" and rest else ""
        if start.isascii() and start.isdigit() and len(start) < 10:  # the editor shows lines as `287:code`
            io.edit_probe = f"\n{int(start)}:"
    elif cmd in ("find_file", "search_dir") and len(rest) >= 2:
        io.words.append(norm_path(rest[-1], cwd))
        io.lists_dir = norm_path(rest[-1], cwd)
    elif cmd == "search_file":
        target = norm_path(rest[1], cwd) if len(rest) >= 2 else open_file
        if target:
            io.consumed.append(target)


def _changes(io: StepIO, metadata: str | None) -> None:
    """Codex records the absolute paths a patch changed (`metadata.changes`): prefer them to relative ones."""
    if not metadata or '"changes"' not in metadata:
        return
    try:
        changes = orjson.loads(metadata).get("changes")
    except (orjson.JSONDecodeError, AttributeError):
        return
    if not isinstance(changes, list):
        return
    paths = [c for c in changes if isinstance(c, str) and c.startswith("/")]
    if not paths:
        return
    edited = {e.rsplit("/", 1)[-1] for e in io.edits}
    io.produced = [(c, "apply-patch") for c in paths]
    io.edits = [c for c in paths if c.rsplit("/", 1)[-1] in edited]


def _attach_primary(io: StepIO) -> None:
    io.primary = (io.consumed or io.edits or io.urls or io.scripts or (None,))[0]
