"""The read/write rules for shell commands, one documented rule per case."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajlab.dag._programs import patch_targets
from trajlab.dag._shellio import fast_parse, shell_io
from trajlab.normalize import PARALLEL_MAX_JOBS, parse_shell


@pytest.mark.parametrize(
    ("command", "produced", "consumed"),
    [
        ("echo hi > out.txt", [("out.txt", "redirect")], []),
        ("python3 solve.py >> log.txt 2>&1", [("log.txt", "redirect")], []),
        ("cat > compute.py <<'EOF'\nprint(1)\nEOF", [("compute.py", "heredoc-write")], []),
        ("sort data.csv | tee sorted.csv", [("sorted.csv", "tee")], ["data.csv"]),
        ("gcc -O2 -o app main.c", [("app", "output-flag")], ["main.c"]),
        ("pandoc notes.md --output=notes.pdf", [("notes.pdf", "output-flag")], ["notes.md"]),
        (
            "ffmpeg -hide_banner -i clip.mp4 -vf fps=1 frames/%03d.png",
            [("frames/%03d.png", "ffmpeg-output")],
            ["clip.mp4"],
        ),
        ("ffmpeg -y -i a.mp4 -vn -ac 1 -ar 16000 audio.wav", [("audio.wav", "ffmpeg-output")], ["a.mp4"]),
        (
            "whisper audio.wav --model small --output_format txt --output_dir transcripts",
            [("transcripts/audio.txt", "whisper-output")],
            ["audio.wav"],
        ),
        ("tesseract page.png out -l eng", [("out.txt", "tesseract-output")], ["page.png"]),
        ("tesseract frames/0042.png - --psm 6", [], ["frames/0042.png"]),
        ("cp a.txt backup/", [("backup/a.txt", "copy-dest")], ["a.txt"]),
        ("mv draft.md final.md", [("final.md", "copy-dest")], ["draft.md"]),
        ("touch done.flag", [("done.flag", "touch")], []),
        ("curl -sL https://example.com/data.csv -o data.csv", [("data.csv", "download")], []),
        ("wget https://example.com/files/report.pdf", [("report.pdf", "download")], []),
        ("tar czf out.tgz src/main.py", [("out.tgz", "archive")], ["src/main.py"]),
        ("pdftoppm -png doc.pdf page", [("page-*.png", "convert-output")], ["doc.pdf"]),
        ("pdftotext doc.pdf", [("doc.txt", "convert-output")], ["doc.pdf"]),
        ("convert in.png -resize 50% out.png", [("out.png", "convert-output")], ["in.png"]),
        ("sed -i 's/a/b/' conf.ini", [("conf.ini", "sed-in-place")], []),
        (
            "python3 -c \"open('res.txt','w').write(str(open('in.csv').read()))\"",
            [("res.txt", "code-write")],
            ["in.csv"],
        ),
        (
            "sudo -u app timeout 30 bash -lc 'grep -n foo src/a.py > hits.txt'",
            [("hits.txt", "redirect")],
            ["src/a.py"],
        ),
        ("wc -l $(ls data/*.csv) < input.txt", [], ["input.txt", "data/*.csv"]),
    ],
)
def test_rules(command: str, produced: list[tuple[str, str]], consumed: list[str]) -> None:
    io = shell_io(command, None)
    assert io.produced == produced
    assert sorted(io.consumed) == sorted(consumed)


def test_cd_and_workdir_resolve_relative_paths() -> None:
    io = shell_io("cd /app && python solve.py input.csv > result.txt", None)
    assert io.produced == [("/app/result.txt", "redirect")]
    assert io.consumed == ["/app/input.csv"]
    assert io.scripts == ["/app/solve.py"]
    assert io.cwd == "/app"
    assert shell_io("cat notes/../a.txt", "/w").consumed == ["/w/a.txt"]


def test_scripts_dirs_urls_and_deletions() -> None:
    assert shell_io("bash run.sh", None).scripts == ["run.sh"]
    assert shell_io("./tools/build.sh --fast", None).scripts == ["tools/build.sh"]
    assert shell_io("mkdir -p frames", None).produced_dirs == [("frames", "mkdir")]
    io = shell_io("ls frames | wc -l", None)
    assert io.words == ["frames"] and io.lists_dir == "frames"
    assert shell_io("git clone https://github.com/x/y.git", None).produced_dirs == [("y", "clone")]
    assert shell_io("curl https://example.com/a?b=1", None).urls == ["https://example.com/a?b=1"]
    assert shell_io("rm -rf build tmp.txt", None).deleted == ["build", "tmp.txt"]


def test_apply_patch_targets() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** Add File: b/c.py\n+1\n*** Delete File: old.py\n*** End Patch"
    assert patch_targets(patch) == [("a.py", "update"), ("b/c.py", "add"), ("old.py", "delete")]
    io = shell_io(f"apply_patch <<'EOF'\n{patch}\nEOF", "/w")
    assert io.produced == [("/w/a.py", "apply-patch"), ("/w/b/c.py", "apply-patch")]
    assert io.edits == ["/w/a.py", "/w/old.py"] and io.deleted == ["/w/old.py"]


@pytest.mark.parametrize(
    "line",
    [
        "ls -la /x",
        "ls | wc -l",
        "grep -n 'a b' f.txt && echo ok",
        "cat <<EOF > f\nx\nEOF",
        "echo $(date) > d",
    ],
)
def test_fast_parse_matches_parse_shell(line: str) -> None:
    a, b = parse_shell(line), fast_parse(line)
    assert [(c.argv, c.redirects, c.heredocs) for c in a.commands] == [
        (c.argv, c.redirects, c.heredocs) for c in b.commands
    ]


@pytest.mark.parametrize(
    ("command", "produced", "consumed", "scripts"),
    [
        ("xvfb-run -a python3 render.py > shot.txt", [("shot.txt", "redirect")], [], ["render.py"]),
        ("setsid ffmpeg -y -i a.mp4 a.wav", [("a.wav", "ffmpeg-output")], ["a.mp4"], []),
        ("uv run python calc.py", [], [], ["calc.py"]),
        ("uv run calc.py", [], [], ["calc.py"]),
        ("poetry run python -m tool.main data.csv", [], ["data.csv"], ["tool/main.py"]),
        ('script -qc "python3 a.py" /dev/null', [], [], ["a.py"]),
        ("watch -n 5 tail -n 3 log.txt", [], ["log.txt"], []),
        (
            "parallel -j2 ffmpeg -y -i {} {.}.wav ::: x.mp4 clips/y.mp4",
            [("x.wav", "ffmpeg-output"), ("clips/y.wav", "ffmpeg-output")],
            ["x.mp4", "clips/y.mp4"],
            [],
        ),
        ("parallel gzip -k ::: a.txt", [], ["a.txt"], []),
        ("parallel -j4 echo :::: list.txt", [], ["list.txt"], []),
        ("parallel ::: 'tesseract p1.png - ' 'tesseract p2.png -'", [], ["p1.png", "p2.png"], []),
    ],
)
def test_wrappers_tool_normalization_looks_through(
    command: str, produced: list[tuple[str, str]], consumed: list[str], scripts: list[str]
) -> None:
    io = shell_io(command, None)
    assert io.produced == produced
    assert sorted(io.consumed) == sorted(consumed)
    assert io.scripts == scripts


@pytest.mark.parametrize(
    ("command", "produced", "consumed", "scripts"),
    [
        # arguments not in the line (standard input, `-a`, `::::`, `--pipe`): CMD as written is looked
        # through, and the argument files are read
        ("ls *.txt | parallel python proc.py {}", [], ["*.txt"], ["proc.py"]),
        ("parallel -a list.txt python proc.py {}", [], ["list.txt"], ["proc.py"]),
        ("parallel python proc.py {} :::: list.txt", [], ["list.txt"], ["proc.py"]),
        ("cat big.csv | parallel --pipe python count.py", [], ["big.csv"], ["count.py"]),
        # several sources: their product, positional {1} {2}; `:::+` links a source to the one before
        ("parallel ::: ffprobe ::: a.mp4 b.mp4", [], ["a.mp4", "b.mp4"], []),
        ("parallel ffmpeg -i {1} {2} ::: a.mp4 ::: a.wav", [("a.wav", "ffmpeg-output")], ["a.mp4"], []),
        (
            "parallel ffmpeg -i {1} {2} ::: a.mp4 b.mp4 :::+ a.wav b.wav",
            [("a.wav", "ffmpeg-output"), ("b.wav", "ffmpeg-output")],
            ["a.mp4", "b.mp4"],
            [],
        ),
        ("parallel gzip -k {} :::+ a.txt", [], ["a.txt"], []),
        ("parallel -I @@ ffmpeg -i @@ @@.wav ::: a.mp4", [("a.mp4.wav", "ffmpeg-output")], ["a.mp4"], []),
        # options before CMD: flags, values, bundles, other separators
        ("parallel --onall python proc.py {} ::: a.txt", [], ["a.txt"], ["proc.py"]),
        ("parallel --jl log.txt python proc.py {} ::: a.txt", [], ["a.txt"], ["proc.py"]),
        ("parallel -kj 4 python proc.py {} ::: a.txt", [], ["a.txt"], ["proc.py"]),
        ("parallel -s 1000 python proc.py {} ::: a.txt", [], ["a.txt"], ["proc.py"]),
        ("parallel --arg-sep ,, python proc.py {} ,, a.txt", [], ["a.txt"], ["proc.py"]),
    ],
)
def test_parallel_jobs_read_and_write(
    command: str, produced: list[tuple[str, str]], consumed: list[str], scripts: list[str]
) -> None:
    """The jobs of GNU parallel (`trajlab.normalize.parallel_jobs`, the splitter tool normalization
    uses): each row failed with the DAG's own splitter, from before the shared one."""
    io = shell_io(command, None)
    assert (io.produced, sorted(io.consumed), io.scripts) == (produced, sorted(consumed), scripts)


