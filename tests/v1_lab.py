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
