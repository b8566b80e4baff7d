"""`trajlab ingest -j 2` when something fails under it: a full disk, a batch failing while another
worker still writes, a worker killed. Each is a one-line error, the lab stays at a committed
generation with nothing left in staging, no worker outlives the command, and running the command
again gives the same lab as an ingest that never failed."""

from __future__ import annotations

import errno
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from procs import KILL_FIRST_WORKER, forks_here, needs_fork, needs_proc, run_group
from tmpfs import fill, tmpfs

import trajlab.ingest._run as ingest_run
import trajlab.ingest._worker as ingest_worker
from trajlab.cli import cli
from trajlab.examples import generate_examples
from trajlab.ingest import ingest
from trajlab.store import Lab, query


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("examples")
    generate_examples(out / "set", n_tasks=3, runs_per_task=2, skill_runs=False, specials=False)
    return out / "set" / "runs"


@pytest.fixture(scope="module")
def roomy(example_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    """The lab's content after an ingest that nothing interrupted."""
    lab = tmp_path_factory.mktemp("roomy") / "lab"
    ingest([example_runs], lab, workers=1, progress=False)
    return content(lab)


def content(lab: str | Path) -> dict[str, list]:
    lab = Lab.open(lab)
    return {
        "trajectories": query(
            lab, "select trajectory_id, n_steps, outcome from trajectories order by 1"
        ).to_pylist(),
        "steps": query(lab, "select trajectory_id, step_index, kind from steps order by 1, 2").to_pylist(),
        "sources": query(
            lab, "select source_path, status, records_seen, records_ingested from sources order by 1"
        ).to_pylist(),
        "quarantine": query(lab, "select source_path, reason from quarantine order by 1, 2").to_pylist(),
    }


def staged(lab: Path) -> list[str]:
    return [str(p.relative_to(lab)) for p in (lab / "_staging").rglob("*")]


@pytest.fixture()
def two_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker pool for these few small files, with the units spread over 4 batches."""
    monkeypatch.setattr(ingest_run, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(ingest_run, "_batches", lambda units, sizes, n: [units[i::4] for i in range(4)])


def _cli_ingest(runs: Path, lab: Path):
    return CliRunner().invoke(cli, ["ingest", str(runs), "--out", str(lab), "-q", "-j", "2"])


def test_ingest_onto_a_full_disk_is_one_line_and_keeps_the_previous_generation(
    example_runs: Path, roomy: dict, tmp_path: Path, two_workers: None
) -> None:
    with tmpfs(tmp_path / "fs", 4) as fs:
        lab = fs / "lab"
        first = _cli_ingest(example_runs / "codex", lab)  # generation 1: the Codex runs
        assert first.exit_code == 0, first.output
        before = content(lab)
        assert Lab.open(lab).generation == 1 and before["trajectories"]
        filler = fill(fs)
        res = _cli_ingest(example_runs, lab)
        assert res.exit_code == 1, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in res.output, res.output
        assert lines[0].startswith(f"Error: {lab}: No space left on device"), lines[0]
        assert "rolled back" in lines[0] and "generation 1" in lines[0]
        assert Lab.open(lab).generation == 1 and content(lab) == before
        assert staged(lab) == [] and not list(lab.glob(".lab.json.*"))
        filler.unlink()
        again = _cli_ingest(example_runs, lab)
        assert again.exit_code == 0, again.output
        assert content(lab) == roomy


@pytest.mark.parametrize("existing", [False, True], ids=["new-folder", "empty-folder"])
def test_ingest_into_a_new_lab_on_a_full_disk_leaves_no_lab_behind(
    example_runs: Path, roomy: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    """The first Parquet write of `trajlab ingest --out NEW` fails: no NEW/ holding .lock and lab.json
    of an empty generation 0 is left (nor an empty folder the user had made, changed)."""
    from trajlab.store import _parts

    def full(self: object) -> None:
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    lab = tmp_path / "out" / "lab"
    if existing:
        lab.mkdir(parents=True)
    monkeypatch.setattr(_parts.PartWriter, "_write_group", full)
    res = CliRunner().invoke(cli, ["ingest", str(example_runs), "--out", str(lab), "-q", "-j", "1"])
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.output, res.output
    assert lines[0].startswith(f"Error: {lab}: No space left on device"), lines[0]
    assert "not created" in lines[0] and "Error writing bytes" not in lines[0], lines[0]
    if existing:
        assert lab.is_dir() and os.listdir(lab) == []
    else:
        assert not (tmp_path / "out").exists()
    monkeypatch.undo()
    assert _cli_ingest(example_runs, lab).exit_code == 0
    assert content(lab) == roomy


@needs_fork
def test_a_batch_failing_while_another_worker_writes_leaves_nothing_in_staging(
    example_runs: Path, roomy: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_workers: None
) -> None:
    """The first batch fails at once (its disk is full); the other worker is still parsing and then
    writes its parts. The transaction is rolled back only once no worker writes into its staging."""
    real = ingest_worker._parse_units

    def parse_units(args):  # runs in the forked workers
        if len(args[0]) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        time.sleep(1.0)
        return real(args)

    monkeypatch.setattr(ingest_run, "_batches", lambda units, sizes, n: [units[:1], units[1:]])
    monkeypatch.setattr(ingest_worker, "_parse_units", parse_units)
    lab = tmp_path / "lab"
    res = _cli_ingest(example_runs, lab)
    assert res.exit_code == 1
    assert staged(lab) == []
    assert "No space left on device" in res.output and "Traceback" not in res.output, res.output
    monkeypatch.setattr(ingest_worker, "_parse_units", real)
    assert _cli_ingest(example_runs, lab).exit_code == 0
    assert content(lab) == roomy


KILLED_WORKER = textwrap.dedent(
    """
    import os, signal, sys
    import trajlab.ingest._run as run
    import trajlab.ingest._worker as worker
    from trajlab.cli import main
    run.POOL_MIN_BYTES = 0
    run._batches = lambda units, sizes, n: [units[:1], units[1:]]
    real = worker._parse_units
    def parse_units(args):  # in the forked workers: the one that gets the one-unit batch dies
        if len(args[0]) == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(args)
    worker._parse_units = parse_units
    main(["ingest", sys.argv[1], "--out", sys.argv[2], "-q", "-j", "2"])
    """
)


@needs_fork
@needs_proc
def test_a_killed_worker_is_a_clear_error_not_a_hang(example_runs: Path, roomy: dict, tmp_path: Path) -> None:
    """kill -9 of one worker: a multiprocessing.Pool replaced it and waited forever for its batch."""
    lab = tmp_path / "lab"
    p = run_group([sys.executable, "-c", KILLED_WORKER, str(example_runs), str(lab)], reap=10)
    err = p.stderr
    assert p.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"Error: {lab}: an ingest worker process died"), lines[0]
    assert "rolled back" in lines[0] and "run the same command again" in lines[0]
    assert not lab.exists()  # the lab this run created committed nothing: removed again
    ingest([example_runs], lab, workers=1, progress=False)
    assert content(lab) == roomy


KILLED_FROM_OUTSIDE = KILL_FIRST_WORKER + textwrap.dedent(
    """
    import sys
    import trajlab.ingest._run as run
    from trajlab.cli import main
    run.POOL_MIN_BYTES = 0
    main(["ingest", sys.argv[1], "--out", sys.argv[2], "-q", "-j", "2"])
    """
)


@needs_proc
def test_a_worker_killed_from_outside_is_a_clear_error_on_every_start_method(
    many_runs: Path, tmp_path: Path
) -> None:
    """The killed-worker test above needs forked workers (a patch of the test process makes one kill
    itself), so on Python 3.12+ (forkserver) nothing checked a worker's death. Here the parent kills its
    first worker as soon as it exists, which works with fork, forkserver and spawn alike."""
    lab = tmp_path / "lab"
    p = run_group([sys.executable, "-c", KILLED_FROM_OUTSIDE, str(many_runs), str(lab)], reap=10)
    err = p.stderr
    assert p.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"Error: {lab}: an ingest worker process died"), lines[0]
    assert not lab.exists()  # the lab this run created committed nothing: removed again


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough runs (160 files) that the workers are still busy when the first one is killed."""
    out = tmp_path_factory.mktemp("many")
    generate_examples(out / "set", n_tasks=40, seed=5)
    return out / "set" / "runs"


CTRL_C_AT_FORK = textwrap.dedent(
    """
    import os, signal, sys
    import trajlab.ingest._run as run
    from trajlab.cli import main
    run.POOL_MIN_BYTES = 0
    run._batches = lambda units, sizes, n: [units[i::4] for i in range(4)]
    # Ctrl-C lands while the pool forks its workers (in the parent, right after each fork)
    os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))
    main(["ingest", sys.argv[1], "--out", sys.argv[2], "-q", "-j", "2"])
    """
)


@forks_here
def test_ctrl_c_while_the_workers_are_forked_is_not_lost(example_runs: Path, tmp_path: Path) -> None:
    """CPython drops a KeyboardInterrupt raised in an at-fork callback ("Exception ignored"): the
    ingest went on to the end and exited 0. SIGINT is now held back while the workers are forked."""
    lab = tmp_path / "lab"
    p = run_group([sys.executable, "-c", CTRL_C_AT_FORK, str(example_runs), str(lab)])
    assert p.returncode == 130, p.stderr
    assert "interrupted:" in p.stderr and "Traceback" not in p.stderr and "Exception ignored" not in p.stderr
    assert not lab.exists()  # the lab this run created committed nothing: removed again
