"""The `tool_usage` table: calls per (trajectory, tool), materialized once per version of the steps.

Every tool-gap query starts by counting the calls of each trajectory per tool: a GROUP BY with one
group per trajectory and tool (1.8M groups for 10M calls), most of the query's cost. `tool_usage`
holds those counts. It is a derived cache, not a manifest table: it lives in
`LAB/_cache/tool_usage/<digest>/<key>-<time>-<id>.parquet`, where the digest names the exact steps
parts (and the key definitions) it was computed from, so it is stale as soon as the steps change, and
writing it neither takes the lab's write lock nor bumps the lab generation. On analysis connections
the `tool_usage` view reads the newest current file of each key and computes the other keys from
`steps`, so it always answers, fast once materialized (`refresh_tool_usage`, or `gaps()` on a big lab).

A file counts as current only if it also says so itself: its Parquet metadata records the format, the
digest and the key it was computed for, and its columns must be those of `ToolUsage`. A truncated,
foreign or hand-copied file is ignored (the view counts from steps) and rebuilt by the next refresh.
"""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash
from pydantic import Field

from ..schema import Table, arrow_schema
from ..store import Lab, Manifest
from ._catalog import TOOL_KEYS, USED_CALL

TOOL_USAGE_DIR = Path("_cache") / "tool_usage"
"""Where the materialized counts live, relative to the lab folder (ignored by Parquet globbing and by
the store, like `_staging`)."""

_FORMAT = "tool_usage/2"  # bump when the columns or their meaning change: old files become stale


class ToolUsage(Table):
    """Calls per (tool key, trajectory, tool): the `tool_usage` view of analysis connections.

    Only tool-call steps count. A trajectory without any tool call has no row.
    """

    key: str = Field(
        description="Which tool key names the tool: `tool` (the normalized tool), `tool_modality` "
        "(`python:video`) or `program` (every distinct program of a command line); see TOOL_KEYS."
    )
    trajectory_id: str = Field(description="The trajectory.")
    tool: str = Field(description="The tool under that key, e.g. `ffprobe`, `python:video`, `mkdir`.")
    n_calls: int = Field(description="Tool-call steps of the trajectory with this tool (>= 1).")
    n_errors: int = Field(description="Of those, calls flagged `is_error` or `timed_out`.")
    first_index: int = Field(description="step_index of the trajectory's first call of the tool.")


TOOL_USAGE_SCHEMA = arrow_schema(ToolUsage)

USAGE_META_KEY = b"trajlab.tool_usage"
"""Parquet key-value metadata of a materialized file: JSON {format, digest, key} it was computed for."""


def usage_select(key: str) -> str:
    """The SELECT over `steps` that yields the `tool_usage` rows of one key (what gets materialized)."""
    return (
        f"SELECT '{key}' AS key, trajectory_id, tool, count(*) AS n_calls,\n"
        "    count(*) FILTER (WHERE failed) AS n_errors, min(step_index) AS first_index\n"
        f"FROM (SELECT trajectory_id, {TOOL_KEYS[key]} AS tool, is_error OR timed_out AS failed, step_index\n"
        f"      FROM steps WHERE {USED_CALL})\n"
        "GROUP BY ALL"
    )


def usage_digest(lab: Lab) -> str:
    """Names the steps parts (path, rows, bytes) and key definitions the counts are computed from.

    Every change of the steps table publishes a new generation folder, so every part path changes
    (kept parts are hard-linked under the new generation): appends, deletes and rewrites all give a
    new digest, while writes to other tables (outcomes, labels) leave it alone.
    """
    return manifest_usage_digest(lab.manifest)


def manifest_usage_digest(manifest: Manifest) -> str:
    h = xxhash.xxh3_64()
    h.update(_FORMAT.encode())
    for k, expr in sorted(TOOL_KEYS.items()):
        h.update(f"\0{k}={expr}".encode())
    entry = manifest.tables.get("steps")
    for p in sorted(entry.parts, key=lambda p: p.path) if entry else []:
        h.update(f"\0{p.path}:{p.rows}:{p.bytes}".encode())
    return h.hexdigest()


