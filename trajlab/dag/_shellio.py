"""What a shell command line reads and writes, from its parsed words (never by running it).

`shell_io(command, cwd)` parses the line with `trajlab.normalize.parse_shell`, looks through wrappers
(`sudo`, `env`, `timeout`, `bash -c '...'`, `$(...)`), and applies one rule per program family (`_programs`). The
other wrappers and runners that tool normalization looks through (`xvfb-run`, `setsid`, `watch`,
`script -c`, `parallel`, `uv run`, `npx`, `poetry run`, ...) are resolved by
`trajlab.normalize.resolve`, so a call's DAG rules see the same program as its `tool`. Container
commands (`docker exec`, `kubectl exec`) are not: their paths are the container's, not the host's.
Every production carries the name of the rule that found it; docs/dag.md lists them with examples.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..normalize import (
    CONTAINER_RUNNERS,
    LOOKED_THROUGH,
    ParsedShell,
    SimpleCommand,
    parallel_jobs,
    parse_shell,
    program_name,
    resolve,
)
from ._programs import SHELLS, ShellIO, ShellIOBuilder, program_io
from ._tokens import words

_WRAPPERS = words("sudo doas env nohup exec command builtin time nice ionice stdbuf unbuffer chronic xargs")
_WRAPPER_OPTS = words("-u -g -C -n -c -o -e -i -I -P -d -L -s -S")
# Looked through by tool normalization and not by the rules below: resolved by `normalize.resolve`.
_RESOLVED = LOOKED_THROUGH - _WRAPPERS - SHELLS - CONTAINER_RUNNERS
_RESOLVED -= {"timeout", "python", "find", "xargs", "fish", "parallel"}


def _skip_opts(args: list[str], i: int, with_value: frozenset[str]) -> int:
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        if args[i] == "--":
            return i + 1
        i += 2 if args[i] in with_value else 1
    return i


def _expand(sc: SimpleCommand, depth: int = 0) -> list[tuple[str, list[str], SimpleCommand]]:
    """(program, args, simple command) for one simple command, looking through wrappers and `sh -c`."""
    argv = sc.argv
    i = 0
    while i < len(argv) and "=" in argv[i] and argv[i].split("=", 1)[0].replace("_", "").isalnum():
        i += 1
    out: list[tuple[str, list[str], SimpleCommand]] = []
    while i < len(argv) and depth < 8:
        prog = program_name(argv[i])
        rest = argv[i + 1 :]
        if prog in _WRAPPERS:
            j = _skip_opts(rest, 0, _WRAPPER_OPTS)
            if prog == "env":
                while j < len(rest) and "=" in rest[j]:
                    j += 1
            if prog == "xargs":
                out.append(("xargs", rest, sc))
            i += 1 + j
            continue
        if prog == "timeout":
            j = _skip_opts(rest, 0, frozenset(["-k", "-s", "--signal", "--kill-after"]))
            i += 2 + j
            continue
        if prog in SHELLS:
            for k, a in enumerate(rest):
                if a.startswith("-") and not a.startswith("--") and "c" in a[1:] and k + 1 < len(rest):
                    for inner in fast_parse(rest[k + 1]).commands:
                        out += _expand(inner, depth + 1)
                    return out
        if prog == "find":
            return out + find_commands(rest, sc, depth)
        if prog == "parallel":  # its jobs (`normalize.parallel_jobs`, the splitter tool normalization uses)
            p = parallel_jobs(rest)
            if p.arg_files:  # `parallel CMD :::: list.txt`, `-a list.txt`: the arguments are read from files
                out.append(("cat", list(p.arg_files), sc))
            for line in p.jobs:
                for inner in fast_parse(line).commands:
                    out += _expand(inner, depth + 1)
            return out
        if prog in _RESOLVED:  # `xvfb-run python x.py`, `uv run pytest`: redirections are the line's
            out += [(p, a, sc) for p, a in resolve(argv[i:])]
            break
        out.append((prog, rest, sc))
        break
    return out


_FIND_NAMES = frozenset(["-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename"])
_FIND_EXEC = frozenset(["-exec", "-execdir", "-ok", "-okdir"])


def find_commands(
    args: list[str], sc: SimpleCommand, depth: int
) -> list[tuple[str, list[str], SimpleCommand]]:
    """`find DIR... -name PAT -exec CMD {} ;`: find reads `DIR/PAT` (each start folder with each name
    pattern, a glob; the folders themselves without one), and each `-exec`/`-execdir`/`-ok` command
    runs with `{}` standing for those paths. (`-name '*.png'` alone said any png, which linked
    `find frames -name '*.png'` to the latest writer of any png, not to the frames.)"""
    starts: list[str] = []
    i = 0
    while i < len(args) and not args[i].startswith(("-", "(", "!", ")")):
        starts.append(args[i])
        i += 1
    names: list[str] = []
    inner: list[list[str]] = []
    while i < len(args):
        a = args[i]
        if a in _FIND_NAMES and i + 1 < len(args):
            names.append(args[i + 1])
            i += 2
        elif a in _FIND_EXEC:
            j = i + 1
            while j < len(args) and args[j] not in (";", "\\;", "+"):
                j += 1
            inner.append(args[i + 1 : j])
            i = j + 1
        else:
            i += 1
    dirs = starts or ["."]
    paths = [
        n if d in (".", "./") or n.startswith("/") else f"{d.rstrip('/')}/{n}" for d in dirs for n in names
    ]
    paths = paths or [d for d in starts if d not in (".", "./")]
    out: list[tuple[str, list[str], SimpleCommand]] = [("find", paths, sc)]
    for argv in inner:
        if argv and depth < 8:
            for p in paths[:1] or ["{}"]:  # one stand-in: the commands' rules see what they read
                out += _expand(SimpleCommand(argv=[p if w == "{}" else w for w in argv]), depth + 1)
    return out


_PLAIN = re.compile(r"""[^'"$`\\(){}#<>|;&\n]*""").fullmatch


def fast_parse(text: str) -> ParsedShell:
    """`parse_shell`, with a shortcut for plain lines (no quotes, operators or redirections): split on spaces."""
    if _PLAIN(text):
        return ParsedShell([SimpleCommand(argv=text.split())], [""])
    return parse_shell(text)


def _commands(text: str, depth: int = 0) -> list[tuple[str, list[str], SimpleCommand]]:
    out: list[tuple[str, list[str], SimpleCommand]] = []
    for sc in fast_parse(text).commands:
        if sc.argv and sc.argv[0] == "cd":
            out.append(("cd", sc.argv[1:], sc))
            continue
        out += _expand(sc)
        if depth < 3:
            for sub in sc.substitutions:
                out += _commands(sub, depth + 1)
    return out


@lru_cache(maxsize=1024)
def _line_commands(command: str) -> tuple[tuple[str, list[str], SimpleCommand], ...]:
    """`_commands` of a whole command line, cached: `shell_io` and `control_words` both walk a new
    line's commands, which parsed it twice. Shared between them: callers must not change the lists."""
    return tuple(_commands(command))


_SED_ADDRESS = re.compile(
    r"(?:(?:\d+|\$)(?:,(?:[+~]?\d+|\$))?[pdq]?|\$?p)(?:;(?:(?:\d+|\$)(?:,(?:[+~]?\d+|\$))?[pdq]?))*"
)
_COUNT_OPTS = {
    "head": words("-n -c --lines --bytes"),
    "tail": words("-n -c --lines --bytes"),
    "grep": words("-A -B -C -m --max-count --context --after-context --before-context"),
    "rg": words("-A -B -C -m -M --max-count --max-columns --context --after-context --before-context"),
}
_COUNT_OPTS["egrep"] = _COUNT_OPTS["fgrep"] = _COUNT_OPTS["grep"]
_CONTROL_PROGS = re.compile(r"\b(?:sed|head|tail|sleep|grep|egrep|fgrep|rg|timeout)\b").search
_TIMEOUT_ARG = re.compile(r"(?<![\w-])timeout\s+(?:-\S+\s+)*(\d+(?:\.\d+)?[smhd]?)(?![\w.])")


def _is_count(a: str) -> bool:
    return a.lstrip("+-").isdigit()


@lru_cache(maxsize=8192)
def control_words(command: str) -> tuple[tuple[str, str], ...]:
    """(program, argument) for the arguments that steer how much a command shows or how long it waits,
    not data it works on, in command order: sed line ranges (`sed -n '360,760p'`), head/tail/grep
    counts (`-n 50`, `-20`, `-A 3`), `sleep 50`, `timeout 30`. Like a tool's control keys (`limit`,
    `offset`), they are not typed-in values."""
    if not _CONTROL_PROGS(command):
        return ()
    out: list[tuple[str, str]] = []
    if "timeout" in command:
        out += [("timeout", m.group(1)) for m in _TIMEOUT_ARG.finditer(command)]
    for prog, args, _ in _line_commands(command):
        if prog == "sleep":
            out += [(prog, a) for a in args if a.rstrip("smhd").replace(".", "", 1).isdigit()]
        elif prog == "sed":
            out += [(prog, a) for a in args if _SED_ADDRESS.fullmatch(a) and not a.isalpha()]
        elif prog in _COUNT_OPTS:
            opts = _COUNT_OPTS[prog]
            for k, a in enumerate(args):
                if a in opts and k + 1 < len(args) and _is_count(args[k + 1]):
                    out.append((prog, args[k + 1]))
                elif (
                    a[:1] == "-" and "=" in a and a.split("=", 1)[0] in opts and _is_count(a.split("=", 1)[1])
                ):
                    out.append((prog, a.split("=", 1)[1]))
                elif a[:1] == "-" and len(a) > 2 and a[:2] in opts and _is_count(a[2:]):
                    out.append((prog, a[2:]))  # -n50, -A3
                elif prog in ("head", "tail") and a[:1] == "-" and a[1:].isdigit():
                    out.append((prog, a[1:]))  # head -20
    return tuple(out)


@lru_cache(maxsize=8192)
def shell_io(command: str, cwd: str | None = None) -> ShellIO:
    """Reads and writes of a command line run in `cwd` (None when unknown). Results are cached: do not mutate."""
    acc = ShellIOBuilder(cwd)
    for prog, args, sc in _line_commands(command):
        program_io(acc, prog, args, sc)
    acc.io.cwd = acc.cwd
    return acc.io
