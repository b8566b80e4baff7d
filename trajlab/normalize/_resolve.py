"""The programs one simple command runs, looking through wrappers, launchers and containers.

Process wrappers run the command after their options and are not programs of the line: `sudo`, `env`
(also `env -S 'python -u'`), `timeout 30`, `nohup`, `nice`, `ionice`, `stdbuf`, `time -p`, `setsid`,
`unbuffer`, `xvfb-run`, `script -c CMD`, `watch CMD` and shells (`bash -lc '...'`). One with nothing to
run is the program itself (`env` prints the environment, `sudo -i` opens a shell).

Programs that run another program per input or in a container are listed along with it, and the
program they run is the tool: `xargs`, `find -exec`, GNU `parallel` (its jobs: see `_parallel`),
`docker`/`podman` `exec` and `run` (also `docker compose`), `kubectl exec POD -- CMD`. `ssh host CMD`
is not looked through: its command runs on another machine, so the call is ssh's (a network call).

Package and project runners name the program they run (`LAUNCHERS` in `_lexicon`): `npx tsc`, `pnpm
exec eslint`, `uvx ruff`, `uv run pytest`, `poetry run`, `conda run -n env python`. Where a project
script could stand instead (`yarn tsc` / `yarn build`, `pnpm vitest`, `yarn run`, `bun run`, `pdm run`,
`hatch run`, `pixi run`, `rye run`), only a well-known program (`KNOWN_PROGRAMS`) or a path counts as
the program; a script keeps the runner's name, as `npm run build` does.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ._lexicon import (
    ALIASES,
    COMPOSE_GLOBAL_OPTIONS,
    COMPOSE_OPTIONS,
    CONTAINER_CLIS,
    CONTAINER_EXEC_OPTIONS,
    CONTAINER_GLOBAL_OPTIONS,
    CONTAINER_RUN_OPTIONS,
    COREPACK_TOOLS,
    ENV_OPTIONS_WITH_VALUE,
    KEYWORDS_NOT_COMMAND,
    KEYWORDS_PREFIX,
    KNOWN_PROGRAMS,
    LAUNCHERS,
    PY_MODULES,
    PY_OPTIONS_WITH_VALUE,
    SCRIPT_OPTIONS_WITH_VALUE,
    SHELLS,
    SUDO_OPTIONS_WITH_VALUE,
    TIMEOUT_OPTIONS_WITH_VALUE,
    WATCH_OPTIONS_WITH_VALUE,
    WRAPPER_OPTIONS_WITH_VALUE,
    WRAPPERS_SIMPLE,
    XARGS_OPTIONS_WITH_VALUE,
)
from ._parallel import parallel_jobs
from ._shell import parse_shell

MAX_DEPTH = 6  # nested wrappers / `bash -c` levels looked through
_VERSIONED = re.compile(r"(python|pip|node|ruby|perl|php)[\d.]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", flags=re.S)

Resolved = list[tuple[str, list[str]]]
CONTAINER_RUNNERS = CONTAINER_CLIS | {"docker-compose", "kubectl"}
_SHELL_BUILTINS = frozenset({"exec", "command", "builtin"})  # alone (`exec >log 2>&1`) they run nothing
# Programs `_resolve` looks through or treats specially; every other program resolves to itself.
LOOKED_THROUGH = frozenset(
    {"sudo", "doas", "env", "timeout", "xargs", "find", "python", "parallel", "watch", "script", "corepack"}
    | set(LAUNCHERS)
    | CONTAINER_RUNNERS
    | WRAPPERS_SIMPLE
    | SHELLS
)


@lru_cache(maxsize=8192)
def program_name(word: str) -> str:
    base = word.rsplit("/", 1)[-1].lower()
    if base in ALIASES:
        return ALIASES[base]
    m = _VERSIONED.fullmatch(base)
    if m:
        return ALIASES.get(m.group(1), m.group(1))
    return base


def _skip_assignments(argv: list[str], i: int) -> int:
    while i < len(argv) and "=" in argv[i] and _ASSIGNMENT.fullmatch(argv[i]):
        i += 1
    return i


def skip_options(argv: list[str], i: int, with_value: frozenset[str] = frozenset()) -> int:
    """The index after the options from `i` on (and after a `--`); `with_value` options take the next word."""
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return i + 1
        i += 2 if argv[i] in with_value else 1
    return i


def _package_program(argv: list[str]) -> list[str]:
    """`ruff@0.5 check` -> `ruff check`: a package runner's `name@version` runs the program `name`."""
    if argv and "@" in argv[0][1:]:
        name, _, version = argv[0][1:].partition("@")
        if "/" not in version:  # `@scope/pkg` is a scoped name, not a version
            return [argv[0][0] + name, *argv[1:]]
    return argv


