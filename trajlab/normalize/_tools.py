"""Name the real tool behind a call, and tag its modality.

A call is either one of the runner's own tools (Read, apply_patch, web_search, view_image, ...) or a
shell command. Shell commands are parsed (see `_shell`) rather than substring-matched, and wrappers,
launchers and containers are looked through (see `_resolve`): `bash -lc '...'`, `sudo`, `env A=1`,
`timeout 30`, `nohup`, `time -p`, `xvfb-run`, `script -c`, `watch`; `xargs`, `find -exec`, `parallel`
and `docker exec`/`run` (listed along with the program they run); package and project runners (`npx
tsc`, `yarn tsc`, `pnpm exec eslint`, `uvx ruff`, `uv run pytest`, `pdm run`, `conda run -n env`; a
project script such as `yarn build` keeps the runner's name); shell keywords (`for ...; do whisper
"$f"; done`). `python -m pip` is pip, `python -m whisper` is whisper, and every program of a pipeline or
`$(...)` is listed in `programs`. `command -v python` (like `which python`) looks python up and runs
nothing, so its program is `command`. `ssh host CMD` is ssh's call (its command runs elsewhere).

The tool of a command line is its most telling program: a media program (ffmpeg, whisper, tesseract...)
over a network program, installer, interpreter or build tool, over any other program, over trivial
builtins, shell set-up (cd, echo, export, `conda activate`...) and programs that only run another one
(`xargs`, `parallel`, `docker exec`); the first one of the best rank wins. Git's global options are
skipped to find its sub-command (`git -C repo push` is a network call).

The modality rules, in order:
1. runner tools with a fixed modality (web_search -> web, view_image -> image, Read/Write/Edit -> file,
   or the file's extension when it names media);
2. audio programs (whisper, sox, ...) -> audio; image programs (tesseract, imagemagick, ...) -> image;
   network programs (curl, wget, yt-dlp, git clone, pip/apt/npm/poetry/bun install) -> web;
3. ffmpeg/ffprobe -> by file extensions: audio output or `-vn` -> audio; video input -> video;
   audio input -> audio; image input -> image;
4. interpreters (python, node, ...) -> the media modality of any media file argument or of the libraries
   an inline script or here-document imports (whisper -> audio, cv2 -> video, PIL -> image), else compute;
5. file utilities (cat, ls, grep, sed, git ...) -> file (cp/mv/ls/stat of a media file -> that medium);
   anything else -> compute.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, NamedTuple

import orjson

from ._lexicon import (
    AUDIO_EXT,
    AUDIO_PROGRAMS,
    BUILD_TOOLS,
    COMMAND_KEYS,
    EDITOR_COMMANDS,
    EDITOR_TOOLS,
    ENV_MANAGERS,
    ENV_SETUP_VERBS,
    EXT_RE,
    FILE_PROGRAMS,
    GIT_OPTIONS_WITH_VALUE,
    GIT_WEB_VERBS,
    IMAGE_EXT,
    IMAGE_PROGRAMS,
    INSTALL_VERBS,
    INSTALLERS,
    INTERPRETERS,
    MEDIA_FILE_PROGRAMS,
    PATH_KEYS,
    PY_IMPORT_MODALITY,
    PYTHON_LANGS,
    PYTHON_TOOLS,
    RUNNER_TOOLS,
    SHELL_LANGS,
    SHELL_TOOLS,
    SHELLS,
    SUBMIT_SENTINELS,
    TRIVIAL,
    VIDEO_EXT,
    VIDEO_PROGRAMS,
    WEB_PROGRAMS,
)
from ._resolve import CONTAINER_RUNNERS, container_command, program_name, resolve, skip_options
from ._shell import parse_shell

_PLAIN_ARG = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


class ToolInfo(NamedTuple):
    tool: str | None
    programs: tuple[str, ...]
    modality: str | None
    command: str | None


def _ext(word: str) -> str | None:
    if "." not in word:  # EXT_RE starts with a dot
        return None
    m = EXT_RE.search(word + " ")
    return m.group(1).lower() if m else None


def _media_of_words(words: list[str]) -> str | None:
    """The medium of the files named, video over audio over image."""
    audio = image = False
    for w in words:
        e = _ext(w)
        if e in VIDEO_EXT:
            return "video"  # nothing ranks above it
        if e in AUDIO_EXT:
            audio = True
        elif e in IMAGE_EXT:
            image = True
    return "audio" if audio else "image" if image else None


def _ffmpeg_modality(args: list[str]) -> str:
    inputs = [args[k + 1] for k, a in enumerate(args[:-1]) if a == "-i"]
    outputs = [a for k, a in enumerate(args) if not a.startswith("-") and (k == 0 or args[k - 1] != "-i")]
    in_media = _media_of_words(inputs) or _media_of_words(args)
    out_exts = {_ext(o) for o in outputs}
    if "-vn" in args or (out_exts & AUDIO_EXT and not out_exts & (VIDEO_EXT | IMAGE_EXT)):
        return "audio"
    if in_media == "video" or (out_exts & IMAGE_EXT and in_media != "image"):
        return "video"
    return in_media or "video"


def _import_words(rx: re.Pattern[str]) -> tuple[str, ...]:
    """The words of a `\\b(w1|w2|...)\\b` pattern as plain text: one of them is in any text it matches."""
    body = rx.pattern
    assert body.startswith("\\b(") and body.endswith(")\\b"), body
    words = tuple(w.replace("\\.", ".") for w in body[3:-3].split("|"))
    assert all(re.escape(w) == raw for w, raw in zip(words, body[3:-3].split("|"))), body
    return words


# Each pattern is searched only when one of its words occurs (str `in` is much cheaper than the search).
_IMPORT_CHECKS = [(rx, _import_words(rx), mod) for rx, mod in PY_IMPORT_MODALITY]


def _code_modality(code: str | None) -> str | None:
    if code:
        for rx, words, mod in _IMPORT_CHECKS:
            for w in words:
                if w in code:
                    if rx.search(code):
                        return mod
                    break
    return None


def _program_modality(prog: str, args: list[str], script: str | None) -> str:
    if prog in AUDIO_PROGRAMS:
        return "audio"
    if prog in VIDEO_PROGRAMS:
        return _ffmpeg_modality(args)
    if prog in IMAGE_PROGRAMS:
        return "image"
    if prog in WEB_PROGRAMS or (prog == "git" and _git_network(args)):
        return "web"
    if prog in INSTALLERS and (prog not in INTERPRETERS or (args[:1] and args[0] in INSTALL_VERBS)):
        return "web" if any(a in INSTALL_VERBS for a in args) else "compute"  # `bun x.ts` is an interpreter
    if prog in INTERPRETERS or prog in BUILD_TOOLS:
        media = _media_of_words(args)
        if media:
            return media
        code = script or ""
        if prog == "python" and "-c" in args:
            k = args.index("-c")
            code += args[k + 1] if k + 1 < len(args) else ""
        return _code_modality(code) or "compute"
    if prog in FILE_PROGRAMS:
        return (_media_of_words(args) if prog in MEDIA_FILE_PROGRAMS else None) or "file"
    return "compute"


def _git_network(args: list[str]) -> bool:
    """A git sub-command that talks to a remote, after git's global options (`git -C repo push`)."""
    j = skip_options(args, 0, GIT_OPTIONS_WITH_VALUE)
    return j < len(args) and args[j] in GIT_WEB_VERBS


