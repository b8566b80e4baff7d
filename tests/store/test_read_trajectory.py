"""`Lab.read_trajectory` / `read_trajectory_steps`: the same rows as a filtered `Lab.read`, with memory
that follows the one trajectory rather than the row groups holding it (what `trajlab dag show` and
`dag export` read); and `Lab.iter_batches`, the same rows as `Lab.read`, part by part."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import trajlab.store._parts as parts
from trajlab.errors import LabError
from trajlab.schema import TABLES, default_row
from trajlab.store import Lab, table_schema
from trajlab.store._parts import parquet_options, rows_to_table


def steps(tid: str, n: int, out_bytes: int = 64) -> list[dict]:
    return [
        {
            "trajectory_id": tid,
            "step_index": i,
            "step_id": f"{tid}:{i}",
            "kind": "tool_call",
            "tool": "shell",
            "output": os.urandom(out_bytes // 2).hex(),  # incompressible: takes its size on disk
        }
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    """Two commits (two parts), each with several row groups that each hold several trajectories, and
    a third part written before `tool_seq` existed (the column absent from the file)."""
    root = tmp_path_factory.mktemp("read") / "lab"
    lab = Lab.open(root, create=True)
    mp = pytest.MonkeyPatch()
    mp.setattr(parts, "ROW_GROUP_ROWS", 50)
    mp.setattr(parts, "CONVERT_ROWS", 10)
    try:
        for commit in range(2):
            with lab.write("add") as txn:
                for k in range(8):
                    txn.append("steps", steps(f"t{commit}{k}", 17 + k))
    finally:
        mp.undo()
    schema = table_schema("steps")
    old = rows_to_table(steps("t_old", 5), schema, default_row(TABLES["steps"])).drop_columns(["tool_seq"])
    with lab.write("old part") as txn:
        path = txn.staging_dir / "steps" / "part-old.parquet"
        path.parent.mkdir(parents=True)
        pq.write_table(old, path, **parquet_options(old.schema))
        txn.add_part("steps", path)
    assert len(lab.files("steps")) == 3
    assert pq.ParquetFile(lab.files("steps")[0]).metadata.num_row_groups > 2
    return lab


@pytest.mark.parametrize("columns", [None, ["step_index", "kind", "output"], ["output", "tool_seq"]])
def test_the_rows_are_those_of_a_filtered_read(lab: Lab, columns: list[str] | None) -> None:
    ids = sorted(set(lab.read("steps", ["trajectory_id"]).column("trajectory_id").to_pylist()))
    assert len(ids) == 17
    for tid in ids:
        want = lab.read("steps", columns, filter=pc.field("trajectory_id") == tid)
        got = lab.read_trajectory("steps", tid, columns)
        assert got.schema == want.schema
        assert got.to_pylist() == want.to_pylist(), tid
    old = lab.read_trajectory_steps("t_old", ["step_index", "tool_seq"]).to_pylist()
    assert [r["step_index"] for r in old] == [0, 1, 2, 3, 4] and {r["tool_seq"] for r in old} == {None}


def test_an_unknown_trajectory_or_column(lab: Lab) -> None:
    t = lab.read_trajectory("steps", "nope", ["step_index"])
    assert t.num_rows == 0 and t.schema == pa.schema([table_schema("steps").field("step_index")])
    assert lab.read_trajectory("dag_nodes", "t00").num_rows == 0  # a table with no parts
    with pytest.raises(pa.ArrowInvalid, match="no_such_column"):
        lab.read_trajectory("steps", "t00", ["no_such_column"])


@pytest.mark.parametrize("columns", [None, ["trajectory_id"], ["output", "tool_seq", "step_index"]])
def test_iter_batches_streams_the_rows_of_a_read(lab: Lab, columns: list[str] | None) -> None:
    want = lab.read("steps", columns)
    batches = list(lab.iter_batches("steps", columns, batch_size=20))
    assert len(batches) > len(lab.files("steps")) and max(b.num_rows for b in batches) <= 20
    got = pa.Table.from_batches(batches)
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()
    assert got.num_rows == sum(17 + k for k in range(8)) * 2 + 5
    if columns and "tool_seq" in columns:  # the part written before tool_seq reads it as nulls
        assert got.column("tool_seq").null_count >= 5


def test_iter_batches_of_an_unknown_column_or_a_damaged_part(lab: Lab, tmp_path: Path) -> None:
    with pytest.raises(pa.ArrowInvalid, match="no_such_column"):
        next(lab.iter_batches("steps", ["no_such_column"]))
    assert list(lab.iter_batches("dag_nodes")) == []  # a table with no parts
    copy = tmp_path / "lab"
    subprocess.run(["cp", "-a", str(lab.root), str(copy)], check=True)
    damaged = Lab.open(copy)
    part = damaged.files("steps")[1]
    part.write_bytes(part.read_bytes()[:200])
    with pytest.raises(LabError, match=rf"cannot read table 'steps': {part}: "):
        list(damaged.iter_batches("steps", ["trajectory_id"]))


PEAK = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa
    from trajlab.store import Lab
    lab = Lab.open(sys.argv[1])
    pool = pa.default_memory_pool()
    start = pool.max_memory()
    t = lab.read_trajectory_steps(sys.argv[2], ["step_index", "kind", "output"])
    print(json.dumps({"rows": t.num_rows, "start": start, "peak": pool.max_memory()}))
    """
)


def test_reading_one_trajectory_does_not_decode_its_row_group_whole(tmp_path: Path) -> None:
    """Row groups of about 24 MB of outputs (8 trajectories of 1,500 steps of 2 KB); one trajectory's
    steps hold 3 MB. The filtered dataset scan `dag show` used decoded the whole row group, with
    read-ahead, before filtering: Arrow's memory pool peaked at 139 MB here (124 MB for the 158 steps
    of one trajectory of the 400k-step benchmark lab). Reading 1,024 rows at a time, page by page, it
    peaks at 11 MB: the 3 MB result (twice, while the batches are concatenated), a 2 MB batch and the
    read buffers."""
    lab = Lab.open(tmp_path / "lab", create=True)
    with lab.write("add") as txn:
        for k in range(24):
            txn.append("steps", steps(f"t{k:02d}", 1500, out_bytes=2048))
    md = pq.ParquetFile(lab.files("steps")[0]).metadata
    assert md.num_row_groups >= 2 and md.row_group(0).total_byte_size > 20e6
    out = subprocess.run(
        [sys.executable, "-c", PEAK, str(lab.root), "t05"], capture_output=True, text=True, check=True
    )
    r = json.loads(out.stdout)
    assert r["rows"] == 1500
    assert r["peak"] - r["start"] < 24e6, r
