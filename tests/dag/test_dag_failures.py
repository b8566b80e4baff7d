"""`trajlab dag` when something fails under it: a full disk, a task failing while another worker still
writes, a worker killed. Each is a one-line error (or a typed one from `build_lab`), the lab stays at a
committed generation with nothing left in staging, no worker outlives the build, and building again
gives the same tables as a build that never failed."""

from __future__ import annotations

import errno
import functools
import multiprocessing as mp
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from procs import KILL_FIRST_WORKER, forks_here, needs_fork, needs_proc, run_group
from tmpfs import fill, tmpfs

import trajlab.dag._pool as dag_pool
import trajlab.dag._store as dag_store
import trajlab.ingest._run as ingest_run
from trajlab.cli import cli
from trajlab.dag import build_lab
from trajlab.errors import WorkerDiedError
from trajlab.examples import generate_examples
from trajlab.ingest import ingest
from trajlab.store import Lab


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab of example runs without DAGs, each run in a part of its own (so that a build with workers
    has several tasks: tasks are cut at row groups)."""
    out = tmp_path_factory.mktemp("examples")
    generate_examples(out / "set", n_tasks=3, runs_per_task=2, skill_runs=False, specials=False)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ingest_run, "BATCH_BYTES", 1)
        m.setattr(ingest_run, "MIN_BATCH_BYTES", 1)
        ingest([out / "set" / "runs"], out / "lab", workers=1, progress=False, commit_every_bytes=1)
    assert len(Lab.open(out / "lab").files("steps")) > 3
    return out / "lab"


@pytest.fixture(scope="module")
def roomy(ingested: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    lab = tmp_path_factory.mktemp("roomy") / "lab"
    shutil.copytree(ingested, lab, symlinks=True)
    build_lab(lab, progress=False, workers=1)
    return dag_tables(lab)


def dag_tables(lab: str | Path) -> dict[str, list]:
    lab = Lab.open(lab)
    out = {}
    for table in ("dag_nodes", "dag_edges", "dag_metrics"):
        rows = lab.read(table).to_pylist()
        for r in rows:
            r.pop("built_at", None)
        out[table] = sorted(rows, key=repr)
    return out


def staged(lab: Path) -> list[str]:
    return [str(p.relative_to(lab)) for p in (lab / "_staging").rglob("*")]


@pytest.fixture()
def lab(ingested: Path, tmp_path: Path) -> Path:
    shutil.copytree(ingested, tmp_path / "lab", symlinks=True)
    return tmp_path / "lab"


@pytest.fixture()
def pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes for this small lab, with a task per few trajectories."""
    monkeypatch.setattr(dag_store, "POOL_MIN_STEPS", 0)
    monkeypatch.setattr(dag_store, "TASK_STEPS", 10)


def test_dag_on_a_full_disk_is_one_line_and_keeps_the_lab(
    ingested: Path, roomy: dict, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "fs", 4) as fs:
        lab = fs / "lab"
        shutil.copytree(ingested, lab, symlinks=True)
        with Lab.open(lab).write("tidy"):  # drops the previous generation's folders (frees space)
            pass
        g0 = Lab.open(lab).generation
        filler = fill(fs)
        res = CliRunner().invoke(cli, ["dag", str(lab), "-q"])
        assert res.exit_code == 1, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in res.output, res.output
        assert lines[0].startswith(f"Error: {lab}: No space left on device"), lines[0]
        assert "rolled back" in lines[0] and f"generation {g0}" in lines[0]
        assert Lab.open(lab).generation == g0 and Lab.open(lab).rows("dag_metrics") == 0
        assert staged(lab) == []
        filler.unlink()
        again = CliRunner().invoke(cli, ["dag", str(lab), "-q"])
        assert again.exit_code == 0, again.output
        assert dag_tables(lab) == roomy


def _first_trajectory(lab: Path) -> str:
    """A trajectory of the first task (which the first worker takes)."""
    steps = Lab.open(lab).files("steps")[0]
    return pq.read_table(steps, columns=["trajectory_id"]).column("trajectory_id")[0].as_py()


@needs_fork
def test_a_task_failing_while_other_workers_write_leaves_nothing_in_staging(
    lab: Path, roomy: dict, monkeypatch: pytest.MonkeyPatch, pool: None
) -> None:
    """One task fails at once (its disk is full) while the other worker, and the tasks already queued
    for the workers, go on and write their parts: the transaction is rolled back only after them."""
    fail = _first_trajectory(lab)
    real = dag_pool.build_into

    def build_into(trajectory: dict[str, Any], steps: list, writers: dict) -> Any:  # in the workers
        if trajectory["trajectory_id"] == fail:
            raise OSError(errno.ENOSPC, "No space left on device")
        time.sleep(0.2)
        return real(trajectory, steps, writers)

    monkeypatch.setattr(dag_pool, "build_into", build_into)
    g0 = Lab.open(lab).generation
    with pytest.raises(Exception, match="No space left on device"):
        build_lab(lab, progress=False, workers=2)
    assert staged(lab) == []
    assert Lab.open(lab).generation == g0 and mp.active_children() == []
    monkeypatch.setattr(dag_pool, "build_into", real)
    build_lab(lab, progress=False, workers=2)
    assert dag_tables(lab) == roomy