_PARALLEL_WORDS = st.one_of(
    st.sampled_from(
        [
            ":::",
            ":::+",
            "::::",
            "::::+",
            "--",
            "-j",
            "-kj",
            "-I",
            "-a",
            "--link",
            "{}",
            "{.}",
            "{//}",
            "{1}",
            "{-1/.}",
            "{#}",
            "a.mp4",
            "d/b.wav",
            "x.py",
            "python",
            "ffmpeg",
            "-i",
            "-o",
            ">",
            "'",
            "$(ls)",
            ";",
        ]
    ),
    st.text(max_size=10),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PARALLEL_WORDS, max_size=30))
def test_any_parallel_words_give_a_bounded_expansion(words: list[str]) -> None:
    from trajlab.dag._shellio import _commands

    command = shlex.join(["parallel", *words])
    shell_io(command, None)
    # at most one command per job, or a few where the words hold command separators (`;`, `|`, `&`, and
    # the parentheses of a subshell: `parallel '0)' ::: a` runs `0` then `a`), plus `cat` of the files
    separators = sum(command.count(c) for c in ";|&()\n")
    assert len(_commands(command)) <= PARALLEL_MAX_JOBS * (1 + separators) + 1


def test_container_commands_are_not_resolved_to_host_paths() -> None:
    # the paths of `docker exec` run inside the container: no host file is written by it
    io = shell_io("docker exec box python3 /app/solve.py > /app/out.txt", None)
    assert io.scripts == []
    assert io.produced == [("/app/out.txt", "redirect")]  # the redirection is the host shell's


