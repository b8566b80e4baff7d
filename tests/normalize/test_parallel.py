"""GNU `parallel`'s jobs (`trajlab.normalize.parallel_jobs`), the one splitter behind tool normalization
and the DAG's data edges (tests/dag/test_shellio.py has the DAG side).

`test_tool_normalization_of_parallel_jobs` lists the calls where tool normalization's own splitter
(before the shared one) and the DAG's disagreed, or where both broke GNU parallel's rules: each row fails
on the old `_resolve._parallel`."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajlab.normalize import PARALLEL_MAX_JOBS, analyze_command, parallel_jobs
from trajlab.normalize._parallel import PARALLEL_MAX_CHARS

PY = ("parallel", "python")


@pytest.mark.parametrize(
    ("command", "tool", "programs", "modality"),
    [
        # replacement strings are replaced: the tool's arguments are the job's, not `{}`
        ("parallel python proc.py {} ::: a.wav", "python", PY, "audio"),
        ("parallel ffprobe {} ::: a.mp3", "ffprobe", ("parallel", "ffprobe"), "audio"),
        ("parallel cp {} out/ ::: a.png", "cp", ("parallel", "cp"), "image"),
        ("parallel -I @@ python proc.py @@ ::: a.wav", "python", PY, "audio"),  # -I renames {}
        # several sources: their product, positional {1} {2}; `:::+` links a source to the one before
        ("parallel ffmpeg -i {1} {2} ::: a.mp4 ::: a.wav", "ffmpeg", ("parallel", "ffmpeg"), "audio"),
        ("parallel ffmpeg -i {1} {2} ::: a.mp4 :::+ a.wav", "ffmpeg", ("parallel", "ffmpeg"), "audio"),
        # without a CMD each job's arguments are its command line (the values are not programs)
        ("parallel ::: ffprobe ::: a.mp4 b.mp4", "ffprobe", ("parallel", "ffprobe", "ffprobe"), "video"),
        # options before CMD: flags, values, bundles, other separators
        ("parallel --onall python proc.py {} ::: a.txt", "python", PY, "compute"),
        ("parallel --jl log.txt python proc.py {} ::: a.txt", "python", PY, "compute"),
        ("parallel -kj 4 python proc.py {} ::: a.txt", "python", PY, "compute"),
        ("parallel -s 1000 python proc.py {} ::: a.txt", "python", PY, "compute"),
        ("parallel --arg-sep ,, python proc.py {} ,, a.txt", "python", PY, "compute"),
        # a source with no argument runs no job
        ("parallel whisper {} :::", "parallel", ("parallel",), "compute"),
    ],
)
def test_tool_normalization_of_parallel_jobs(
    command: str, tool: str, programs: tuple[str, ...], modality: str
) -> None:
    info = analyze_command(command)
    assert (info.tool, info.programs, info.modality) == (tool, programs, modality)


def test_a_command_line_per_argument_is_listed_up_to_the_bound() -> None:
    info = analyze_command("parallel ::: " + " ".join(["'ls a'"] * 200))
    assert info.programs == ("parallel", *["ls"] * PARALLEL_MAX_JOBS)


@pytest.mark.parametrize(
    ("args", "jobs"),
    [
        ("gzip ::: a b", ["gzip a", "gzip b"]),  # no replacement string: the argument is appended
        ("gzip {} ::: 'my file'", ["gzip 'my file'"]),  # values are shell-quoted
        (
            "ffmpeg -i {} {.}.wav {/} {//} {/.} ::: d/a.mp4 /b.mkv c",
            [
                "ffmpeg -i d/a.mp4 d/a.wav a.mp4 d a",
                "ffmpeg -i /b.mkv /b.wav b.mkv / b",
                "ffmpeg -i c c.wav c . c",
            ],
        ),
        ("echo {#} ::: a b", ["echo 1", "echo 2"]),
        ("echo {1} {2} ::: a b ::: 1 2", ["echo a 1", "echo a 2", "echo b 1", "echo b 2"]),
        ("echo {} ::: a ::: 1", ["echo a 1"]),  # {} is all of the job's arguments
        ("echo ::: a ::: 1", ["echo a 1"]),
        ("echo {2.} {-1/} {3} ::: x ::: d/b.txt", ["echo d/b b.txt ''"]),
        ("echo {1} {2} ::: a b c :::+ 1 2", ["echo a 1", "echo b 2"]),  # linked: the shortest decides
        ("--link echo {1} {2} ::: a b c ::: 1 2", ["echo a 1", "echo b 2", "echo c 1"]),  # wraps around
        ("--xapply echo {1} {2} ::: a ::: 1 2", ["echo a 1", "echo a 2"]),
        ("::: 'ls a' 'ls b'", ["ls a", "ls b"]),  # no CMD: the arguments are the command lines
        ("::: ls ::: a b", ["ls a", "ls b"]),
        (
            "'{} --version' ::: python 'node js'",
            ["python --version", "node js --version"],
        ),  # leading: unquoted
        ("echo {%} {= $_++ =} ::: a", ["echo {%} {= $_++ =}"]),  # unknown values, not appended
        ("-I @@ mv @@ @@.bak ::: a", ["mv a a.bak"]),
        ("-I@@ echo @@ {} ::: a", ["echo a {}"]),  # `{}` is not a replacement string any more
        ("--er @ echo @ {.} ::: a.txt", ["echo a {.}"]),
        ("-i echo {} ::: a", ["echo a"]),
        ("--replace=X echo X ::: a", ["echo a"]),
        ("--jobs=4 -k --bar gzip ::: a", ["gzip a"]),
        ("-j4 --joblog log --halt now,fail=1 gzip ::: a", ["gzip a"]),
        ("-kj 4 -S host gzip ::: a", ["gzip a"]),
        ("--nonall --onall --pipe --shebang-wrap gzip ::: a", ["gzip a"]),
        ("--max-lines 2 gzip ::: a", ["gzip a"]),
        ("--max-lines gzip ::: a", ["gzip a"]),
        ("-- gzip ::: a", ["gzip a"]),
        ("--arg-sep ,, gzip ,, a ::: b", ["gzip a", "gzip :::", "gzip b"]),  # `:::` is an argument
        ("gzip ::: a :::", []),  # an empty source: no job
        ("gzip :::", []),
    ],
)
def test_jobs(args: str, jobs: list[str]) -> None:
    p = parallel_jobs(shlex.split(args))
    assert p.known
    assert list(p.jobs) == jobs


@pytest.mark.parametrize(
    ("args", "jobs", "files"),
    [
        ("ffprobe {}", ["ffprobe {}"], []),  # standard input: one stand-in job, CMD as written
        ("--pipe wc -l", ["wc -l"], []),
        ("-a list.txt python x.py {}", ["python x.py {}"], ["list.txt"]),
        ("--arg-file=list.txt gzip", ["gzip"], ["list.txt"]),
        ("gzip :::: a.txt - b.txt", ["gzip"], ["a.txt", "b.txt"]),
        ("gzip ::: a ::::+ b.txt", ["gzip"], ["b.txt"]),
        ("--arg-file-sep // gzip // a.txt", ["gzip"], ["a.txt"]),
        (":::: cmds.txt", [], ["cmds.txt"]),  # the command lines are in the file
        ("", [], []),
    ],
)
def test_arguments_not_in_the_line(args: str, jobs: list[str], files: list[str]) -> None:
    p = parallel_jobs(shlex.split(args))
    assert not p.known
    assert (list(p.jobs), list(p.arg_files)) == (jobs, files)


def test_the_bound_on_jobs_and_characters() -> None:
    product = parallel_jobs(shlex.split("echo " + " ".join(["::: a b c"] * 10)))
    assert len(product.jobs) == PARALLEL_MAX_JOBS  # 3**10 combinations, the first 64 made
    assert product.jobs[:2] == ("echo a a a a a a a a a a", "echo a a a a a a a a a b")
    assert len(parallel_jobs(["gzip", ":::", *map(str, range(1000))], max_jobs=3).jobs) == 3
    wide = parallel_jobs(["echo", *["{}"] * 5000, ":::", "x" * 1000, "y"])
    assert wide.jobs == () and sum(map(len, wide.jobs)) <= PARALLEL_MAX_CHARS  # one job would be 5 MB


_WORDS = st.one_of(
    st.sampled_from(
        [
            ":::",
            ":::+",
            "::::",
            "::::+",
            "--",
            "-",
            "-j",
            "-kj",
            "-I",
            "-i",
            "--arg-sep",
            "--arg-file-sep",
            "--link",
            "-a",
            "--replace",
            "--max-lines",
            "--er",
            "{}",
            "{.}",
            "{/}",
            "{//}",
            "{/.}",
            "{#}",
            "{%}",
            "{1}",
            "{-2/.}",
            "{0}",
            "{= x =}",
            "a.mp4",
            "d/b.wav",
            "'",
            '"',
            "$(ls)",
            ";",
            "|",
        ]
    ),
    st.text(max_size=12),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_WORDS, max_size=40))
def test_any_words_give_a_bounded_list_of_jobs(words: list[str]) -> None:
    p = parallel_jobs(words)
    assert len(p.jobs) <= PARALLEL_MAX_JOBS
    assert sum(map(len, p.jobs)) <= PARALLEL_MAX_CHARS
    assert all(isinstance(j, str) for j in p.jobs)
    assert p.known or len(p.jobs) <= 1
    info = analyze_command(shlex.join(["parallel", *words]))
    assert info.programs[:1] == ("parallel",)
