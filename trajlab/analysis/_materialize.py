"""Writing the `tool_usage` counts (see `_usage`): one streaming query per tool key, atomically renamed."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from ..errors import ConfigError, LabError
from ..store import fetch_arrow
from ._catalog import TOOL_KEYS
from ._run import LabLike, connection, open_lab
from ._usage import TOOL_USAGE_DIR, TOOL_USAGE_SCHEMA, usage_digest, usage_file, usage_select

AUTO_MATERIALIZE_CALLS = 1_000_000
"""`gaps(counts="auto")` materializes tool_usage for labs with at least this many tool calls (below it,
counting from steps takes a fraction of a second and the lab folder is left untouched)."""

ROW_GROUP_ROWS = 122_880  # DuckDB's own row-group size: enough row groups for every thread to scan
STALE_GRACE_S = 600.0  # counts of older steps are deleted once untouched this long (readers may finish)


@dataclass(frozen=True)
class ToolUsageFile:
    """One materialized key: where it is, how many rows, and whether this call wrote it."""

    key: str
    path: Path
    rows: int
    built: bool
    seconds: float = 0.0


def refresh_tool_usage(
    lab: LabLike,
    keys: str | Iterable[str] = ("tool",),
    force: bool = False,
    progress: bool = True,
) -> list[ToolUsageFile]:
    """Materialize the `tool_usage` counts of `keys` for the lab's current steps, if not done yet.

    Each key is one read-only DuckDB query over `steps` (GROUP BY trajectory and tool) whose result
    streams in batches into `LAB/_cache/tool_usage/<digest>/<key>.parquet` (written to a temporary
    name, then renamed, so readers never see half a file). Counts of older versions of the steps are
    removed. `force` rebuilds even when current. Raises LabError when the lab folder is not writable.
    """
    lab = open_lab(lab)
    wanted = [keys] if isinstance(keys, str) else list(dict.fromkeys(keys))
    for k in wanted:
        if k not in TOOL_KEYS:
            raise ConfigError(f"key must be one of {', '.join(TOOL_KEYS)}, not {k!r}")
    out: list[ToolUsageFile] = []
    todo = []
    for k in wanted:
        path = usage_file(lab, k)
        if path.is_file() and not force:
            out.append(ToolUsageFile(k, path, pq.ParquetFile(path).metadata.num_rows, built=False))
        else:
            todo.append(k)
    bar = tqdm(todo, desc="tool_usage", unit="key", disable=(not progress) or None, leave=False)
    for k in bar:
        bar.set_postfix_str(k)
        t0 = time.perf_counter()
        try:
            path, rows = _write(lab, k)
        except OSError as e:
            raise LabError(f"cannot materialize tool_usage in {lab.root / TOOL_USAGE_DIR}: {e}") from e
        out.append(ToolUsageFile(k, path, rows, built=True, seconds=time.perf_counter() - t0))
    if todo:
        _prune(lab)
    order = {k: i for i, k in enumerate(wanted)}
    return sorted(out, key=lambda f: order[f.key])


def _write(lab, key: str) -> tuple[Path, int]:
    path = usage_file(lab, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    cur = connection(lab)
    rows = 0
    try:
        rel = cur.sql(usage_select(key))
        reader = getattr(rel, "to_arrow_reader", None) or rel.fetch_record_batch  # DuckDB 2.x / 1.x
        reader = reader(ROW_GROUP_ROWS)
        with pq.ParquetWriter(
            tmp,
            TOOL_USAGE_SCHEMA,
            compression="lz4",
            use_dictionary=["key", "trajectory_id", "tool"],
            write_statistics=True,
        ) as writer:
            for batch in reader:
                table = pa.Table.from_batches([batch]).cast(TOOL_USAGE_SCHEMA)
                writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
                rows += table.num_rows
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        cur.close()
    return path, rows


def _prune(lab) -> None:
    """Delete counts computed from older steps (and crashed temporary files) once they are idle."""
    base = lab.root / TOOL_USAGE_DIR
    keep = usage_digest(lab)
    now = time.time()
    for d in base.iterdir() if base.is_dir() else []:
        try:
            idle = now - d.stat().st_mtime
        except FileNotFoundError:
            continue
        if d.name == keep:
            for f in d.glob(".*.tmp"):
                if now - f.stat().st_mtime > STALE_GRACE_S:
                    f.unlink(missing_ok=True)
        elif idle > STALE_GRACE_S:
            shutil.rmtree(d, ignore_errors=True) if d.is_dir() else d.unlink(missing_ok=True)


def tool_usage_rows(lab: LabLike, key: str = "tool") -> pa.Table:
    """The `tool_usage` rows of one key (from the materialized file when current, else computed)."""
    if key not in TOOL_KEYS:
        raise ConfigError(f"key must be one of {', '.join(TOOL_KEYS)}, not {key!r}")
    cur = connection(lab)
    return fetch_arrow(cur.sql(f"SELECT * FROM tool_usage WHERE key = '{key}'"))
