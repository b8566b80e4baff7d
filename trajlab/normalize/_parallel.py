"""The jobs of one GNU `parallel` call: the command lines `parallel [options] CMD SOURCES` runs.

One splitter for both of its readers: tool normalization (which program a call runs, `_resolve`) and the
DAG's data edges (what each job reads and writes, `trajlab.dag._shellio`). The rules, after GNU
parallel's manual:

* Options come before CMD; those of `PARALLEL_OPTIONS_WITH_VALUE` take the next word (`-j 4`, `--joblog
  FILE`, `-S host`), or an attached one (`-j4`, `--jobs=4`); short flags bundle (`-kj 4`); `--` ends them.
  `--onall`, `--nonall`, `--pipe`, `--link` and the like are flags.
* CMD is the words up to the first separator, joined by spaces (a shell command line). Each `:::` is
  followed by an input source of arguments; `::::` by files of arguments, as `-a FILE` is; `:::+` and
  `::::+` link a source to the one before (their values are paired, the shortest decides the count).
  `--arg-sep` / `--arg-file-sep` rename the separators. Several sources form their cartesian product, the
  first source varying slowest (`::: a b ::: 1 2`: a 1, a 2, b 1, b 2); `--link` pairs all sources, the
  shorter ones wrapping around.
* A job is CMD with its replacement strings replaced by the job's arguments, each shell-quoted: `{}` (all
  its arguments), `{.}` (without the extension), `{/}` (basename), `{//}` (dirname), `{/.}` (basename
  without the extension), `{#}` (job number), the positional `{1}`, `{2.}`, `{-1/}`... (the value of source
  n); `-I STR`, `--er`, `--bnr`, `--dnr`, `--bner`, `--seqreplace` rename them. A leading replacement
  string is not quoted (`parallel '{} --version' ::: python node`). `{%}` (job slot) and `{= perl =}` are
  left as written. A CMD with no replacement string gets the arguments appended (`parallel gzip ::: a`
  runs `gzip a`); with no CMD the arguments are the command line (`parallel ::: 'ls a' 'ls b'`).
* Arguments that are not in the line (standard input, `::::` and `-a` files, `--pipe` blocks) give one
  stand-in job, CMD as written (`ls | parallel ffprobe {}` runs `ffprobe {}`), or none without a CMD; the
  files they are read from are `arg_files`.

One argument per job is modeled (`-N`, `-X`, `-m` put several into one job), and `-S host` jobs are taken
as local ones. At most `PARALLEL_MAX_JOBS` jobs of `PARALLEL_MAX_CHARS` characters in all are made
(`::: *.mp3` is one glob word, so one job).
"""

from __future__ import annotations

import itertools
import posixpath
import re
import shlex
from collections.abc import Iterator
from typing import NamedTuple

from ._lexicon import PARALLEL_OPTIONS_OPTIONAL_VALUE, PARALLEL_OPTIONS_WITH_VALUE

PARALLEL_MAX_JOBS = 64
PARALLEL_MAX_CHARS = 1 << 20
_RENAMES = {  # an option that renames a replacement string -> the string it renames
    "-I": "{}",
    "-i": "{}",
    "--replace": "{}",
    "--extensionreplace": "{.}",
    "--er": "{.}",
    "--basenamereplace": "{/}",
    "--bnr": "{/}",
    "--dirnamereplace": "{//}",
    "--dnr": "{//}",
    "--basenameextensionreplace": "{/.}",
    "--bner": "{/.}",
    "--seqreplace": "{#}",
    "--slotreplace": "{%}",
}
_LINK = frozenset(["--link", "--xapply"])
_POSITIONAL = r"\{(-?\d+)(\.|/|//|/\.)?\}"
_UNKNOWN = r"\{=.*?=\}"  # a perl expression: its value is not known here


class ParallelJobs(NamedTuple):
    command: str
    """CMD, the words after the options up to the first separator, joined by spaces ("" when none)."""
    jobs: tuple[str, ...]
    """The command lines of the jobs, at most `PARALLEL_MAX_JOBS`; CMD itself when `known` is false."""
    arg_files: tuple[str, ...]
    """Files the arguments are read from (`:::: FILE`, `-a FILE`; not `-`, standard input)."""
    known: bool
    """Every argument is in the line (`:::` sources only), so `jobs` are the real jobs."""


class _Budget(Exception):
    """The jobs made so far reached `PARALLEL_MAX_CHARS`."""


class _Options(NamedTuple):
    end: int  # index after the options
    arg_sep: str
    file_sep: str
    link: bool
    arg_files: list[str]
    strings: dict[str, str]  # replacement string as written -> the built-in one it stands for


def _optional_value(name: str, word: str | None) -> bool:
    """Whether an option of optional value takes the next word: a number for `--max-lines`, else a word
    that is not an option (as Perl's Getopt::Long does)."""
    if word is None or name not in PARALLEL_OPTIONS_OPTIONAL_VALUE:
        return False
    return word.isdigit() if name == "--max-lines" else not word.startswith("-")


