"""The real `trajlab` commands against damaged labs and misuse.

Each case checks the exit code, that the message names the file/field/option and what is wrong, that
no Python traceback reaches the user, and that the lab's files are byte-identical afterwards wherever
the command had no business writing. The lab is built once from the example runs (3 tasks, 12 runs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_harness import example_lab, fails, run, snapshot

from trajlab.store import Lab

N_TRAJ, N_STEPS = 12, 110
COUNT_STEPS = "select count(*) as n from steps"


@pytest.fixture(scope="module")
def base_lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return example_lab(tmp_path_factory.mktemp("damaged"))


@pytest.fixture()
def lab(base_lab: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "lab"
    shutil.copytree(base_lab, dst, symlinks=True)
    return dst


def part(lab: Path, table: str) -> Path:
    manifest = json.loads((lab / "lab.json").read_text())
    return lab / manifest["tables"][table]["parts"][0]["path"]


def edit_manifest(lab: Path, fn) -> None:  # type: ignore[no-untyped-def]
    m = json.loads((lab / "lab.json").read_text())
    fn(m)
    (lab / "lab.json").write_text(json.dumps(m))


def test_the_manifest_is_as_readable_as_the_lab(base_lab: Path) -> None:
    """lab.json was written 0600 (a private temporary file renamed): others could read the parts but
    not open the lab."""
    assert (base_lab / "lab.json").stat().st_mode & 0o777 == base_lab.stat().st_mode & 0o666


def test_the_example_lab_reads(lab: Path) -> None:
    r = run(
        "sql",
        str(lab),
        "select (select count(*) from trajectories) as t, (select count(*) from steps) as s",
        "--format",
        "json",
    )
    assert r.code == 0 and json.loads(r.stdout) == [{"t": N_TRAJ, "s": N_STEPS}]


# -- LAB is not a lab ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["missing", "file", "empty", "unrelated"])
def test_lab_path_that_is_not_a_lab(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x"
    if kind == "file":
        path.write_text("just a file\n")
    elif kind in ("empty", "unrelated"):
        path.mkdir()
        if kind == "unrelated":
            (path / "notes.txt").write_text("hello")
            (path / "data.parquet").write_bytes(b"PAR1 not really")
    want = {
        "missing": f"{path}: no such lab (build one with `trajlab ingest PATH --out {path}`)",
        "file": f"{path}: is a file, not a lab folder",
        "empty": f"{path}: not a lab (no lab.json)",
        "unrelated": f"{path}: not a lab (no lab.json)",
    }[kind]
    before = snapshot(path)
    for args in (
        ("sql", str(path), "select 1"),
        ("gaps", str(path), "-q"),
        ("analyze", "tokens", str(path)),
        ("dag", str(path), "-q"),
        ("dag", "show", str(path), "abc"),
    ):
        assert want in fails(*args), args
    assert snapshot(path) == before
    if kind == "missing":
        assert not path.exists()  # reading does not create a lab


def test_ingest_into_a_file_or_a_folder_of_other_files(lab: Path, tmp_path: Path, base_lab: Path) -> None:
    runs = base_lab.parent / "ex" / "runs"
    f = tmp_path / "afile"
    f.write_text("keep me")
    assert f"{f}: is a file, not a lab folder" in fails("ingest", str(runs), "--out", str(f), "-q")
    assert f.read_text() == "keep me"
    other = tmp_path / "other"
    other.mkdir()
    (other / "thesis.tex").write_text("x")
    err = fails("ingest", str(runs), "--out", str(other), "-q")
    assert f"{other}: folder exists and is not empty; refusing to turn it into a lab" in err
    assert sorted(p.name for p in other.iterdir()) == ["thesis.tex"]
    err = fails("ingest", str(runs), "--out", str(f / "lab"), "-q")
    assert f"{f / 'lab'}: cannot create the lab folder" in err and f.read_text() == "keep me"


# -- damaged manifest ----------------------------------------------------------------------------


def _truncate(lab: Path) -> None:
    data = (lab / "lab.json").read_bytes()
    (lab / "lab.json").write_bytes(data[: len(data) // 2])


def _newer(m: dict) -> None:
    m["schema_version"] = 99


def _no_version(m: dict) -> None:
    del m["schema_version"]


def _no_steps_entry(m: dict) -> None:
    del m["tables"]["steps"]


def _outside(m: dict) -> None:
    m["tables"]["steps"]["parts"][0]["path"] = "../../etc/passwd"


def _rows_text(m: dict) -> None:
    m["tables"]["steps"]["parts"][0]["rows"] = "many"


def _part_gone(m: dict) -> None:
    m["tables"]["steps"]["parts"][0]["path"] = ".gen/steps/g000001/part-gone.parquet"


MANIFEST_CASES = {
    "truncated": (_truncate, "lab.json: corrupt manifest: Unterminated string"),
    "not json": (
        lambda lab: (lab / "lab.json").write_text("hello"),
        "lab.json: corrupt manifest: Expecting value",
    ),
    "binary": (
        lambda lab: (lab / "lab.json").write_bytes(b"\xff\xfe\x00"),
        "lab.json: corrupt manifest: 'utf-8' codec",
    ),
    "a list": (
        lambda lab: (lab / "lab.json").write_text("[1, 2]"),
        "lab.json: corrupt manifest (a JSON list, not an object)",
    ),
    "another format": (
        lambda lab: (lab / "lab.json").write_text('{"format": "x"}'),
        "lab.json: not a trajlab lab manifest (format='x')",
    ),
    "parts not a list": (
        lambda lab: edit_manifest(lab, lambda m: m["tables"].__setitem__("steps", {"parts": 3})),
        "lab.json: corrupt manifest (table 'steps': `parts` is not a list)",
    ),
    "part outside the lab": (
        lambda lab: edit_manifest(lab, _outside),
        "lab.json: corrupt manifest (table 'steps': part 0 path '../../etc/passwd' is not a path inside the lab)",
    ),
    "rows not a count": (
        lambda lab: edit_manifest(lab, _rows_text),
        "lab.json: corrupt manifest (table 'steps': part 0 (.gen/steps/g000001/",
    ),
    "newer schema": (
        lambda lab: edit_manifest(lab, _newer),
        "lab schema v99 is newer than this trajlab (v2); upgrade trajlab",
    ),
    "missing field": (
        lambda lab: edit_manifest(lab, _no_version),
        "lab.json: corrupt manifest (missing field 'schema_version')",
    ),
    "missing table entry": (
        lambda lab: edit_manifest(lab, _no_steps_entry),
        "lab.json: has no entry for table 'steps', but {lab}/steps holds its parts; the manifest is damaged",
    ),
    "part gone": (
        lambda lab: edit_manifest(lab, _part_gone),
        "{lab}/.gen/steps/g000001/part-gone.parquet: part of table 'steps' listed in lab.json is missing",
    ),
}


@pytest.mark.parametrize("case", list(MANIFEST_CASES))
def test_damaged_manifest(lab: Path, case: str, base_lab: Path) -> None:
    damage, want = MANIFEST_CASES[case]
    damage(lab)
    want = want.format(lab=lab)
    before = snapshot(lab)
    for args in (
        ("sql", str(lab), COUNT_STEPS),
        ("gaps", str(lab), "-q"),
        ("analyze", "tokens", str(lab)),
    ):
        assert want in fails(*args), (args, want)
    # a writer (re-ingesting every run, so it rewrites steps) fails the same way and writes nothing
    runs = str(base_lab.parent / "ex" / "runs")
    assert want in fails("ingest", runs, "--out", str(lab), "-q", "-j", "1", "--force")
    assert snapshot(lab) == before


# -- damaged Parquet parts -----------------------------------------------------------------------


def _retype(path: Path, column: str) -> None:
    t = pq.read_table(path)
    i = t.column_names.index(column)
    t = t.set_column(i, column, pa.array([f"x{k}" for k in range(t.num_rows)]))
    pq.write_table(t, path)


@pytest.mark.parametrize("damage", ["truncated", "junk", "wrong type"])
def test_damaged_parquet_part(lab: Path, damage: str) -> None:
    p = part(lab, "trajectories")
    if damage == "truncated":
        p.write_bytes(p.read_bytes()[:5000])
        want = f"{p}: part of table 'trajectories' is unreadable (Parquet magic bytes not found"
    elif damage == "junk":
        p.write_bytes(os.urandom(4096))
        want = f"{p}: part of table 'trajectories' is unreadable (Parquet magic bytes not found"
    else:
        _retype(p, "n_steps")
        want = f"{p}: part of table 'trajectories' has column 'n_steps' of type string; the schema says int64"
    before = snapshot(lab)
    for args in (
        ("sql", str(lab), "select count(*) from trajectories"),
        ("sql", str(lab), "--views"),
        ("gaps", str(lab), "-q"),
        ("analyze", "capability", str(lab)),
    ):
        assert want in fails(*args), args
    assert snapshot(lab) == before


def test_part_with_damaged_pages_but_an_intact_footer(lab: Path, base_lab: Path) -> None:
    """The views open (the footer is fine); the damage shows when a query reads the pages."""
    p = part(lab, "steps")
    data = bytearray(p.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8
    for i in range(4, len(data) - footer):
        data[i] ^= 0x5A
    p.write_bytes(bytes(data))
    before = snapshot(lab)
    r = run("sql", str(lab), COUNT_STEPS, "--format", "json")  # answered from the footer
    assert r.code == 0 and json.loads(r.stdout) == [{"n": N_STEPS}]
    # DuckDB's own message (it does not always name the file: "don't know what type", "LZ4 ...")
    assert fails("sql", str(lab), "select max(length(text)) from steps").startswith("Error: ")
    for args in (("gaps", str(lab), "-q"), ("analyze", "tools", str(lab))):
        assert fails(*args).startswith("Error: "), args
    # gaps counts the lab's calls first: a LabError naming the lab, not the CLI's last-resort wrapper
    assert fails("gaps", str(lab), "-q").startswith(f"Error: {lab}: DuckDB could not read the lab's steps")
    # the commands that read parts themselves name the part
    assert f"cannot read steps part {p}" in fails("dag", str(lab), "-q", "--rebuild")
    assert f"{p}: part of table 'steps' is unreadable" in fails(
        "ingest", str(base_lab.parent / "ex" / "runs"), "--out", str(lab), "-q", "-j", "1", "--force"
    )
    assert snapshot(lab) == before


@pytest.mark.parametrize(
    "table,command",
    [
        ("dag_metrics", ["dag", "{lab}", "-q"]),  # read to find the DAGs that are up to date
        ("sources", ["ingest", "{runs}", "--out", "{lab}", "-q", "-j", "1"]),  # read to plan the ingest
    ],
)
def test_writer_that_reads_a_damaged_table_first(
    lab: Path, base_lab: Path, table: str, command: list[str]
) -> None:
    p = part(lab, table)
    p.write_bytes(p.read_bytes()[:300])
    before = snapshot(lab)
    args = [a.format(lab=lab, runs=base_lab.parent / "ex" / "runs") for a in command]
    err = fails(*args)
    assert f"{lab}: cannot read table {table!r}: Could not open Parquet input source '{p}'" in err
    assert snapshot(lab) == before


def test_damaged_steps_part_and_dag_build(lab: Path) -> None:
    p = part(lab, "steps")
    p.write_bytes(p.read_bytes()[:5000])
    before = snapshot(lab)
    err = fails("dag", str(lab), "-q", "--rebuild")
    assert f"cannot read steps part {p}: Parquet magic bytes not found" in err
    assert snapshot(lab) == before


# -- leftovers of a crashed writer, and a writer that holds the lock -----------------------------


def test_leftovers_of_a_crashed_writer(lab: Path) -> None:
    staged = lab / "_staging" / "g000009-deadbeef" / "steps"
    staged.mkdir(parents=True)
    (staged / "part-g000009-0.parquet").write_bytes(b"half a part")
    orphan = lab / ".gen" / "steps" / "g000009"
    orphan.mkdir()
    shutil.copy(part(lab, "steps"), orphan / "part-g000009-1.parquet")  # built, manifest never switched
    (lab / ".steps.link-000009").symlink_to(".gen/steps/g000009")
    before = snapshot(lab)
    # readers see the committed generation only, and leave the leftovers to the next writer
    r = run("sql", str(lab), COUNT_STEPS, "--format", "json")
    assert r.code == 0 and json.loads(r.stdout) == [{"n": N_STEPS}]
    assert run("gaps", str(lab), "-q", "--format", "csv").code == 0
    assert snapshot(lab) == before
    # the next writer recovers: leftovers gone, data intact
    r = run("dag", str(lab), "-q", "--rebuild")
    assert r.code == 0 and "built 12 DAGs from 110 steps" in r.stdout
    assert not orphan.exists() and not (lab / ".steps.link-000009").exists()
    assert not (lab / "_staging" / "g000009-deadbeef").exists()
    assert os.readlink(lab / "steps") == ".gen/steps/g000001"
    r = run("sql", str(lab), COUNT_STEPS, "--format", "json")
    assert json.loads(r.stdout) == [{"n": N_STEPS}]


HOLDER = textwrap.dedent(
    """
    import sys, time
    from trajlab.store import Lab
    with Lab.open(sys.argv[1]).write("hold"):
        print("locked", flush=True)
        sys.stdin.readline()
    """
)


@pytest.fixture()
def held(lab: Path) -> Iterator[Path]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lab)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield lab
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def test_second_writer_while_one_holds_the_lock(held: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = held
    before = snapshot(lab)
    monkeypatch.setenv("TRAJLAB_LOCK_WAIT", "0.3")
    t0 = time.monotonic()
    err = fails("dag", str(lab), "-q", "--rebuild")
    assert time.monotonic() - t0 < 15
    assert (
        f"{lab}: another trajlab process is writing to this lab (waited 0.3 s for .lock; set TRAJLAB_LOCK_WAIT"
        in err
    )
    # readers are not blocked by the writer
    r = run("sql", str(lab), COUNT_STEPS, "--format", "json")
    assert r.code == 0 and json.loads(r.stdout) == [{"n": N_STEPS}]
    monkeypatch.setenv("TRAJLAB_LOCK_WAIT", "soon")
    assert "TRAJLAB_LOCK_WAIT='soon' is not a number of seconds" in fails("dag", str(lab), "-q", "--rebuild")
    monkeypatch.setenv("TRAJLAB_LOCK_WAIT", "-1")
    assert "TRAJLAB_LOCK_WAIT='-1' must be >= 0 seconds" in fails("dag", str(lab), "-q", "--rebuild")
    assert snapshot(lab) == before


# -- read-only lab -------------------------------------------------------------------------------

BATCH = textwrap.dedent(
    """
    import json, sys
    from click.testing import CliRunner
    from trajlab.cli import cli
    out = []
    for args in json.loads(sys.argv[1]):
        r = CliRunner().invoke(cli, args)
        exc = r.exception if r.exception is not None and not isinstance(r.exception, SystemExit) else None
        out.append({"code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr, "exception": repr(exc) if exc else None})
    print(json.dumps(out))
    """
)


def _set_writable(root: Path, writable: bool) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                p.chmod((0o755 if p.is_dir() else 0o644) if writable else (0o555 if p.is_dir() else 0o444))
    root.chmod(0o755 if writable else 0o555)


def run_as_user(commands: list[list[str]]) -> list[dict]:
    """Run CLI commands in one process that file permissions apply to (as root: no CAP_DAC_OVERRIDE)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root and setpriv is not available to drop the file-permission override")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
    proc = subprocess.run(
        [*prefix, sys.executable, "-c", BATCH, json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    for args, r in zip(commands, results):
        assert r["exception"] is None, (args, r)
        assert "Traceback" not in r["stdout"] + r["stderr"], args
    return results


def run_without_write_access(lab: Path, commands: list[list[str]]) -> list[dict]:
    _set_writable(lab, False)
    try:
        return run_as_user(commands)
    finally:
        _set_writable(lab, True)


def test_unreadable_manifest(lab: Path) -> None:
    manifest = lab / "lab.json"
    manifest.chmod(0o000)
    try:
        (r,) = run_as_user([["sql", str(lab), "select 1"]])
    finally:
        manifest.chmod(0o644)
    assert (
        r["code"] == 1
        and r["stderr"] == f"Error: {manifest}: cannot read the lab manifest (Permission denied)\n"
    )


def test_manifest_is_a_folder(lab: Path) -> None:
    (lab / "lab.json").unlink()
    (lab / "lab.json").mkdir()
    assert f"{lab / 'lab.json'}: is a folder, not the lab manifest" in fails("sql", str(lab), "select 1")


def test_read_only_lab(lab: Path, base_lab: Path, tmp_path: Path) -> None:
    runs = str(base_lab.parent / "ex" / "runs")
    reads = [
        ["sql", str(lab), COUNT_STEPS, "--format", "json"],
        ["gaps", str(lab), "-q", "--format", "csv", "--n-boot", "50"],
        ["analyze", "tokens", str(lab), "--format", "csv"],
        ["schema", "steps"],
        ["sql", str(lab), "select 1 as x", "--out", str(tmp_path / "elsewhere.csv")],
    ]
    writes = [
        ["dag", str(lab), "-q", "--rebuild"],
        ["ingest", runs, "--out", str(lab), "-q", "--force", "-j", "1"],
        ["sql", str(lab), "select 1", "--out", str(lab / "result.csv")],
    ]
    expected = [run(*args) for args in reads]  # the same commands on the writable lab
    (tmp_path / "elsewhere.csv").unlink()
    before = snapshot(lab)
    got = run_without_write_access(lab, reads + writes)
    for args, want, r in zip(reads, expected, got):
        assert (r["code"], r["stdout"]) == (0, want.stdout), args
    assert json.loads(got[0]["stdout"]) == [{"n": N_STEPS}]
    assert (tmp_path / "elsewhere.csv").read_text() == "x\n1\n"
    dag, ingest, out = got[len(reads) :]
    assert dag["code"] == 1 and dag["stderr"].strip() == (
        f"Error: {lab}: the lab folder is read-only; 'dag' needs to write to it (nothing was written)"
    )
    assert ingest["code"] == 1 and ingest["stderr"].strip() == (
        f"Error: {lab}: the lab folder is read-only; 'ingest' needs to write to it (nothing was written)"
    )
    assert (
        out["code"] == 1
        and f"cannot write {lab / 'result.csv'}: cannot create files in {lab}" in out["stderr"]
    )
    assert snapshot(lab) == before


# -- trajlab sql misuse --------------------------------------------------------------------------


def test_sql_misuse(lab: Path, tmp_path: Path) -> None:
    before = snapshot(lab)
    assert "give a QUERY or --file" in fails("sql", str(lab), "", code=2)
    assert "Error: empty query" in fails("sql", str(lab), "   ")
    assert "Error: empty query" in fails("sql", str(lab), " ; ;")
    err = fails("sql", str(lab), "selec count(*) from steps")
    assert 'Parser Error: syntax error at or near "selec"' in err and "views available: dag_edges" in err
    for q, kind in [
        ("select 1; delete from steps", "a DELETE"),
        ("select 1; drop view steps", "a DROP"),
        ("select 1; copy steps to 'x.csv'", "a COPY"),
        ("create table t as select 1; select * from t", "a CREATE"),
        ("select 1; attach 'x.db' as x", "an ATTACH"),
    ]:
        assert f"only read-only queries are allowed (got {kind} statement)" in fails("sql", str(lab), q), q
    err = fails("sql", str(lab), "select 1", "--format", "xml", code=2)
    assert "Invalid value for '--format': 'xml' is not one of" in err
    assert "--format parquet needs --out" in fails("sql", str(lab), "select 1", "--format", "parquet", code=2)
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, why in [
        (tmp_path, "it is a directory"),
        (afile / "x.csv", f"{afile} is not a directory"),
        (afile / "x.parquet", f"{afile} is not a directory"),
    ]:
        err = fails(
            "sql",
            str(lab),
            "select 1",
            "--out",
            str(out),
            "--format",
            "parquet" if str(out).endswith("parquet") else "csv",
        )
        assert f"cannot write {out}: {why}" in err, err
    for inside in ("lab.json", "steps/x.parquet", ".gen/steps/x.csv", "_staging/x.csv", ".lock"):
        err = fails("sql", str(lab), "select 1", "--out", str(lab / inside))
        assert f"--out {lab / inside}: refusing to write into the lab's own files ({lab})" in err
    assert afile.read_text() == "x"
    assert snapshot(lab) == before
    # an output file next to the lab's data is fine
    r = run("sql", str(lab), COUNT_STEPS, "--out", str(lab / "counts.csv"))
    assert r.code == 0 and (lab / "counts.csv").read_text() == f"n\n{N_STEPS}\n"


# -- trajlab gaps / analyze misuse ---------------------------------------------------------------


@pytest.mark.parametrize(
    "args,want",
    [
        (["--by", "nosuch"], "cannot group by 'nosuch'; choose from model, harness"),
        (["--by", "model,colour"], "cannot group by 'colour'"),
    ],
)
def test_gaps_unknown_by(lab: Path, args: list[str], want: str) -> None:
    assert want in fails("gaps", str(lab), "-q", *args)
    assert want in fails("analyze", "capability", str(lab), *args)


@pytest.mark.parametrize(
    "option,value,want",
    [
        ("--n-boot", "-5", "Invalid value for '--n-boot': -5 is not in the range x>=0."),
        ("--n-boot", "abc", "Invalid value for '--n-boot': 'abc' is not a valid integer"),
        ("--min-support", "-1", "Invalid value for '--min-support': -1 is not in the range x>=0."),
        ("--min-support", "1.5", "Invalid value for '--min-support': '1.5' is not a valid integer"),
        ("--min-trajectories", "-3", "Invalid value for '--min-trajectories': -3 is not in the range x>=0."),
        ("--n-perm", "0", "Invalid value for '--n-perm': 0 is not in the range x>=1."),
        ("--alpha", "0", "Invalid value for '--alpha': 0.0 is not in the range 0<x<1."),
        ("--alpha", "1.5", "Invalid value for '--alpha': 1.5 is not in the range 0<x<1."),
        ("--alpha", "five", "Invalid value for '--alpha': 'five' is not a valid float"),
        ("--test", "t", "Invalid value for '--test': 't' is not one of"),
    ],
)
def test_gaps_bad_parameter(lab: Path, option: str, value: str, want: str) -> None:
    assert want in fails("gaps", str(lab), "-q", option, value, code=2)


def test_gaps_zero_bootstrap_and_zero_support_are_legitimate(lab: Path) -> None:
    r = run(
        "gaps",
        str(lab),
        "-q",
        "--n-boot",
        "0",
        "--min-support",
        "0",
        "--min-trajectories",
        "0",
        "--format",
        "json",
    )
    assert r.code == 0
    rows = {row["tool"]: row for row in json.loads(r.stdout)}
    assert rows["ffprobe"]["n_calls"] == 15 and rows["ffprobe"]["gap_ci_low"] is None
    assert all(row["supported"] for row in rows.values())


@pytest.mark.parametrize(
    "args,want,code",
    [
        (["gaps", "-p", "min_support=x"], "--param min_support='x': min_support wants an integer", 2),
        (["gaps", "-p", "n_boot=-1"], "n_boot must be an integer >= 0, not -1", 1),
        (["gaps", "-p", "alpha=big"], "--param alpha='big': alpha wants a number", 2),
        (["gaps", "-p", "nboot=3"], "unknown parameter(s) nboot for gaps; takes: alpha,", 2),
        (["funnel", "-p", "bins=0"], "bins must be a positive integer, not 0", 1),
        (["funnel", "-p", "bins=abc"], "--param bins='abc': bins wants an integer", 2),
        (["funnel", "-p", "bins"], "--param wants NAME=VALUE, got 'bins'", 2),
        (["tokens", "-p", "foo=1"], "unknown parameter(s) foo for tokens; it takes no parameters", 2),
        (["nosuch"], "no analysis named 'nosuch'; known: capability, failures", 1),
        (["nosuch.sql"], "nosuch.sql: no such SQL file", 1),
    ],
)
def test_analyze_bad_parameter(lab: Path, args: list[str], want: str, code: int) -> None:
    name, *rest = args
    assert want in fails("analyze", name, str(lab), *rest, code=code)


def test_user_sql_files_that_cannot_be_read(lab: Path, tmp_path: Path) -> None:
    binary = tmp_path / "q.sql"
    binary.write_bytes(b"\xff\xfeselect 1")
    folder = tmp_path / "dir.sql"
    folder.mkdir()
    err = fails("sql", str(lab), "--file", str(binary), code=2)
    assert f"Invalid value for '--file': {binary}: not UTF-8 text (invalid start byte at byte 0)" in err
    assert "No such file or directory" in fails("sql", str(lab), "--file", str(tmp_path / "no.sql"), code=2)
    for extra in ([str(lab)], ["--show-sql"]):
        assert f"{binary}: not UTF-8 text (invalid start byte at byte 0)" in fails(
            "analyze", str(binary), *extra
        )
        assert f"{folder}: is a folder, not an SQL file" in fails("analyze", str(folder), *extra)
        assert f"{tmp_path / 'no.sql'}: no such SQL file" in fails(
            "analyze", str(tmp_path / "no.sql"), *extra
        )
    good = tmp_path / "n.sql"
    good.write_text("select count(*) as n from steps")
    r = run("analyze", str(good), str(lab), "--format", "csv")
    assert r.code == 0 and r.stdout == f"n\n{N_STEPS}\n"


def test_output_options_out_of_range(lab: Path) -> None:
    err = fails("sql", str(lab), "select 1", "--max-rows", "-1", code=2)
    assert "Invalid value for '--max-rows': -1 is not in the range x>=0." in err
    err = fails("analyze", "tools", str(lab), "--max-rows", "-1", code=2)
    assert "Invalid value for '--max-rows': -1 is not in the range x>=0." in err
    assert "`analyze list` prints a table" in fails("analyze", "list", "--format", "parquet", code=2)
    r = run("sql", str(lab), "select step_id from steps order by step_id", "--max-rows", "0")
    assert r.code == 0 and r.stdout.splitlines()[-1] == f"... {N_STEPS} more rows"


def test_gaps_and_analyze_output_errors(lab: Path, tmp_path: Path) -> None:
    before = snapshot(lab)
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert f"cannot write {afile / 'g.csv'}: {afile} is not a directory" in fails(
        "gaps", str(lab), "-q", "--out", str(afile / "g.csv")
    )
    assert f"cannot write {afile / 't.csv'}: {afile} is not a directory" in fails(
        "analyze", "tokens", str(lab), "--out", str(afile / "t.csv")
    )
    err = fails("gaps", str(lab), "-q", "--out", str(lab / "lab.json"))
    assert f"--out {lab / 'lab.json'}: refusing to write into the lab's own files" in err
    assert snapshot(lab) == before


# -- labs that lack what an analysis needs -------------------------------------------------------

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _hand_lab(root: Path, outcomes: list[str], tool_calls: bool) -> Path:
    lab = Lab.open(root, create=True)
    with lab.write("test") as txn:
        txn.append(
            "trajectories",
            [
                {"trajectory_id": f"t{i}", "runner": "test", "format": "test", "source_path": f"/x/t{i}",
                 "source_digest": f"d{i}", "outcome": o, "ingested_at": NOW, "model": "m"}
                for i, o in enumerate(outcomes)
            ],
        )  # fmt: skip
        steps = []
        for i in range(len(outcomes)):
            steps.append(
                {"trajectory_id": f"t{i}", "step_index": 0, "step_id": f"t{i}:0", "kind": "assistant"}
            )
            if tool_calls:
                steps.append(
                    {"trajectory_id": f"t{i}", "step_index": 1, "step_id": f"t{i}:1", "kind": "tool_call",
                     "tool_name": "Bash", "tool": "ffprobe", "programs": ["ffprobe"], "is_error": False}
                )  # fmt: skip
        txn.append("steps", steps)
    return root


def test_lab_without_outcomes(tmp_path: Path) -> None:
    lab = _hand_lab(tmp_path / "lab", ["unknown"] * 3, tool_calls=True)
    before = snapshot(lab)
    r = run("gaps", str(lab), "-q")
    assert r.code == 0 and r.stdout == ""
    assert "missing: no outcomes (no trajectory is marked success or failure" in r.stderr
    assert "note: 3 trajectories with unknown outcome are left out" in r.stderr
    r = run("analyze", "tokens", str(lab), "--format", "csv")
    assert r.code == 0 and "missing: no outcomes" in r.stderr
    assert r.stdout.splitlines()[1].startswith("m,,,3,0,0,0,")
    assert snapshot(lab) == before


def test_lab_without_tool_calls(tmp_path: Path) -> None:
    lab = _hand_lab(tmp_path / "lab", ["success", "failure"], tool_calls=False)
    before = snapshot(lab)
    for args in (
        ("gaps", str(lab), "-q"),
        ("analyze", "capability", str(lab)),
        ("analyze", "recovery", str(lab)),
    ):
        r = run(*args)
        assert r.code == 0 and r.stdout == "", args
        assert "missing: no tool calls (the trajectories hold no tool-call steps)" in r.stderr, args
    r = run("sql", str(lab), "select count(*) as n from tool_calls", "--format", "json")
    assert json.loads(r.stdout) == [{"n": 0}]
    assert snapshot(lab) == before
