"""The `tool_usage` table: calls per (trajectory, tool), materialized once per version of the steps.

Every tool-gap query starts by counting the calls of each trajectory per tool: a GROUP BY with one
group per trajectory and tool (1.8M groups for 10M calls), which costs ten times more than the rest of
the query. `tool_usage` holds those counts. It is a derived cache, not a manifest table: it lives in
`LAB/_cache/tool_usage/<digest>/<key>.parquet`, where the digest names the exact steps parts (and the
key definitions) it was computed from, so it is stale as soon as the steps change and writing it
neither takes the lab's write lock nor bumps the lab generation. On analysis connections the
`tool_usage` view reads the file of each key that is current and computes the other keys from `steps`,
so it always answers, fast once materialized (`refresh_tool_usage`, or `gaps()` on a big lab).
"""

from __future__ import annotations

import os
from pathlib import Path

import xxhash
from pydantic import Field

from ..schema import Table, arrow_schema
from ..store import Lab
from ._catalog import TOOL_KEYS

TOOL_USAGE_DIR = Path("_cache") / "tool_usage"
"""Where the materialized counts live, relative to the lab folder (ignored by Parquet globbing and by
the store, like `_staging`)."""

_FORMAT = "tool_usage/1"  # bump when the columns or their meaning change: old files become stale


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


def usage_select(key: str) -> str:
    """The SELECT over `steps` that yields the `tool_usage` rows of one key (what gets materialized)."""
    return (
        f"SELECT '{key}' AS key, trajectory_id, tool, count(*) AS n_calls,\n"
        "    count(*) FILTER (WHERE failed) AS n_errors, min(step_index) AS first_index\n"
        f"FROM (SELECT trajectory_id, {TOOL_KEYS[key]} AS tool, is_error OR timed_out AS failed, step_index\n"
        "      FROM steps WHERE kind = 'tool_call')\n"
        "GROUP BY ALL"
    )


def usage_digest(lab: Lab) -> str:
    """Names the steps parts (path, rows, bytes) and key definitions the counts are computed from."""
    h = xxhash.xxh3_64()
    h.update(_FORMAT.encode())
    for k, expr in sorted(TOOL_KEYS.items()):
        h.update(f"\0{k}={expr}".encode())
    entry = lab.manifest.tables.get("steps")
    for p in sorted(entry.parts, key=lambda p: p.path) if entry else []:
        h.update(f"\0{p.path}:{p.rows}:{p.bytes}".encode())
    return h.hexdigest()


def usage_file(lab: Lab, key: str) -> Path:
    """The Parquet file holding the counts of `key` for the lab's current steps (it may not exist)."""
    return lab.root / TOOL_USAGE_DIR / usage_digest(lab) / f"{key}.parquet"


def current_usage_keys(lab: Lab) -> frozenset[str]:
    """The tool keys whose counts are materialized for the lab's current steps."""
    base = lab.root / TOOL_USAGE_DIR / usage_digest(lab)
    return frozenset(k for k in TOOL_KEYS if (base / f"{k}.parquet").is_file())


def tool_usage_current(lab: Lab | str | os.PathLike[str], key: str = "tool") -> bool:
    """True when the counts of `key` are materialized and match the lab's current steps."""
    lab = lab if isinstance(lab, Lab) else Lab.open(lab)
    return key in current_usage_keys(lab)


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def usage_view_sql(lab: Lab, materialized: frozenset[str]) -> str:
    """The `tool_usage` view: per key, the materialized file when current, else computed from steps.

    A query filtering `key = '...'` reads only that key's branch (DuckDB prunes the others).
    """
    parts = []
    for key in TOOL_KEYS:
        if key in materialized:
            parts.append(f"SELECT * FROM read_parquet({_sql_str(str(usage_file(lab, key)))})")
        else:
            parts.append(f"SELECT * FROM ({usage_select(key)})")
    return "\nUNION ALL BY NAME\n".join(parts)