def _env_setup(prog: str, args: list[str]) -> bool:
    """`conda activate env`, `micromamba shell hook`, `conda shell.bash hook`: shell set-up only."""
    return (
        prog in ENV_MANAGERS and bool(args) and (args[0] in ENV_SETUP_VERBS or args[0].startswith("shell."))
    )


def _rank(prog: str, args: list[str]) -> int:
    """Lower is more telling: media programs, then network/interpreters/builds, then the rest."""
    if prog in AUDIO_PROGRAMS or prog in VIDEO_PROGRAMS or prog in IMAGE_PROGRAMS:
        return 0
    if (
        prog in WEB_PROGRAMS
        or (prog in INSTALLERS and not _env_setup(prog, args))
        or prog in INTERPRETERS
        or prog in BUILD_TOOLS
        or (prog == "git" and _git_network(args))
    ):
        return 1
    # `conda activate` is set-up, like `cd` or `source venv/bin/activate`; `xargs`, `parallel` and
    # `docker exec` only run another program
    if (
        prog in TRIVIAL
        or prog in ("xargs", "parallel")
        or _env_setup(prog, args)
        or (prog in CONTAINER_RUNNERS and container_command(prog, args) is not None)
    ):
        return 3
    return 2


def _main_program(progs: list[tuple[str, list[str]]]) -> tuple[int, int]:
    """(index, rank) of the most telling of a command line's programs: the lowest rank, the first of
    equals, except that an install gives way to an equally telling program after it (in `pip install
    yt-dlp && yt-dlp URL` the work is yt-dlp's). Writing a script with `cat > f <<EOF` is preparation:
    the program that runs it is the tool."""
    best, best_rank = 0, _rank(progs[0][0], progs[0][1])
    for i in range(1, len(progs)):
        if best_rank == 0:
            break
        prog, args = progs[i]
        k = _rank(prog, args)
        if k < best_rank or (
            k == best_rank
            and progs[best][0] in INSTALLERS
            and prog not in INSTALLERS
            and _installs(progs[best])
        ):
            best, best_rank = i, k
    return best, best_rank


