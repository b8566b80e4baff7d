"""The lab store: transactions (append/delete/clear), generations, the folder layout, old-schema parts."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trajlab.errors import LabError, SchemaError
from trajlab.store import Lab, query, table_schema

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def qrows(n: int, prefix: str = "f", start: int = 0) -> list[dict]:
    return [
        {
            "source_path": f"{prefix}{i}",
            "reason": f"r{i}",
            "error_type": "json",
            "ingested_at": NOW,
            "line": i,
        }
        for i in range(start, start + n)
    ]


def glob_count(lab: Lab, table: str) -> int:
    """Rows a plain Parquet reader sees by globbing the table folder."""
    return duckdb.sql(f"select count(*) from read_parquet('{lab.root}/{table}/*.parquet')").fetchall()[0][0]


def test_create_append_read(tmp_path: Path) -> None:
    lab = Lab.open(tmp_path / "lab", create=True)
    assert lab.generation == 0 and lab.tables() == []
    with lab.write("first") as txn:
        txn.append("quarantine", qrows(3))
        txn.append("sources", [{"source_path": "a", "status": "ingested", "ingested_at": NOW}])
    assert lab.generation == 1
    assert lab.rows("quarantine") == 3 and lab.read("quarantine").num_rows == 3
    assert lab.read("sources", ["source_path", "records_seen"]).to_pylist() == [
        {"source_path": "a", "records_seen": 0}  # non-nullable default filled in
    ]
    assert glob_count(lab, "quarantine") == 3
    again = Lab.open(tmp_path / "lab")
    assert again.generation == 1 and again.manifest.history[-1]["operation"] == "first"
    assert again.manifest.history[-1]["tables"]["quarantine"] == {"added": 3, "removed": 0, "rows": 3}


def test_delete_rewrites_only_matching_parts(tmp_path: Path) -> None:
    lab = Lab.open(tmp_path / "lab", create=True)
    lab.append("quarantine", qrows(4, "a"))
    lab.append("quarantine", qrows(4, "b"))
    parts_before = {p.path.rsplit("/", 1)[-1] for p in lab.manifest.tables["quarantine"].parts}
    with lab.write("delete") as txn:
        txn.delete("quarantine", "source_path", ["a1", "a2", "zzz"])
    t = lab.read("quarantine")
    assert sorted(t.column("source_path").to_pylist()) == ["a0", "a3", "b0", "b1", "b2", "b3"]
    names_after = {p.path.rsplit("/", 1)[-1] for p in lab.manifest.tables["quarantine"].parts}
    assert len(parts_before & names_after) == 1  # the b part is kept as it is (hard-linked)
    assert glob_count(lab, "quarantine") == 6
    with lab.write("delete all of a part") as txn:
        txn.delete("quarantine", "source_path", ["b0", "b1", "b2", "b3"])
    assert lab.rows("quarantine") == 2 and len(lab.manifest.tables["quarantine"].parts) == 1


def test_delete_then_append_same_key_keeps_the_new_rows(tmp_path: Path) -> None:
    lab = Lab.open(tmp_path / "lab", create=True)
    lab.append("quarantine", qrows(2))
    with lab.write("replace") as txn:
        txn.delete("quarantine", "source_path", ["f0"])
        txn.append("quarantine", [{**qrows(1)[0], "reason": "new"}])
    rows = {(r["source_path"], r["reason"]) for r in lab.read("quarantine").to_pylist()}
    assert rows == {("f0", "new"), ("f1", "r1")}


def test_clear_and_replace(tmp_path: Path) -> None:
    lab = Lab.open(tmp_path / "lab", create=True)
    lab.append("quarantine", qrows(5))
    lab.replace("quarantine", qrows(2, "z"))
    assert lab.read("quarantine").column("source_path").to_pylist() == ["z0", "z1"]
    with lab.write("clear") as txn:
        txn.clear("quarantine")
    assert lab.rows("quarantine") == 0 and lab.read("quarantine").num_rows == 0
    assert list((lab.root / "quarantine").iterdir()) == []  # the current folder holds no part
    assert lab.generation == 3


def test_noop_transaction_writes_nothing(tmp_path: Path) -> None:
    lab = Lab.open(tmp_path / "lab", create=True)
    lab.append("quarantine", qrows(1))
    manifest = (lab.root / "lab.json").read_bytes()
    with lab.write("nothing"):
        pass
    with lab.write("delete nothing") as txn:
        txn.delete("quarantine", "source_path", ["nope"])
    assert lab.generation == 1
    assert (lab.root / "lab.json").read_bytes() == manifest
    assert sorted(p.name for p in (lab.root / ".gen" / "quarantine").iterdir()) == ["g000001"]


def test_exception_in_the_block_rolls_back(tmp_path: Path) -> None:
    lab = Lab.open(tmp_path / "lab", create=True)
    lab.append("quarantine", qrows(2))
    with pytest.raises(RuntimeError), lab.write("boom") as txn:
        txn.append("quarantine", qrows(100, "x"))
        raise RuntimeError("stop")
    assert lab.refresh().generation == 1 and lab.rows("quarantine") == 2
    assert not any((lab.root / "_staging").glob("*"))


def test_schema_errors_name_the_column(tmp_path: Path) -> None:
    lab = Lab.open(tmp_path / "lab", create=True)
    with pytest.raises(SchemaError, match="line"), lab.write("bad") as txn:
        txn.append("quarantine", [{**qrows(1)[0], "line": "seven"}])
    with pytest.raises(SchemaError, match="unknown columns"), lab.write("bad") as txn:
        txn.append("quarantine", [{**qrows(1)[0], "colour": "red"}])
    with pytest.raises(SchemaError, match="reason"), lab.write("bad") as txn:
        txn.append("quarantine", [{"source_path": "a", "error_type": "x", "ingested_at": NOW}])
    assert lab.refresh().generation == 0


def test_layout_is_symlinked_generation_folders(tmp_path: Path) -> None:
    lab = Lab.open(tmp_path / "lab", create=True)
    lab.append("quarantine", qrows(1))
    lab.append("quarantine", qrows(1, "b"))
    link = lab.root / "quarantine"
    assert link.is_symlink() and Path(link.readlink()) == Path(".gen/quarantine/g000002")
    # the previous generation stays for readers that started before the switch ...
    assert sorted(p.name for p in (lab.root / ".gen" / "quarantine").iterdir()) == ["g000001", "g000002"]
    lab.append("sources", [{"source_path": "s", "status": "ingested", "ingested_at": NOW}])
    # ... until the next write starts
    assert sorted(p.name for p in (lab.root / ".gen" / "quarantine").iterdir()) == ["g000002"]
    assert all(p.path.startswith(".gen/quarantine/g000002/") for p in lab.manifest.tables["quarantine"].parts)


def test_old_schema_parts_read_with_nulls(tmp_path: Path) -> None:
    """Parts written before a column existed read as nulls, through pyarrow and through DuckDB."""
    lab = Lab.open(tmp_path / "lab", create=True)
    lab.append(
        "sources", [{"source_path": "new", "status": "ingested", "ingested_at": NOW, "meta_digest": "m"}]
    )
    old_schema = pa.schema(
        [f for f in table_schema("sources") if f.name not in ("meta_digest", "duplicate_of")]
    )
    old = pa.Table.from_pylist(
        [
            {
                "source_path": "old",
                "files": [],
                "sizes": [],
                "mtimes_ns": [],
                "status": "ingested",
                "records_seen": 1,
                "records_ingested": 1,
                "records_quarantined": 0,
                "trajectory_ids": [],
                "n_steps": 0,
                "n_tool_calls": 0,
                "ingested_at": NOW,
            }
        ],
        schema=old_schema,
    )
    with lab.write("old part") as txn:
        staged = txn.staging_dir / "old.parquet"
        pq.write_table(old, staged)
        txn.add_part("sources", staged)
    t = lab.read("sources", ["source_path", "meta_digest", "records_seen"]).sort_by("source_path")
    assert t.to_pylist() == [
        {"source_path": "new", "meta_digest": "m", "records_seen": 0},
        {"source_path": "old", "meta_digest": None, "records_seen": 1},
    ]
    got = query(lab, "select source_path, meta_digest, duplicate_of from sources order by 1").to_pylist()
    assert got == [
        {"source_path": "new", "meta_digest": "m", "duplicate_of": None},
        {"source_path": "old", "meta_digest": None, "duplicate_of": None},
    ]
    # a column that no part has yet is a typed NULL in the view
    only_old = Lab.open(tmp_path / "lab2", create=True)
    with only_old.write("old part") as txn:
        staged = txn.staging_dir / "old.parquet"
        pq.write_table(old, staged)
        txn.add_part("sources", staged)
    assert query(only_old, "select meta_digest from sources").to_pylist() == [{"meta_digest": None}]


def test_open_errors(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="no such lab"):
        Lab.open(tmp_path / "missing")
    (tmp_path / "notalab").mkdir()
    (tmp_path / "notalab" / "x.txt").write_text("x")
    with pytest.raises(LabError, match="not a lab"):
        Lab.open(tmp_path / "notalab")
    with pytest.raises(LabError, match="not empty"):
        Lab.open(tmp_path / "notalab", create=True)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "lab.json").write_text("{not json")
    with pytest.raises(LabError, match="corrupt manifest"):
        Lab.open(bad)
    (bad / "lab.json").write_text(json.dumps({"format": "trajlab-lab", "schema_version": 99}))
    with pytest.raises(LabError, match="newer than this trajlab"):
        Lab.open(bad)


def test_a_v1_lab_opens_without_writing_and_is_stamped_by_its_next_write(tmp_path: Path) -> None:
    """Schema v2 only adds steps.tool_seq: a v1 lab (here with a part that lacks the column) opens even
    when its folder is read-only, reads tool_seq as null, and records v2 at its next write."""
    from trajlab.schema import SCHEMA_VERSION

    assert SCHEMA_VERSION == 2
    lab = Lab.open(tmp_path / "lab", create=True)
    v1_steps = pa.schema([f for f in table_schema("steps") if f.name != "tool_seq"])
    row = {"trajectory_id": "t", "step_index": 0, "step_id": "t:0", "agent_id": "main", "depth": 0}
    row |= {"kind": "tool_call", "tool": "ls", "programs": [], "is_error": False, "timed_out": False}
    with lab.write("v1 part") as txn:
        staged = txn.staging_dir / "v1.parquet"
        pq.write_table(pa.Table.from_pylist([row], schema=v1_steps), staged)
        txn.add_part("steps", staged)
    manifest = json.loads((lab.root / "lab.json").read_text())
    manifest["schema_version"] = 1
    (lab.root / "lab.json").write_text(json.dumps(manifest))
    before = (lab.root / "lab.json").read_bytes()
    lab.root.chmod(0o555)
    try:
        old = Lab.open(lab.root)
        assert old.manifest.schema_version == 1 and (lab.root / "lab.json").read_bytes() == before
        assert query(old, "select tool, tool_seq from steps").to_pylist() == [
            {"tool": "ls", "tool_seq": None}
        ]
    finally:
        lab.root.chmod(0o755)
    old.append("quarantine", qrows(1))
    assert json.loads((lab.root / "lab.json").read_text())["schema_version"] == 2