def _line(command: str, depth: int) -> Resolved:
    """The programs of a command line a program runs through a shell (`bash -c`, `watch`, `npx -c`)."""
    return [pa for sc in parse_shell(command).commands for pa in _resolve(sc.argv, depth + 1)]


def _wrapped(prog: str, rest: list[str], inner: list[str], depth: int) -> Resolved:
    """What wrapper `prog` runs (`inner`); a wrapper with nothing to run is the program (`env`, `sudo -i`)."""
    return _resolve(inner, depth + 1) or [(prog, rest)]


def _env(rest: list[str], depth: int) -> Resolved:
    j = 0
    while j < len(rest) and rest[j].startswith("-"):
        a = rest[j]
        if a == "--":
            j += 1
            break
        if a in ("-S", "--split-string") or a.startswith("--split-string="):  # `env -S 'python -u' x.py`
            split = a.partition("=")[2] if "=" in a else (rest[j + 1] if j + 1 < len(rest) else "")
            return _resolve(["env", *split.split(), *rest[j + (1 if "=" in a else 2) :]], depth + 1)
        j += 2 if a in ENV_OPTIONS_WITH_VALUE else 1  # a lone `-` is `-i`
    return _wrapped("env", rest, rest[j:], depth)


def _script(rest: list[str], depth: int) -> Resolved:
    """util-linux `script [options] [file]` runs `-c CMD` (default: a shell); BSD `script [options]
    [file [command ...]]` runs the words after the file."""
    j, file_seen = 0, False
    while j < len(rest):
        a = rest[j]
        if a.startswith("--command="):
            return _line(a.partition("=")[2], depth) or [("script", rest)]
        if a == "--command" or (a.startswith("-") and not a.startswith("--") and a.endswith("c")):
            return _line(rest[j + 1], depth) if j + 1 < len(rest) else [("script", rest)]
        if not a.startswith("-") or a == "-":
            if file_seen:
                return _wrapped("script", rest, rest[j:], depth)
            file_seen = True
        elif a in SCRIPT_OPTIONS_WITH_VALUE:
            j += 1
        j += 1
    return [("script", rest)]


def _parallel(rest: list[str], depth: int) -> Resolved:
    """GNU parallel runs its command (a shell command line: `parallel 'whisper {}' ::: *.mp3`) once per
    argument, and without one each argument is a command line (`_parallel.parallel_jobs` splits them).
    The programs of a command are listed once, resolved in its first job (`ffprobe a.mp3`, not `ffprobe
    {}`); those of each command line once per line."""
    p = parallel_jobs(rest)
    lines = p.jobs[:1] if p.command else p.jobs
    return [("parallel", rest), *(pa for line in lines for pa in _line(line, depth))]


def _option_value(words: list[str], name: str) -> str | None:
    """The value of `--name VALUE` / `--name=VALUE` among `words`, else None."""
    for k, w in enumerate(words):
        if w == name and k + 1 < len(words):
            return words[k + 1]
        if w.startswith(name + "="):
            return w[len(name) + 1 :]
    return None


