"""Ingest in several write transactions: the same lab as one transaction, and Ctrl-C keeps what was
committed (the next run ingests the rest)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import trajlab.ingest._run as ingest_run
from trajlab.cli import cli
from trajlab.examples import generate_examples
from trajlab.ingest import IngestInterrupted, ingest
from trajlab.store import Lab, query


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("examples")
    generate_examples(out / "set", n_tasks=3, runs_per_task=2, skill_runs=False, specials=False)
    return out / "set" / "runs"


def _content(lab: str | Path) -> dict[str, list]:
    lab = Lab.open(lab)
    return {
        "trajectories": query(lab, "select trajectory_id, n_steps from trajectories order by 1").to_pylist(),
        "steps": query(lab, "select count(*) n, count(distinct step_id) ids from steps").to_pylist(),
        "sources": query(lab, "select source_path, status from sources order by 1").to_pylist(),
    }


def _interrupt_absorb_at(monkeypatch: pytest.MonkeyPatch, n: int):
    """Ctrl-C while the n-th unit is recorded (inside its transaction); returns the undo."""
    real = ingest_run._absorb
    calls: list[int] = []

    def absorb(*a, **k):
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(ingest_run, "_absorb", absorb)
    return lambda: monkeypatch.setattr(ingest_run, "_absorb", real)


def _units(lab: str | Path) -> int:
    return (
        query(Lab.open(lab), "select count(*) n from sources where runner <> 'meta'").column("n")[0].as_py()
    )


@pytest.fixture()
def unit_per_transaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every unit its own batch, every batch its own transaction."""
    monkeypatch.setattr(ingest_run, "BATCH_BYTES", 1)
    monkeypatch.setattr(ingest_run, "MIN_BATCH_BYTES", 1)
    monkeypatch.setattr(ingest_run, "COMMIT_EVERY_BYTES", 1)


def test_many_transactions_give_the_same_lab_as_one(example_runs: Path, tmp_path: Path, monkeypatch) -> None:
    one = ingest([example_runs], tmp_path / "one", workers=1, progress=False)
    assert one.commits == 1
    monkeypatch.setattr(ingest_run, "BATCH_BYTES", 1)
    monkeypatch.setattr(ingest_run, "MIN_BATCH_BYTES", 1)
    many = ingest([example_runs], tmp_path / "many", workers=1, progress=False, commit_every_bytes=1)
    n_units = _units(tmp_path / "one")  # parsed units; the meta sidecar is recorded with the first
    assert many.commits == n_units > 3
    assert Lab.open(tmp_path / "many").generation == many.commits
    assert _content(tmp_path / "many") == _content(tmp_path / "one")
    assert many.totals.steps == one.totals.steps and many.records_seen == one.records_seen


def test_ctrl_c_keeps_the_committed_transactions_and_the_rerun_ingests_the_rest(
    example_runs: Path, tmp_path: Path, monkeypatch, unit_per_transaction
) -> None:
    ingest([example_runs], tmp_path / "clean", workers=1, progress=False, commit_every_bytes=1 << 40)
    undo = _interrupt_absorb_at(monkeypatch, 4)
    with pytest.raises(IngestInterrupted) as e:
        ingest([example_runs], tmp_path / "lab", workers=1, progress=False)
    assert (e.value.commits, e.value.units) == (3, 3)
    assert 0 < e.value.bytes_done < e.value.bytes_total
    lab = Lab.open(tmp_path / "lab")
    assert lab.generation == 3 and _units(lab.root) == 3
    assert not any((lab.root / "_staging").glob("*"))  # the transaction in flight was rolled back
    undo()
    rest = ingest([example_runs], tmp_path / "lab", workers=1, progress=False)
    assert rest.commits == _units(tmp_path / "clean") - 3
    assert _content(tmp_path / "lab") == _content(tmp_path / "clean")


def test_cli_ctrl_c_says_what_was_kept_and_exits_130(
    example_runs: Path, tmp_path: Path, monkeypatch, unit_per_transaction
) -> None:
    undo = _interrupt_absorb_at(monkeypatch, 3)
    lab = tmp_path / "lab"
    res = CliRunner().invoke(cli, ["ingest", str(example_runs), "--out", str(lab), "-q", "-j", "1"])
    assert res.exit_code == 130, res.output
    assert "interrupted: 2 committed transactions kept" in res.output and "(2 files," in res.output
    assert "run the same command again" in res.output and "Traceback" not in res.output
    undo()
    again = CliRunner().invoke(cli, ["ingest", str(example_runs), "--out", str(lab), "-q", "-j", "1"])
    assert again.exit_code == 0, again.output
    assert _units(lab) == 6


SECOND_INGEST = """
import sys
from trajlab.ingest import ingest
ingest([sys.argv[1]], sys.argv[2], workers=1, progress=False)
"""


def test_two_ingests_at_once_do_not_add_the_same_runs_twice(
    example_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second ingest of the same files that starts while the first is between its planning and its
    commit must not commit on top of the first's plan: it waits, then finds nothing to do."""
    single = tmp_path / "single"
    ingest([example_runs], single, workers=1, progress=False)
    lab = tmp_path / "lab"
    Lab.open(lab, create=True)
    real_plan = ingest_run.make_plan
    second: list[subprocess.Popen] = []

    def make_plan(*a, **k):
        plan = real_plan(*a, **k)
        p = subprocess.Popen(
            [sys.executable, "-c", SECOND_INGEST, str(example_runs), str(lab)],
            env={**os.environ, "TRAJLAB_LOCK_WAIT": "120"},
            stderr=subprocess.PIPE,
            text=True,
        )
        second.append(p)
        # the old code let it run to its end here, before this ingest committed its own plan; now it
        # waits for the lock
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=8)
        return plan

    monkeypatch.setattr(ingest_run, "make_plan", make_plan)
    ingest([example_runs], lab, workers=1, progress=False)
    (p,) = second
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    content = _content(lab)
    assert content == _content(single)
    n, ids = content["steps"][0]["n"], content["steps"][0]["ids"]
    assert n == ids > 0


def test_an_ingest_with_nothing_to_do_repairs_a_writer_killed_after_its_commit(
    example_runs: Path, tmp_path: Path
) -> None:
    """Killed after the manifest rename but before the table symlinks were swapped: the next ingest
    finds every file ingested, and must still roll the symlinks forward for plain Parquet readers."""
    lab = tmp_path / "lab"
    code = (
        "import os, signal, sys\n"
        "from trajlab.store import _publish\n"
        "_publish.switch = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n" + SECOND_INGEST
    )
    r = subprocess.run([sys.executable, "-c", code, str(example_runs), str(lab)], capture_output=True)
    assert r.returncode == -signal.SIGKILL
    assert not (lab / "steps").exists()  # committed in lab.json, not yet visible to glob readers
    report = ingest([example_runs], lab, workers=1, progress=False)
    assert report.commits == 0  # nothing new: every file was ingested by the killed run
    n_steps = Lab.open(lab).rows("steps")
    assert n_steps > 0
    glob = duckdb.sql(f"select count(*) from read_parquet('{lab}/steps/*.parquet')").fetchall()
    assert glob == [(n_steps,)]
    assert not list((lab / "_staging").glob("*"))