def _installs(prog_args: tuple[str, list[str]]) -> bool:
    return any(a in INSTALL_VERBS for a in prog_args[1][:3])


_Resolved = tuple[str, list[str], list[str], bool]
"""A program of a command line: (program, arguments, heredoc bodies, has a redirect)."""


def _resolve_line(command: str) -> list[_Resolved]:
    resolved: list[_Resolved] = []
    parsed = parse_shell(command)
    functions = parsed.functions  # calls of a function defined in the line are not programs
    for sc in parsed.commands:
        for prog, args in resolve(sc.argv):
            if functions and prog in functions:
                continue
            resolved.append((prog, args, sc.heredocs, bool(sc.redirects)))
        for sub in sc.substitutions:
            for sc2 in parse_shell(sub).commands:
                for prog, args in resolve(sc2.argv):
                    resolved.append((prog, args, sc2.heredocs, bool(sc2.redirects)))
    return resolved


def _modality_of(resolved: list[_Resolved], best: int) -> str:
    prog, args, _, redirected = resolved[best]
    if prog in TRIVIAL:
        return "file" if redirected else "compute"
    script = "\n".join(h for r in resolved for h in r[2]) if any(r[2] for r in resolved) else None
    return _program_modality(prog, args, script)


@lru_cache(maxsize=65_536)
def analyze_command(command: str) -> ToolInfo:
    """Programs, main tool and modality of a shell command line."""
    resolved = _resolve_line(command)
    programs = tuple(r[0] for r in resolved)
    if not resolved:
        return ToolInfo(None, programs, None, command)
    if any(r[0] == "echo" and any(a in SUBMIT_SENTINELS for a in r[1]) for r in resolved):
        return ToolInfo("submit", programs, "compute", command)
    best, _ = _main_program([(r[0], r[1]) for r in resolved])
    return ToolInfo(resolved[best][0], programs, _modality_of(resolved, best), command)


def _command_from_args(args: dict[str, Any]) -> str | None:
    for k in COMMAND_KEYS:
        v = args.get(k)
        if isinstance(v, str) and v.strip():
            return v
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            return _join_argv(v)
    return None


def _join_argv(argv: list[str]) -> str:
    # `["bash", "-lc", "cmd"]` is the common Codex form: keep the inner command as the command line.
    if len(argv) >= 3 and program_name(argv[0]) in SHELLS and argv[1].startswith("-") and "c" in argv[1]:
        return argv[2]
    return " ".join(
        a if a and _PLAIN_ARG.fullmatch(a) else "'" + a.replace("'", "'\"'\"'") + "'" for a in argv
    )


@lru_cache(maxsize=65_536)
def _normalize_json_args(tool_name: str | None, raw: str) -> ToolInfo:
    try:
        parsed: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, (dict, list)):
        return _normalize(tool_name, parsed)
    if raw.lstrip()[:2] in ('{"', '["', "{}", "[]"):  # broken JSON arguments: nothing to analyze
        return ToolInfo((tool_name or "").strip().lower() or None, (), "compute", None)
    return _normalize(tool_name, raw, json_string=False)  # e.g. a brace group `{ cmd; }`


def _editor_call(low: str, argd: dict[str, Any], text: str | None) -> ToolInfo:
    """`str_replace_editor view PATH` is a read, `create` a write, `str_replace`/`insert` an edit.

    The sub-command comes from the `command` argument (`{"command": "view", "path": ...}`, SWE-agent
    1.x / OpenHands) or from the action line (`str_replace_editor view /repo/a.py`, SWE-agent 0.x)."""
    cmd = argd.get("command") if argd else text
    words = cmd.split(None, 3)[:3] if isinstance(cmd, str) else []
    if words and program_name(words[0]) == low:
        words = words[1:]
    sub = words[0].lower() if words else ""
    tool = EDITOR_COMMANDS.get(sub, "edit")
    path = next((argd[k] for k in PATH_KEYS if isinstance(argd.get(k), str)), None)
    if path is None and len(words) > 1:
        path = words[1]
    modality = (_media_of_words([path]) if path else None) or "file"
    if tool == "read" and modality == "image":
        tool = "image_read"
    return ToolInfo(tool, (), modality, None)


