"""A schema-v1 copy of a real lab, for the tests that check the stages after ingest on an old lab.

Schema v2 only added `steps.tool_seq`. A lab written by schema v1 has steps parts without that column,
trajectory rows stamped `schema_version` 1 and a manifest (and table entries) at version 1; `v1_copy`
turns a copy of a lab built today into exactly that, keeping the manifest consistent (rows, bytes)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trajlab.store._parts import parquet_options


def v1_copy(lab: Path, dest: Path) -> Path:
    """Copy the lab at `lab` to `dest` (symlinks kept) and make the copy a schema-v1 lab; returns `dest`.

    Steps parts are rewritten without `tool_seq` (same row groups), trajectory rows get
    `schema_version` 1, the manifest's part sizes follow the rewritten files, and the derived
    `_cache` (tool_usage counts of the original parts) is dropped: a v1 lab never had one for these parts.
    """
    shutil.copytree(lab, dest, symlinks=True)
    shutil.rmtree(dest / "_cache", ignore_errors=True)
    manifest = json.loads((dest / "lab.json").read_text())
    for table, entry in manifest["tables"].items():
        entry["schema_version"] = 1
        if table not in ("steps", "trajectories"):
            continue
        for part in entry["parts"]:
            path = dest / part["path"]
            pf = pq.ParquetFile(path)
            t = pf.read()
            if table == "steps":
                t = t.drop_columns(["tool_seq"])
            else:
                i = t.schema.get_field_index("schema_version")
                t = t.set_column(i, t.schema.field(i), pa.array([1] * t.num_rows, t.schema.field(i).type))
            group = pf.metadata.row_group(0).num_rows if pf.metadata.num_row_groups else None
            pq.write_table(t, path, row_group_size=group, **parquet_options(t.schema))
            assert part["rows"] == t.num_rows
            part["bytes"] = path.stat().st_size
    manifest["schema_version"] = 1
    (dest / "lab.json").write_text(json.dumps(manifest, indent=1))
    return dest


def rounded(v: Any) -> Any:
    """Floats to 9 digits, in lists and dicts too: DuckDB sums doubles in a thread-dependent order, so
    the last bits of an average change between two runs over the same lab."""
    if isinstance(v, float):
        return round(v, 9)
    if isinstance(v, list):
        return [rounded(x) for x in v]
    if isinstance(v, dict):
        return {k: rounded(x) for k, x in v.items()}
    return v


def count_missing_programs(lab: Path, dest: Path) -> Path:
    """Copy the lab at `lab` to `dest` and number every tool call in `steps.tool_seq`, those of a program
    the shell did not find too (numbered 0 since rows v7): the lab as rows v6 wrote it, which counted
    such calls as uses, as a schema-v1 lab (no tool_seq) still does. Returns `dest`."""
    shutil.copytree(lab, dest, symlinks=True)
    shutil.rmtree(dest / "_cache", ignore_errors=True)
    manifest = json.loads((dest / "lab.json").read_text())
    for part in manifest["tables"]["steps"]["parts"]:
        path = dest / part["path"]
        pf = pq.ParquetFile(path)
        t = pf.read()
        rows = t.select(["trajectory_id", "step_index", "kind", "tool", "tool_name"]).to_pylist()
        seq = [0] * len(rows)
        seen: dict[tuple[str, str], int] = {}
        for k in sorted(range(len(rows)), key=lambda k: (rows[k]["trajectory_id"], rows[k]["step_index"])):
            r = rows[k]
            if r["kind"] == "tool_call":
                name = r["tool"] if r["tool"] is not None else r["tool_name"]
                key = (r["trajectory_id"], "(unknown)" if name is None else name)
                seq[k] = seen[key] = seen.get(key, 0) + 1
        i = t.schema.get_field_index("tool_seq")
        t = t.set_column(i, t.schema.field(i), pa.array(seq, t.schema.field(i).type))
        group = pf.metadata.row_group(0).num_rows if pf.metadata.num_row_groups else None
        pq.write_table(t, path, row_group_size=group, **parquet_options(t.schema))
        part["bytes"] = path.stat().st_size
    (dest / "lab.json").write_text(json.dumps(manifest, indent=1))
    return dest