def container_command(prog: str, args: list[str]) -> list[str] | None:
    """The command `docker exec C CMD`, `docker run [--entrypoint E] IMG CMD`, `docker compose exec|run
    SVC CMD` or `kubectl exec POD -- CMD` runs in a container, or None (`docker ps`, `docker run -d
    nginx`)."""
    if prog == "kubectl":
        k = args.index("exec") if "exec" in args else -1
        if k >= 0 and "--" in args[k:]:
            return args[args.index("--", k) + 1 :] or None
        return None
    compose = prog == "docker-compose"
    j = skip_options(args, 0, COMPOSE_GLOBAL_OPTIONS if compose else CONTAINER_GLOBAL_OPTIONS)
    if not compose and args[j : j + 1] == ["compose"]:
        compose, j = True, skip_options(args, j + 1, COMPOSE_GLOBAL_OPTIONS)
    elif not compose and args[j : j + 1] == ["container"]:
        j += 1
    if args[j : j + 1] not in (["exec"], ["run"]):
        return None
    opts = (
        COMPOSE_OPTIONS if compose else CONTAINER_EXEC_OPTIONS if args[j] == "exec" else CONTAINER_RUN_OPTIONS
    )
    k = skip_options(args, j + 1, opts)
    entrypoint = _option_value(args[j + 1 : k], "--entrypoint")
    command = [*(entrypoint or "").split(), *args[k + 1 :]]  # after the container, image or service
    if (
        command
        and program_name(command[0]) in SHELLS
        and all(a[:1] == "-" and "c" not in a for a in command[1:])
    ):
        return None  # an interactive shell (`docker run -it ubuntu bash`): the call is docker's
    return command or None


def _launcher_options(prog: str, rest: list[str], i: int) -> int:
    """The index after a runner's options from `i` on, or of an option that says what it runs (`npx -c
    CMD`, `uv run -m MOD`, see `_launched_by_option`)."""
    spec = LAUNCHERS[prog]
    while i < len(rest) and rest[i].startswith("-") and rest[i] != "-":
        a = rest[i]
        if a == "--":
            return i + 1
        if _launched_by_option(prog, a):
            return i
        i += 2 if a in spec.options else 1
    return i


def _launched_by_option(prog: str, option: str) -> bool:
    spec = LAUNCHERS[prog]
    return (spec.call and (option in ("-c", "--call") or option.startswith("--call="))) or (
        spec.python and option in ("-m", "--module")
    )


def _launch(prog: str, rest: list[str], depth: int) -> Resolved | None:
    """The programs a package or project runner runs (`npx tsc`, `yarn tsc`, `pdm run pytest`), or None
    when it runs only its own command or a project script (`yarn add x`, `yarn build`, `npm run lint`)."""
    spec = LAUNCHERS[prog]
    i = _launcher_options(prog, rest, 0)
    if prog == "yarn" and rest[i : i + 1] == ["workspace"] and len(rest) > i + 2:
        return _launch(prog, rest[i + 2 :], depth)  # `yarn workspace web tsc`: `yarn tsc` in workspace web
    run = next((v for v in spec.runs if tuple(rest[i : i + len(v)]) == v), None)
    if run is not None:
        i += len(run)
    elif rest[i : i + 1] and rest[i] in spec.scripts:
        i += 1
    elif not (spec.verbs and i < len(rest) and rest[i] not in spec.verbs):  # `yarn tsc`, not `yarn add`
        return None
    i = _launcher_options(prog, rest, i)
    if i < len(rest) and _launched_by_option(prog, rest[i]):
        a = rest[i]
        if a in ("-m", "--module"):  # `uv run -m pytest`
            return _resolve(["python", "-m", *rest[i + 1 :]], depth + 1)
        # `npx -c 'tsc && eslint .'`, `pnpm exec -c ...` (the words after it are one command line)
        return _line(a.partition("=")[2] if "=" in a else " ".join(rest[i + 1 :]), depth) or None
    argv = _package_program(rest[i:]) if run is not None else rest[i:]
    if not argv:
        return None
    if spec.env_prefix and ":" in argv[0]:  # `hatch run test:pytest`: pytest in environment `test`
        argv = [argv[0].partition(":")[2], *argv[1:]]
    if spec.python and (argv[0].endswith(".py") or argv[0] == "-"):  # `uv run x.py`: `uv run python x.py`
        return _resolve(["python", *argv], depth + 1)
    if run is None and "/" not in argv[0] and program_name(argv[0]) not in KNOWN_PROGRAMS:
        return None  # a project script: `yarn build`, `pdm run lint`
    return _resolve(argv, depth + 1)