def _options(args: list[str]) -> _Options:
    arg_sep, file_sep, link = ":::", "::::", False
    files: list[str] = []
    renamed: dict[str, str] = {}  # built-in -> as written

    def take(name: str, value: str) -> None:
        nonlocal arg_sep, file_sep, link
        if name in ("-a", "--arg-file"):
            files.append(value)
        elif name == "--arg-sep":
            arg_sep = value
        elif name == "--arg-file-sep":
            file_sep = value
        elif name in _LINK:
            link = True
        elif name in _RENAMES:
            renamed[_RENAMES[name]] = value or "{}"

    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            if not eq and (name in PARALLEL_OPTIONS_WITH_VALUE or _optional_value(name, nxt)):
                value, i = nxt or "", i + 1
            take(name, value)
        else:  # bundled short options: `-kj4`, `-kj 4`, `-I{}`
            for k in range(1, len(a)):
                name = "-" + a[k]
                if name in PARALLEL_OPTIONS_WITH_VALUE:
                    if k + 1 < len(a):
                        take(name, a[k + 1 :])
                    else:
                        take(name, nxt or "")
                        i += 1
                    break
                if name in PARALLEL_OPTIONS_OPTIONAL_VALUE:
                    take(name, a[k + 1 :])
                    break
                take(name, "")
        i += 1
    strings = {s: s for s in ("{}", "{.}", "{/}", "{//}", "{/.}", "{#}", "{%}")}  # as written -> built-in
    for builtin, written in renamed.items():
        strings = {k: v for k, v in strings.items() if v != builtin}
        strings[written] = builtin
    return _Options(min(i, len(args)), arg_sep, file_sep, link, files, strings)


def _records(sources: list[tuple[bool, list[str]]], link: bool) -> Iterator[tuple[str, ...]]:
    """Each job's arguments, one per source: the product of the groups of linked sources."""
    if any(not values for _, values in sources):
        return iter(())
    if link:  # `--link`: one group, the shorter sources wrap around
        n = max(len(values) for _, values in sources)
        return zip(*(itertools.islice(itertools.cycle(values), n) for _, values in sources))
    groups: list[list[list[str]]] = []
    for linked, values in sources:
        if linked and groups:
            groups[-1].append(values)
        else:
            groups.append([values])
    return (tuple(v for rec in combo for v in rec) for combo in itertools.product(*(zip(*g) for g in groups)))


def _strip_ext(v: str) -> str:
    return re.sub(r"\.[^/.]+\Z", "", v)


def _transform(kind: str, v: str) -> str:
    if kind == "{.}":
        return _strip_ext(v)
    if kind == "{/}":
        return v.rsplit("/", 1)[-1]
    if kind == "{//}":
        return posixpath.dirname(v) or "."
    if kind == "{/.}":
        return _strip_ext(v.rsplit("/", 1)[-1])
    return v


_POSITIONAL_KIND = {None: "{}", ".": "{.}", "/": "{/}", "//": "{//}", "/.": "{/.}"}


def parallel_jobs(args: list[str], max_jobs: int = PARALLEL_MAX_JOBS) -> ParallelJobs:
    """The jobs of `parallel ARGS` (the words after `parallel`); the rules are in the module docstring."""
    opts = _options(args)
    seps = {opts.arg_sep: (False, False), opts.arg_sep + "+": (False, True)}
    seps |= {opts.file_sep: (True, False), opts.file_sep + "+": (True, True)}
    j = opts.end
    end = next((k for k in range(j, len(args)) if args[k] in seps), len(args))
    command = " ".join(args[j:end])
    files = list(opts.arg_files)  # `-a` sources come first: their arguments are not in the line
    sources: list[tuple[bool, list[str]]] = []
    known = end < len(args) and not files
    k = end
    while k < len(args):
        from_files, linked = seps[args[k]]
        k += 1
        start = k
        while k < len(args) and args[k] not in seps:
            k += 1
        if from_files:
            files += args[start:k]
            known = False
        sources.append((linked, args[start:k]))
    arg_files = tuple(f for f in files if f and f != "-")
    if not known:
        return ParallelJobs(command, (command,) if command and max_jobs > 0 else (), arg_files, False)
    strings = opts.strings
    pattern = re.compile(
        "|".join(
            [*(re.escape(s) for s in sorted(strings, key=len, reverse=True) if s), _POSITIONAL, _UNKNOWN]
        )
    )
    has_strings = pattern.search(command) is not None
    jobs: list[str] = []
    used = 0  # characters of the jobs made so far

    def spend(text: str) -> str:
        nonlocal used
        used += len(text)
        if used > PARALLEL_MAX_CHARS:
            raise _Budget
        return text

    for n, rec in enumerate(itertools.islice(_records(sources, opts.link), max(0, max_jobs)), 1):

        def replace(m: re.Match[str], rec: tuple[str, ...] = rec, n: int = n) -> str:
            quote = shlex.quote if m.start() > 0 else str  # a leading replacement string is not quoted
            if m.group(1) is not None:  # positional: {2}, {-1.}
                p = int(m.group(1))
                values = [rec[p - 1 if p > 0 else p]] if 0 < abs(p) <= len(rec) else [""]
                kind = _POSITIONAL_KIND[m.group(2)]
            else:
                kind = strings.get(m.group(0), "")
                if kind == "{#}":
                    return spend(str(n))
                if kind not in _POSITIONAL_KIND.values():
                    return spend(m.group(0))  # {%}, {= perl =}: left as written
                values = list(rec)
            return spend(" ".join(quote(_transform(kind, v)) for v in values))

        before = used
        try:
            if not command:
                job = " ".join(rec)
            elif has_strings:
                job = pattern.sub(replace, command)  # `spend` stops a job that grows past the budget
            else:
                job = f"{command} {' '.join(shlex.quote(v) for v in rec)}"
            used = before
            spend(job)
        except _Budget:
            break
        jobs.append(job)
    return ParallelJobs(command, tuple(jobs), arg_files, True)
