"""Output and input paths a careless user gives the writing commands: a file where a folder is
expected, a folder without the file it should hold, the lab's own files, empty or out-of-range values.

Each case fails with a one-line message naming the option and the path at fault, no traceback, and
nothing written into the lab.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_harness import example_lab, fails, run, snapshot


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("outpaths")
    example_lab(root)
    return root


@pytest.fixture()
def lab(base: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "lab"
    shutil.copytree(base / "lab", dst, symlinks=True)
    return dst


@pytest.fixture()
def afile(tmp_path: Path) -> Path:
    f = tmp_path / "afile"
    f.write_text("just a file\n")
    return f


def _trajectory(lab: Path) -> str:
    r = run("sql", str(lab), "select trajectory_id from trajectories limit 1", "--format", "json")
    return json.loads(r.stdout)[0]["trajectory_id"]


def test_dag_export_refuses_the_labs_own_files(lab: Path) -> None:
    """`dag export -o LAB/lab.json` replaced the manifest with a DAG and the lab no longer opened."""
    traj = _trajectory(lab)
    before = snapshot(lab)
    for target in (lab / "lab.json", lab / "steps" / "d.json"):
        err = fails("dag", "export", str(lab), traj, "-o", str(target))
        assert f"--out {target}: refusing to write into the lab's own files ({lab.resolve()})" in err
    assert snapshot(lab) == before
    assert run("sql", str(lab), "select 1").code == 0
    out = lab.parent / "d.json"
    assert run("dag", "export", str(lab), traj, "-o", str(out)).code == 0
    assert json.loads(out.read_text())


def test_negative_counts_are_refused(lab: Path) -> None:
    traj = _trajectory(lab)
    err = fails("dag", "show", str(lab), traj, "--max-output", "-5", code=2)
    assert "Invalid value for '--max-output': -5 is not in the range x>=0." in err
    err = fails("figures", str(lab), "--out", str(lab.parent / "f"), "--workers", "0", code=2)
    assert "Invalid value for '--workers': 0 is not in the range x>=1." in err
    out = lab.parent / "ex"
    for args, option in (
        (("--tasks", "0"), "--tasks"),
        (("--tasks", "-1"), "--tasks"),
        (("--runs-per-task", "0"), "--runs-per-task"),
        (("--runs-per-task", "-2"), "--runs-per-task"),
    ):
        err = fails("examples", str(out), *args, code=2)
        assert f"Invalid value for '{option}': {args[1]} is not in the range x>=1." in err
    assert not out.exists()
    for args, option in ((("--tasks", "-1"), "--tasks"), (("-j", "0"), "--workers")):
        err = fails("demo", "-o", str(lab.parent / "demo"), "-q", *args, code=2)
        assert f"Invalid value for '{option}'" in err, err
    assert not (lab.parent / "demo").exists()


@pytest.mark.parametrize("command", ["figures", "tables"])
def test_figure_and_table_folders(lab: Path, afile: Path, command: str) -> None:
    before = snapshot(lab)
    assert "is a file" in fails(command, str(lab), "--out", str(afile), "--only", "tool_gaps", code=2)
    err = fails(command, str(lab), "--out", str(afile / "sub"), "--only", "tool_gaps")
    assert f"--out {afile / 'sub'}: {afile} is a file, not a folder" in err
    for out in (lab, lab / "steps"):
        err = fails(command, str(lab), "--out", str(out), "--only", "tool_gaps")
        assert f"--out {out}: refusing to write into the lab's own files" in err
    assert snapshot(lab) == before


def test_empty_format_lists(lab: Path) -> None:
    out = lab.parent / "o"
    err = fails("tables", str(lab), "--out", str(out), "--format", "")
    assert "--format '': give at least one of latex, markdown" in err
    err = fails("figures", str(lab), "--out", str(out), "--format", " , ")
    assert "--format ' , ': give at least one of pdf, png, svg" in err
    assert not out.exists()
    r = run("tables", str(lab), "--out", str(out), "--only", "tool_gaps", "--format", "markdown")
    assert r.code == 0 and (out / "tool_gaps.md").exists()


def test_ground_truth_folders(lab: Path, base: Path, afile: Path, tmp_path: Path) -> None:
    """A folder without ground_truth.jsonl was a FileNotFoundError traceback, for distill only after
    the skills had been written."""
    empty = tmp_path / "empty"
    empty.mkdir()
    ann = tmp_path / "ann"
    err = fails("annotations", "import", str(lab), "--annotations", str(ann), "--examples", str(empty))
    assert f"--examples {empty}: no ground_truth.jsonl there" in err
    for folder in (empty, afile):
        err = fails(
            "distill", "--lab", str(lab), "-o", str(tmp_path / "sk"), "-q", "--ground-truth", str(folder)
        )
        assert f"--ground-truth {folder}: no ground_truth.jsonl there" in err
    assert not (tmp_path / "sk").exists() and not ann.exists()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "ground_truth.jsonl").write_text('{"run_id": 1}\nnot json\n')
    err = fails("distill", "--lab", str(lab), "-o", str(tmp_path / "sk"), "-q", "--ground-truth", str(bad))
    assert f"{bad / 'ground_truth.jsonl'}: not valid JSON" in err
    r = run("annotations", "import", str(lab), "--annotations", str(ann), "--examples", str(base / "ex"))
    assert r.code == 0 and "records appended" in r.stdout


def test_distill_out_inside_the_lab(lab: Path) -> None:
    before = snapshot(lab)
    err = fails("distill", "--lab", str(lab), "-o", str(lab / "steps"), "-q")
    assert f"--out {lab / 'steps'}: refusing to write into the lab's own files" in err
    assert snapshot(lab) == before


def test_examples_and_demo_out_is_a_file(afile: Path) -> None:
    assert f"OUT {afile}: is a file, not a folder" in fails("examples", str(afile), "--tasks", "1")
    err = fails("examples", str(afile / "x"), "--tasks", "1")
    assert f"OUT {afile / 'x'}: {afile} is a file, not a folder" in err
    assert f"--out {afile}: is a file, not a folder" in fails("demo", "-o", str(afile), "-q")
    assert afile.read_text() == "just a file\n"


def test_skill_prompt_output_below_a_file(tmp_path: Path, afile: Path) -> None:
    """The message said `File exists` instead of naming the file in the way."""
    assert run("skills", "new", "ok", "--dir", str(tmp_path / "sk")).code == 0
    skill = str(tmp_path / "sk" / "ok")
    err = fails("skills", "install", skill, "--target", "prompt", "--output", str(afile / "p.md"))
    assert f"--output {afile / 'p.md'}: {afile} is a file, not a folder" in err
    out = tmp_path / "new" / "p.md"
    assert run("skills", "install", skill, "--target", "prompt", "--output", str(out)).code == 0
    assert out.read_text().startswith('<skill name="ok">')


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_out_on_a_full_disk_says_the_disk_is_full_and_keeps_the_old_file(lab: Path, tmp_path: Path, suffix):
    """The reason read 'cannot create files in DIR (No space left on device)', blaming the folder
    (`dag export` had its own copy of that wording)."""
    from tmpfs import fill, tmpfs

    with tmpfs(tmp_path / "fs", 1) as fs:
        out = fs / f"gaps{suffix}"
        assert run("gaps", str(lab), "--out", str(out)).code == 0
        before = snapshot(fs)
        filler = fill(fs)
        export = ("dag", "export", str(lab), _trajectory(lab), "--format", "json")
        for args in (("gaps", str(lab)), ("sql", str(lab), "select * from steps"), export):
            err = fails(*args, "--out", str(out))
            assert err.strip() == f"Error: cannot write {out}: No space left on device", err
        filler.unlink()
        assert snapshot(fs) == before


def test_writing_into_words_a_full_disk_as_write_out_does(tmp_path: Path) -> None:
    """pyarrow's full-disk OSError carries errno 28 with its own strerror ('Error writing bytes to
    file. Detail: ...'); the folder-writing commands repeated it while --out said 'No space left'."""
    from trajlab.cli._output import writing_into
    from trajlab.errors import ConfigError

    with pytest.raises(ConfigError) as e, writing_into(tmp_path):
        raise OSError(28, "Error writing bytes to file. Detail: [errno 28] No space left on device")
    assert str(e.value) == f"cannot write into {tmp_path}: No space left on device"