def resolve(argv: list[str]) -> Resolved:
    """Programs run by one simple command: [(program, its args)], looking through wrappers."""
    return _resolve(argv)


def _resolve(argv: list[str], depth: int = 0) -> Resolved:
    i = _skip_assignments(argv, 0)
    while i < len(argv) and argv[i] in KEYWORDS_PREFIX:
        if argv[i] == "time" and argv[i + 1 : i + 2] and argv[i + 1].startswith("-"):
            break  # `time -p cmd`: `time` with options, looked through as a wrapper below
        i = _skip_assignments(argv, i + 1)
    if i >= len(argv) or depth > MAX_DEPTH or argv[i] in KEYWORDS_NOT_COMMAND:
        return []
    prog = program_name(argv[i])
    rest = argv[i + 1 :]
    if prog not in LOOKED_THROUGH:  # most programs: none of the cases below
        return [(prog, rest)]
    if prog in ("sudo", "doas"):
        return _wrapped(prog, rest, rest[skip_options(rest, 0, SUDO_OPTIONS_WITH_VALUE) :], depth)
    if prog == "env":
        return _env(rest, depth)
    if prog == "timeout":  # the duration follows the options
        return _wrapped(prog, rest, rest[skip_options(rest, 0, TIMEOUT_OPTIONS_WITH_VALUE) + 1 :], depth)
    if prog in WRAPPERS_SIMPLE:
        j = skip_options(rest, 0, WRAPPER_OPTIONS_WITH_VALUE[prog])
        if prog == "command" and any("v" in o or "V" in o for o in rest[:j] if o != "--"):
            return [("command", rest)]  # `command -v python` looks python up (like `which`), runs nothing
        if prog in _SHELL_BUILTINS:
            return _resolve(rest[j:], depth + 1)
        return _wrapped(prog, rest, rest[j:], depth)
    if prog == "watch":  # runs its command through `sh -c`, or directly with `-x`
        j = skip_options(rest, 0, WATCH_OPTIONS_WITH_VALUE)
        if any(o in ("-x", "--exec") for o in rest[:j]):
            return _wrapped(prog, rest, rest[j:], depth)
        return _line(" ".join(rest[j:]), depth) or [(prog, rest)]
    if prog == "script":
        return _script(rest, depth)
    if prog == "xargs":
        j = skip_options(rest, 0, XARGS_OPTIONS_WITH_VALUE)
        return [("xargs", rest), *_resolve(rest[j:], depth + 1)]
    if prog == "find":
        out: Resolved = [("find", rest)]
        for k, a in enumerate(rest):
            if a in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((m for m in range(k + 1, len(rest)) if rest[m] in (";", "+")), len(rest))
                out += _resolve(rest[k + 1 : end], depth + 1)
        return out
    if prog == "parallel":
        return _parallel(rest, depth)
    if prog in CONTAINER_RUNNERS:
        command = container_command(prog, rest)
        return [(prog, rest), *(_resolve(command, depth + 1) if command else ())]
    if prog == "corepack":  # `corepack yarn@4 tsc` runs yarn
        argv = _package_program(rest)
        return (_resolve(argv, depth + 1) if argv and program_name(argv[0]) in COREPACK_TOOLS else None) or [
            (prog, rest)
        ]
    if prog in LAUNCHERS:
        return _launch(prog, rest, depth) or [(prog, rest)]
    if prog in SHELLS:
        for k, a in enumerate(rest):
            if a.startswith("-") and not a.startswith("--") and "c" in a[1:]:
                if k + 1 < len(rest):
                    return _line(rest[k + 1], depth)
                break
        return [(prog, rest)]
    if prog == "python":
        j = 0
        while j < len(rest) and rest[j].startswith("-") and rest[j] != "-":
            if rest[j] == "-m" and j + 1 < len(rest):
                mod = rest[j + 1]
                target = PY_MODULES.get(mod, PY_MODULES.get(mod.split(".")[0]))
                if target and target != "python":
                    return [(target, rest[j + 2 :])]
                return [("python", rest)]
            if rest[j] == "-c":
                break
            j += 2 if rest[j] in PY_OPTIONS_WITH_VALUE else 1
        return [("python", rest)]
    return [(prog, rest)]