@pytest.mark.parametrize(
    "command",
    [
        "xvfb-run -a python3 render.py",
        "setsid nohup ffmpeg -i a.mp4 b.wav",
        "uv run pytest -q",
        "npx tsc -p .",
        "poetry run python x.py",
        "pdm run pytest",
        'script -qc "whisper a.wav" /dev/null',
        "watch -n 1 ls frames",
        "caffeinate -i python3 long.py",
        "corepack pnpm install",
        "conda run -n env python a.py",
        "parallel whisper {} ::: a.mp3",
        "ls *.mp4 | parallel --bar ffprobe {}",
        "parallel -a list.txt whisper {}",
        "parallel --jl log.txt whisper {} ::: a.mp3",
    ],
)
def test_dag_sees_the_program_tool_normalization_names(command: str) -> None:
    """The DAG rules and the `tool` column resolve wrappers the same way (one resolver)."""
    from trajlab.dag._shellio import _commands
    from trajlab.normalize import analyze_command

    dag_programs = [p for p, _, _ in _commands(command)]
    assert dag_programs and dag_programs[-1] == analyze_command(command).tool


@pytest.mark.parametrize(
    ("command", "programs", "consumed"),
    [
        ("find frames -name '*.png' -exec tesseract {} - \\;", ["find", "tesseract"], ["frames/*.png"]),
        ("find . -name '*.mp4' -exec ffprobe -v error {} \\;", ["find", "ffprobe"], ["*.mp4"]),
        ("find /d/a /d/b -iname '*.wav'", ["find"], ["/d/a/*.wav", "/d/b/*.wav"]),
        ("find src -type f -name '*.py' -print", ["find"], ["src/*.py"]),
        ("find . -path './tr/*.txt' -exec grep -l total {} +", ["find", "grep"], ["tr/*.txt"]),
        ("find", ["find"], []),
        ("find frames -exec", ["find"], []),  # a cut-off expression: no command, no crash
    ],
)
def test_find_reads_its_folders_patterns_and_runs_its_exec_commands(
    command: str, programs: list[str], consumed: list[str]
) -> None:
    from trajlab.dag._shellio import _commands

    assert [p for p, _, _ in _commands(command)] == programs
    assert sorted(set(shell_io(command, None).consumed)) == sorted(consumed)