def _left(fs: Path) -> list[str]:
    return sorted(str(p.relative_to(fs)) for p in fs.rglob("*") if p.name != "filler")


def test_a_write_that_fails_on_a_full_disk_leaves_no_empty_folders(lab: Path, tmp_path: Path) -> None:
    """Each command made its output folder (and the missing folders above it) before the first write
    failed, and left them behind empty: `a/b/tables/`, `a/b/` for `sql --out a/b/x.csv`, ... A folder
    that was there before stays."""
    from tmpfs import fill, tmpfs

    traj = _trajectory(lab)
    with tmpfs(tmp_path / "fs", 1) as fs:
        (fs / "there").mkdir()
        fill(fs)
        for args in (
            ("tables", str(lab), "--out", "{new}/tables", "--only", "tool_gaps"),
            ("examples", "{new}/ex", "--tasks", "2"),
            ("demo", "-o", "{new}/demo", "-q", "--tasks", "2"),
            ("sql", str(lab), "select * from steps", "--out", "{new}/x.csv"),
            ("gaps", str(lab), "--out", "{new}/x.parquet"),
            ("dag", "export", str(lab), traj, "--out", "{new}/x.json"),
        ):
            for new in (fs / "a" / "b", fs / "there" / "b"):
                r = run(*[a.replace("{new}", str(new)) for a in args])
                err = r.stderr.strip()
                assert r.code == 1 and "No space left on device" in err and "\n" not in err, r.text
                assert _left(fs) == ["there"], (args, new, _left(fs))