@needs_fork
def test_a_killed_worker_is_a_worker_error_naming_the_lab(
    lab: Path, roomy: dict, monkeypatch: pytest.MonkeyPatch, pool: None
) -> None:
    kill = _first_trajectory(lab)
    real = dag_pool.build_into

    def build_into(trajectory: dict[str, Any], steps: list, writers: dict) -> Any:  # in the workers
        if trajectory["trajectory_id"] == kill:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(trajectory, steps, writers)

    monkeypatch.setattr(dag_pool, "build_into", build_into)
    g0 = Lab.open(lab).generation
    with pytest.raises(WorkerDiedError) as e:
        build_lab(lab, progress=False, workers=2)
    msg = str(e.value)
    assert msg.startswith(f"{lab}: a DAG worker process died") and "rolled back" in msg
    assert Lab.open(lab).generation == g0 and staged(lab) == []
    assert mp.active_children() == []  # the other worker is gone too
    import trajlab.cli.dag as dag_cli

    monkeypatch.setattr(dag_cli, "build_lab", functools.partial(build_lab, workers=2))
    res = CliRunner().invoke(cli, ["dag", str(lab), "-q"])  # and the CLI says it in one line
    assert res.exit_code == 1 and res.output.startswith(f"Error: {lab}: a DAG worker process died"), (
        res.output
    )
    assert len(res.output.strip().splitlines()) == 1
    monkeypatch.setattr(dag_pool, "build_into", real)
    build_lab(lab, progress=False, workers=2)
    assert dag_tables(lab) == roomy


KILLED_FROM_OUTSIDE = (
    KILL_FIRST_WORKER
    + """
import sys
import trajlab.dag._store as dag_store
from trajlab.cli import main
dag_store.POOL_MIN_STEPS, dag_store.TASK_STEPS = 0, 50
main(["dag", sys.argv[1], "-q", "-j", "2"])
"""
)


@needs_proc
def test_a_worker_killed_from_outside_is_a_worker_error_on_every_start_method(tmp_path: Path) -> None:
    """The killed-worker test above needs forked workers (a patch of the test process makes one kill
    itself), so on Python 3.12+ (forkserver) nothing checked a worker's death. Here the parent kills its
    first worker as soon as it exists, which works with fork, forkserver and spawn alike."""
    generate_examples(tmp_path / "set", n_tasks=40, seed=5)  # enough steps to keep the workers busy
    lab = tmp_path / "lab"
    ingest([tmp_path / "set" / "runs"], lab, workers=1, progress=False)
    g0 = Lab.open(lab).generation
    p = run_group([sys.executable, "-c", KILLED_FROM_OUTSIDE, str(lab)], reap=10)
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith(f"Error: {lab}: a DAG worker process died") and "rolled back" in lines[0]
    assert Lab.open(lab).generation == g0 and staged(lab) == [] and not Lab.open(lab).has("dag_nodes")


CTRL_C_AT_FORK = """
import functools, os, signal, sys
import trajlab.cli.dag as dag_cli
import trajlab.dag._store as dag_store
from trajlab.cli import main
from trajlab.dag import build_lab
dag_store.POOL_MIN_STEPS, dag_store.TASK_STEPS = 0, 10
dag_cli.build_lab = functools.partial(build_lab, workers=2)
# Ctrl-C lands while the pool forks its workers (in the parent, right after each fork)
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))
main(["dag", sys.argv[1], "-q"])
"""


@forks_here
def test_ctrl_c_while_the_workers_are_forked_is_not_lost(lab: Path) -> None:
    """CPython drops a KeyboardInterrupt raised in an at-fork callback ("Exception ignored"): the
    build went on to the end and exited 0. SIGINT is now held back while the workers are forked."""
    g0 = Lab.open(lab).generation
    p = run_group([sys.executable, "-c", CTRL_C_AT_FORK, str(lab)])
    out = p.stdout + p.stderr
    assert p.returncode == 130, out
    assert "interrupted:" in out and "Traceback" not in out and "Exception ignored" not in out
    assert Lab.open(lab).generation == g0 and staged(lab) == [] and not Lab.open(lab).has("dag_nodes")
