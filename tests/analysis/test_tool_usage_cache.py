"""The tool_usage cache as a cache: invalidation, incomplete or foreign files, user SQL, concurrency."""

from __future__ import annotations

import shutil
import threading

import pyarrow.parquet as pq
import pytest
from analysis_labs import LabBuilder

from trajlab.analysis import (
    TOOL_USAGE_DIR,
    refresh_tool_usage,
    run_analysis,
    run_sql,
    tool_usage_current,
    tool_usage_rows,
)
from trajlab.errors import QueryError
from trajlab.store import Lab

NO_SUPPORT = {"min_support": 0, "min_trajectories": 0}


def _lab(b: LabBuilder) -> Lab:
    b.traj("S1", "success", model="m1").traj("S2", "success", model="m1")
    b.traj("F1", "failure", model="m2").traj("F2", "failure", model="m2")
    b.call("S1", "ffprobe"), b.call("S1", "ffprobe"), b.call("S1", "python", error=True)
    b.call("S2", "ls")
    b.call("F1", "python"), b.step("F1"), b.call("F1", "python"), b.call("F1", "ls")
    b.step("F2")
    return b.build()


def _counts(table) -> dict[tuple[str, str], int]:
    return {(r["trajectory_id"], r["tool"]): r["n_calls"] for r in table.to_pylist()}


BASE = {("S1", "ffprobe"): 2, ("S1", "python"): 1, ("S2", "ls"): 1, ("F1", "python"): 2, ("F1", "ls"): 1}


def test_outcome_changes_keep_the_counts_and_apply_at_query_time(builder):
    lab = _lab(builder)
    path = refresh_tool_usage(lab, progress=False)[0].path
    # a write to trajectories only: S2 becomes a failure; the steps (and so the counts) are unchanged
    row = next(r for r in builder.trajectories if r["trajectory_id"] == "S2")
    with lab.write("relabel") as txn:
        txn.delete("trajectories", "trajectory_id", ["S2"])
        txn.append("trajectories", [{**row, "outcome": "failure"}])
    assert tool_usage_current(lab) and refresh_tool_usage(lab, progress=False)[0].path == path
    res = run_analysis(lab, "gaps", params=NO_SUPPORT)
    assert res.params["counts"] == "tool_usage"
    assert res.table.equals(run_sql(lab, "gaps", params=NO_SUPPORT))
    ls = {r["tool"]: r for r in res.table.to_pylist()}["ls"]
    # failures S2 (1 call: ls), F1 (3 calls), F2 (none); the one success S1 has 3 calls
    assert (ls["calls_success"], ls["calls_failure"], ls["traj_using_failure"]) == (0, 2, 2)
    assert (ls["n_traj_success"], ls["n_traj_failure"]) == (1, 3)
    assert ls["share_failure"] == pytest.approx(2 / 4) and ls["usage_failure"] == pytest.approx(2 / 3)


def test_deleting_steps_makes_the_counts_stale(builder):
    lab = _lab(builder)
    old = refresh_tool_usage(lab, progress=False)[0]
    assert _counts(pq.read_table(old.path)) == BASE
    with lab.write("drop F1 steps") as txn:
        txn.delete("steps", "trajectory_id", ["F1"])
    assert not tool_usage_current(lab)
    want = {k: v for k, v in BASE.items() if k[0] != "F1"}
    assert _counts(tool_usage_rows(lab)) == want  # computed from steps, not the stale file
    assert run_analysis(lab, "gaps", params=NO_SUPPORT).params["counts"] == "steps"
    new = refresh_tool_usage(lab, progress=False)[0]
    assert new.built and new.path != old.path and new.rows == 3
    assert _counts(pq.read_table(new.path)) == want


def test_incomplete_file_is_ignored_then_rebuilt(builder):
    lab = _lab(builder)
    path = refresh_tool_usage(lab, progress=False)[0].path
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # e.g. a torn copy
    assert not tool_usage_current(lab)
    res = run_analysis(lab, "gaps", params=NO_SUPPORT)
    assert res.params["counts"] == "steps" and res.table.equals(run_sql(lab, "gaps", params=NO_SUPPORT))
    f = refresh_tool_usage(lab, progress=False)[0]
    assert f.built and f.path != path and f.path.parent == path.parent and tool_usage_current(lab)
    assert _counts(pq.read_table(f.path)) == BASE and _counts(tool_usage_rows(lab)) == BASE
    f.path.write_bytes(b"")  # the newest file is empty, the older one torn: neither is used
    assert not tool_usage_current(lab) and _counts(tool_usage_rows(lab)) == BASE