def usage_dir(lab: Lab) -> Path:
    """The folder of the counts computed from the lab's current steps (it may not exist)."""
    return lab.root / TOOL_USAGE_DIR / usage_digest(lab)


def new_usage_name(key: str) -> str:
    """A fresh file name for one build of `key`: names sort by build time, and none is ever reused, so a
    published file is never replaced under a reader (DuckDB opens a file more than once per query)."""
    return f"{key}-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"


def usage_files(directory: Path, key: str, names: list[str] | None = None) -> list[Path]:
    """The published files of `key` in a digest folder, newest first (valid or not)."""
    if names is None:
        try:
            names = os.listdir(directory)
        except OSError:
            return []
    prefix = f"{key}-"
    return [
        directory / n for n in sorted(names, reverse=True) if n.startswith(prefix) and n.endswith(".parquet")
    ]


def usage_metadata(digest: str, key: str) -> dict[bytes, bytes]:
    """What a materialized file records about itself (checked by `usage_file_valid`)."""
    return {USAGE_META_KEY: json.dumps({"format": _FORMAT, "digest": digest, "key": key}).encode()}


@lru_cache(maxsize=256)
def _file_ok(path: str, size: int, mtime_ns: int, digest: str, key: str) -> bool:
    # keyed by size and mtime: a file replaced since is checked again
    try:
        schema = pq.read_schema(path)
        meta = json.loads((schema.metadata or {})[USAGE_META_KEY])
    except (OSError, KeyError, ValueError, pa.ArrowException):
        return False
    if not schema.equals(TOOL_USAGE_SCHEMA, check_metadata=False):
        return False
    return meta == {"format": _FORMAT, "digest": digest, "key": key}


def usage_file_valid(path: Path, digest: str, key: str) -> bool:
    """True when `path` is a complete tool_usage file of `key` computed for the steps named by `digest`."""
    try:
        st = path.stat()
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    return _file_ok(str(path), st.st_size, st.st_mtime_ns, digest, key)


def current_usage_files(lab: Lab) -> dict[str, Path]:
    """Per tool key, the newest complete file of counts for the lab's current steps (keys without one
    are left out)."""
    digest = usage_digest(lab)
    directory = lab.root / TOOL_USAGE_DIR / digest
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    out: dict[str, Path] = {}
    for key in TOOL_KEYS:
        for path in usage_files(directory, key, names):
            if usage_file_valid(path, digest, key):
                out[key] = path
                break
    return out


def current_usage_keys(lab: Lab) -> frozenset[str]:
    """The tool keys whose counts are materialized (complete, and for the lab's current steps)."""
    return frozenset(current_usage_files(lab))


def usage_file(lab: Lab, key: str) -> Path | None:
    """The file holding the counts of `key` for the lab's current steps, or None if not materialized."""
    return current_usage_files(lab).get(key)


def tool_usage_current(lab: Lab | str | os.PathLike[str], key: str = "tool") -> bool:
    """True when the counts of `key` are materialized and match the lab's current steps."""
    lab = lab if isinstance(lab, Lab) else Lab.open(lab)
    return key in current_usage_keys(lab)


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def usage_view_sql(files: Mapping[str, Path]) -> str:
    """The `tool_usage` view: per key, its materialized file (`current_usage_files`) if it has one, else
    computed from steps. A query filtering `key = '...'` reads only that key's branch (DuckDB prunes
    the others)."""
    parts = []
    for key in TOOL_KEYS:
        if key in files:
            parts.append(f"SELECT * FROM read_parquet({_sql_str(str(files[key]))})")
        else:
            parts.append(f"SELECT * FROM ({usage_select(key)})")
    return "\nUNION ALL BY NAME\n".join(parts)
