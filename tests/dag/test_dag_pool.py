"""Parallel builds: tasks own whole trajectories, and worker processes write exactly the tables that a
build in one process writes (steps spread over several part files and row groups)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagfix import Run
from test_omni import audio_run, mixed_run, video_run

import trajlab.dag._store as dag_store
from trajlab.dag import build_lab
from trajlab.dag._scan import Task, make_tasks, step_rows
from trajlab.errors import LabError
from trajlab.schema import TABLES, default_row
from trajlab.store import Lab, rows_to_table, table_schema
from trajlab.store._lab import STAGING


def _runs() -> list[Run]:
    runs = []
    for k in range(12):
        r = [video_run, audio_run, lambda: mixed_run(True), lambda: mixed_run(False)][k % 4]()
        tid = f"t_pool_{k:02d}"
        r.trajectory["trajectory_id"] = tid
        for s in r.steps:
            s["trajectory_id"] = tid
        runs.append(r)
    return runs


def _step_table(rows: list[dict[str, Any]]) -> pa.Table:
    rows = [{**s, "step_id": f"{s['trajectory_id']}:{s['step_index']}"} for s in rows]
    return rows_to_table(rows, table_schema("steps"), default_row(TABLES["steps"]))


def _write_part(lab: Lab, txn: Any, name: str, rows: list[dict[str, Any]], row_group: int) -> None:
    path = txn.staging_dir / name
    pq.write_table(_step_table(rows), path, row_group_size=row_group)
    txn.add_part("steps", path)


@pytest.fixture()
def lab(tmp_path: Path) -> Lab:
    """12 trajectories in 3 part files with row groups of 7 steps: most trajectories cross a row
    group, t_pool_05 is split between two part files, and t_pool_09's steps come last-half first."""
    lab = Lab.create(tmp_path / "lab")
    runs = _runs()
    now = datetime.now(timezone.utc)
    traj = [
        {**r.trajectory, "format": "fixture", "source_path": f"/f/{r.trajectory['trajectory_id']}",
         "source_digest": "xxh3_128:0", "n_steps": len(r.steps), "ingested_at": now}
        for r in runs
    ]  # fmt: skip
    steps = [s for r in runs for s in r.steps]
    split = [s for s in steps if s["trajectory_id"] == "t_pool_05"]
    first = [s for s in steps if s["trajectory_id"] < "t_pool_05"] + split[: len(split) // 2]
    second = split[len(split) // 2 :] + [s for s in steps if "t_pool_05" < s["trajectory_id"] < "t_pool_09"]
    late = [s for s in steps if s["trajectory_id"] == "t_pool_09"]
    third = (
        late[len(late) // 2 :]
        + late[: len(late) // 2]
        + [s for s in steps if s["trajectory_id"] > "t_pool_09"]
    )
    with lab.write("fixture") as txn:
        txn.append("trajectories", traj)
        for k, part in enumerate((first, second, third)):
            _write_part(lab, txn, f"p{k}.parquet", part, 7)
    lab = lab.refresh()
    assert len(lab.files("steps")) == 3 and lab.rows("steps") == len(steps)
    return lab


def _tables(lab: Lab) -> dict[str, list[dict[str, Any]]]:
    keys = {"dag_nodes": ("node_id",), "dag_edges": ("src", "dst", "type"), "dag_metrics": ()}
    out = {}
    for table, k in keys.items():
        rows = lab.read(table).to_pylist()
        for r in rows:
            r.pop("built_at", None)
        out[table] = sorted(rows, key=lambda r: (r["trajectory_id"], *(r[c] for c in k)))
    return out


def test_workers_write_the_same_tables_as_one_process(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    one = build_lab(lab, rebuild=True, progress=False, workers=1)
    assert (one.built, one.failed) == (12, [])
    single = _tables(lab)
    assert len(single["dag_metrics"]) == 12 and len(single["dag_nodes"]) == one.steps == lab.rows("steps")
    monkeypatch.setattr(dag_store, "POOL_MIN_STEPS", 0)  # a pool for this small lab,
    monkeypatch.setattr(dag_store, "TASK_STEPS", 10)  # cut into many small tasks
    pool = build_lab(lab, rebuild=True, progress=False, workers=2)
    assert (pool.built, pool.steps, pool.nodes, pool.edges, pool.candidates) == (
        one.built, one.steps, one.nodes, one.edges, one.candidates,
    )  # fmt: skip
    assert pool.anomaly_kinds == one.anomaly_kinds
    lab = lab.refresh()
    assert len(lab.files("dag_nodes")) > 1  # several tasks wrote their own parts
    parallel = _tables(lab)
    for table in single:
        assert parallel[table] == single[table], table
    # the split and reordered trajectories were built whole, not in pieces
    m = {r["trajectory_id"]: r for r in parallel["dag_metrics"]}
    n5 = sum(1 for r in parallel["dag_nodes"] if r["trajectory_id"] == "t_pool_05")
    assert m["t_pool_05"]["n_nodes"] == n5 == len(audio_run().steps)  # k = 5: an audio run
    assert "steps out of order in the input: sorted by step_index" in m["t_pool_09"]["anomalies"]
    assert not any("out of order" in a for t, r in m.items() if t != "t_pool_09" for a in r["anomalies"])


def test_unreadable_steps_part_is_a_lab_error(lab: Lab) -> None:
    part = lab.files("steps")[1]
    part.write_bytes(part.read_bytes()[:100])
    with pytest.raises(LabError, match="cannot read steps part"):
        build_lab(lab, rebuild=True, progress=False, workers=2)
    assert lab.refresh().rows("dag_nodes") == 0  # nothing was committed


def test_tasks_own_whole_trajectories_and_read_their_row_groups() -> None:
    a, b = Path("a.parquet"), Path("b.parquet")
    # (part, row group, trajectory, rows) in storage order: t1 spans a:0-1, t3 spans a:1 and b:0
    where = [(a, 0, "t1", 5), (a, 1, "t1", 2), (a, 1, "t2", 3), (a, 1, "t3", 1), (b, 0, "t3", 4),
             (b, 0, "t4", 6), (b, 1, "t5", 2)]  # fmt: skip
    counts = {"t1": 7, "t2": 3, "t3": 5, "t4": 6, "t5": 2}
    trows = {t: {"trajectory_id": t} for t in counts}
    tasks = make_tasks(where, counts, trows, task_steps=8)
    owned = [sorted(t.counts) for t in tasks]
    # t3 starts in a:1 like t2, so it stays with t2 (a row group's starts are cut apart never);
    # the first task reads b:0 too, where t3 ends
    assert owned == [["t1", "t2", "t3"], ["t4", "t5"]]
    assert [t.reads for t in tasks] == [[(a, [0, 1]), (b, [0])], [(b, [0, 1])]]
    assert [t.steps for t in tasks] == [15, 8]
    small = make_tasks(where, counts, trows, task_steps=1)  # one task per row group where runs start
    assert [sorted(t.counts) for t in small] == [["t1"], ["t2", "t3"], ["t4"], ["t5"]]
    assert all(isinstance(t, Task) and t.trajectories.keys() == t.counts.keys() for t in tasks)
    one = make_tasks(where, counts, trows, task_steps=10**9)
    assert len(one) == 1 and one[0].reads == [(a, [0, 1]), (b, [0, 1])] and one[0].steps == 23


def test_step_rows_timestamps_are_the_datetimes_posix_seconds() -> None:
    t = datetime(2026, 2, 1, 12, 30, 5, 123457, tzinfo=timezone.utc)
    row = {"trajectory_id": "t", "step_index": 0, "kind": "user", "timestamp": t}
    batch = _step_table([row]).select(["trajectory_id", "step_index", "timestamp"]).to_batches()[0]
    out = step_rows(batch)
    assert out[0]["timestamp"] == t.timestamp() and isinstance(out[0]["timestamp"], float)
    assert out[0]["step_index"] == 0


@pytest.mark.parametrize("workers", [1, 2])
def test_a_build_commits_every_so_many_steps_and_writes_the_same_tables(
    lab: Lab, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    one = build_lab(lab, rebuild=True, progress=False, workers=1)
    assert one.commits == 1
    single = _tables(lab)
    monkeypatch.setattr(dag_store, "POOL_MIN_STEPS", 0)
    monkeypatch.setattr(dag_store, "TASK_STEPS", 10)
    g0 = lab.refresh().generation
    rep = build_lab(lab, rebuild=True, progress=False, workers=workers, commit_every_steps=30)
    assert rep.commits > 2
    assert rep.generation == g0 + rep.commits  # one lab generation per transaction
    assert (rep.built, rep.steps, rep.edges, rep.failed) == (one.built, one.steps, one.edges, [])
    assert _tables(lab.refresh()) == single


def test_an_interrupted_build_keeps_its_committed_transactions_and_the_rerun_goes_on(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagfix import interrupt_build_at

    from trajlab.dag import DagInterrupted

    build_lab(lab, progress=False, workers=1)
    single = _tables(lab)
    undo = interrupt_build_at(monkeypatch, 9)
    g0 = lab.refresh().generation
    with pytest.raises(DagInterrupted) as e:
        build_lab(lab, rebuild=True, progress=False, workers=1, commit_every_steps=30)
    rep = e.value.report
    assert rep.commits > 0 and 0 < rep.built < 8  # only what was committed is reported
    lab = lab.refresh()
    assert lab.generation == g0 + rep.commits
    assert not any((lab.root / STAGING).glob("*"))  # the transaction in flight was rolled back
    # the committed DAGs are rebuilt ones, the others still have their earlier DAGs: nothing is lost
    assert _tables(lab) == single
    built_at = {r["trajectory_id"]: r["built_at"] for r in lab.read("dag_metrics").to_pylist()}
    assert len(built_at) == 12
    undo()
    # a DAG that is missing (never built) is what an incremental rerun builds
    with lab.write("drop some") as txn:
        for table in ("dag_nodes", "dag_edges", "dag_metrics"):
            txn.delete(table, "trajectory_id", ["t_pool_10", "t_pool_11"])
    again = build_lab(lab, progress=False, workers=1)
    assert (again.built, again.up_to_date) == (2, 10)
    assert _tables(lab.refresh()) == single