def test_files_for_other_steps_or_another_key_are_ignored(builder):
    lab = _lab(builder)
    tool_file, prog_file = (f.path for f in refresh_tool_usage(lab, ["tool", "program"], progress=False))
    with lab.write("more steps") as txn:
        txn.append("steps", [{"trajectory_id": "F2", "step_index": 1, "step_id": "F2:1", "kind": "tool_call",
                              "tool": "whisper"}])  # fmt: skip
    assert not tool_usage_current(lab)
    # the old file copied by hand into the new version's folder still describes the old steps
    new_dir = lab.root / TOOL_USAGE_DIR / _digest(lab)
    new_dir.mkdir(parents=True)
    shutil.copy(tool_file, new_dir / "tool.parquet")
    assert not tool_usage_current(lab, "tool")
    assert _counts(tool_usage_rows(lab))[("F2", "whisper")] == 1
    # a file of another key under this key's name
    fresh = refresh_tool_usage(lab, "program", progress=False)[0].path
    shutil.copy(fresh, new_dir / "tool.parquet")
    assert not tool_usage_current(lab, "tool") and tool_usage_current(lab, "program")
    f = refresh_tool_usage(lab, progress=False)[0]
    assert f.built and tool_usage_current(lab, "tool")
    assert _counts(pq.read_table(f.path)) == {**BASE, ("F2", "whisper"): 1}
    assert prog_file.is_file()  # the older version is kept for STALE_GRACE_S


def _digest(lab: Lab) -> str:
    from trajlab.analysis._usage import usage_digest

    return usage_digest(lab)


def test_a_stale_process_does_not_prune_the_current_counts(builder, monkeypatch):
    import trajlab.analysis._materialize as mat

    lab = _lab(builder)
    stale = Lab.open(lab.root)  # opened before the next write: still sees the old steps
    with lab.write("drop F1 steps") as txn:
        txn.delete("steps", "trajectory_id", ["F1"])
    current = refresh_tool_usage(lab, progress=False)[0].path
    monkeypatch.setattr(mat, "STALE_GRACE_S", -1.0)  # everything counts as idle
    old = refresh_tool_usage(stale, progress=False)[0].path
    assert old != current and old.is_file() and current.is_file()
    assert tool_usage_current(Lab.open(lab.root))
    # the current process prunes the old version, and (grace -1) the build its new file supersedes
    new = refresh_tool_usage(lab, force=True, progress=False)[0].path
    assert not old.parent.exists() and new.is_file() and new.parent == current.parent
    assert not current.is_file() and tool_usage_current(lab)


def test_user_sql_cannot_write_the_cache(builder):
    lab = _lab(builder)
    path = refresh_tool_usage(lab, progress=False)[0].path
    before = path.read_bytes()
    forge = f"COPY (SELECT * REPLACE (100 AS n_calls) FROM tool_usage) TO '{path}' (FORMAT parquet)"
    for sql in (forge, f"EXPLAIN ANALYZE {forge}", f"-- c\nexplain analyse {forge}",
                f"EXPLAIN (FORMAT json) ANALYZE {forge}", f"SELECT 1; EXPLAIN ANALYZE {forge}"):  # fmt: skip
        with pytest.raises(QueryError):
            run_sql(lab, sql)
    assert path.read_bytes() == before and not list(lab.root.glob("*.parquet"))
    # EXPLAIN (ANALYZE) of a query still works
    assert run_sql(lab, "EXPLAIN ANALYZE SELECT sum(n_calls) FROM tool_usage").num_rows == 1


def test_readers_during_rebuilds_always_see_complete_counts(builder):
    lab = _lab(builder)
    refresh_tool_usage(lab, progress=False)
    want = run_sql(lab, "gaps", params=NO_SUPPORT)
    errors: list[BaseException] = []
    seen: set[str] = set()
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                res = run_analysis(Lab.open(lab.root), "gaps", params=NO_SUPPORT)
                seen.add(res.params["counts"])
                assert res.table.equals(want)
        except BaseException as e:  # reported below
            errors.append(e)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        for _ in range(15):
            refresh_tool_usage(lab, force=True, progress=False)
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not errors, errors[0]
    assert "tool_usage" in seen
    assert not list((lab.root / TOOL_USAGE_DIR).glob("*/.*.tmp"))
    # superseded builds stay for STALE_GRACE_S (a reader may still be on one): 1 + 15 files
    assert len(list((lab.root / TOOL_USAGE_DIR).glob("*/tool-*.parquet"))) == 16


def test_comments_between_explain_and_analyze_get_the_read_only_message(builder):
    # `EXPLAIN /* c */ ANALYZE COPY ...` was refused too, but with DuckDB's parser error about the
    # text after the comment instead of saying why
    lab = _lab(builder)
    path = refresh_tool_usage(lab, progress=False)[0].path
    forge = f"COPY (SELECT * FROM tool_usage) TO '{path}.x' (FORMAT parquet)"
    for sql in (f"EXPLAIN /* c */ ANALYZE {forge}", f"EXPLAIN -- c\n ANALYSE /* d */ {forge}"):
        with pytest.raises(QueryError, match="only read-only queries are allowed"):
            run_sql(lab, sql)
    assert not path.with_name(path.name + ".x").exists()
    assert run_sql(lab, "EXPLAIN /* c */ ANALYZE -- d\n SELECT sum(n_calls) FROM tool_usage").num_rows == 1