def _code_blocks_call(blocks: list[Any]) -> ToolInfo:
    """A code executor's run of a message's code blocks (AutoGen's `{"code_blocks": [{"language",
    "code"}]}`, Python and shell mixed): its programs in order, the main one picked as for one command
    line (a Python block is `python`, its modality from its imports)."""
    progs: list[tuple[str, list[str]]] = []
    modality_at: list[tuple[list[_Resolved], int] | str] = []  # a shell program's line, or a modality
    for blk in blocks[:20]:
        if not isinstance(blk, dict) or not isinstance(blk.get("code"), str):
            continue
        lang = str(blk.get("language") or "").lower()
        code: str = blk["code"]
        if lang in SHELL_LANGS:
            resolved = _resolve_line(code)
            for j, r in enumerate(resolved):
                progs.append((r[0], r[1]))
                modality_at.append((resolved, j))
        elif lang in PYTHON_LANGS:
            progs.append(("python", []))
            modality_at.append(_code_modality(code) or "compute")
    if not progs:
        return ToolInfo("execute_code", (), "compute", None)
    best, _ = _main_program(progs)
    m = modality_at[best]
    modality = m if isinstance(m, str) else _modality_of(m[0], m[1])
    return ToolInfo(progs[best][0], tuple(p for p, _ in progs), modality, None)


def normalize_call(tool_name: str | None, args: Any) -> ToolInfo:
    """Normalize a runner tool call given its name and arguments (a dict, an argv list, a command line
    string, or the arguments as a JSON string). A name that is not a string (damaged input: `true`,
    `1.5`, an object) counts as no name, so the call is still analyzed from its arguments."""
    if tool_name is not None and type(tool_name) is not str:
        tool_name = None
    return _normalize(tool_name, args)


def _normalize(tool_name: str | None, args: Any, json_string: bool = True) -> ToolInfo:
    name = (tool_name or "").strip()
    low = name.lower()
    if isinstance(args, str):
        if json_string and args.lstrip()[:1] in ("{", "["):
            return _normalize_json_args(tool_name, args)
        command_text: str | None = args if (low in SHELL_TOOLS or not name) else None
        argd: dict[str, Any] = {}
    elif isinstance(args, dict):
        argd = args
        command_text = (
            _command_from_args(args) if (low in SHELL_TOOLS or "command" in args or "cmd" in args) else None
        )
    elif isinstance(args, list) and args and all(isinstance(x, str) for x in args):
        argd = {}
        command_text = _join_argv(args)
    else:
        argd = {}
        command_text = None
    if low in EDITOR_TOOLS:
        return _editor_call(low, argd, args if isinstance(args, str) else None)
    if isinstance(argd.get("code_blocks"), list) and command_text is None:
        return _code_blocks_call(argd["code_blocks"])
    if low in SHELL_TOOLS or (command_text and low not in RUNNER_TOOLS):
        if command_text:
            return analyze_command(command_text)
        return ToolInfo(low or None, (), "compute", None)
    if low in RUNNER_TOOLS:
        tool, modality = RUNNER_TOOLS[low]
        if low in PYTHON_TOOLS:
            code = argd.get("code") or argd.get("script") or argd.get("input") or ""
            modality = _code_modality(code if isinstance(code, str) else "") or "compute"
        if modality is None:
            path = None
            for k in PATH_KEYS:
                v = argd.get(k)
                if isinstance(v, str):
                    path = v
                    break
            modality = (_media_of_words([path]) if path else None) or "file"
            if tool == "read" and path and modality == "image":
                tool = "image_read"
        return ToolInfo(tool, (), modality, None)
    if low.startswith(("mcp__", "mcp_")):
        # an MCP code runner (a node REPL driving a browser) does what its code does
        code = argd.get("code") or argd.get("script")
        by_code = _code_modality(code) if isinstance(code, str) else None
        return ToolInfo(
            low,
            (),
            by_code or ("web" if re.search(r"search|fetch|browse|web|http", low) else "compute"),
            None,
        )
    if re.search(r"search|fetch|browse|http|url", low):
        return ToolInfo(low, (), "web", None)
    return ToolInfo(low or None, (), "compute", None)
