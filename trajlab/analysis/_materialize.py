"""Writing the `tool_usage` counts (see `_usage`): one streaming query per tool key, atomically renamed."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from ..errors import ConfigError, LabError
from ..fsutil import fsync_dir
from ..store import Lab, fetch_arrow
from ._catalog import TOOL_KEYS
from ._run import LabLike, connection, open_lab
from ._usage import (
    TOOL_USAGE_DIR,
    TOOL_USAGE_SCHEMA,
    current_usage_files,
    manifest_usage_digest,
    new_usage_name,
    usage_digest,
    usage_files,
    usage_metadata,
    usage_select,
)

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
    streams in batches into a new file `LAB/_cache/tool_usage/<digest>/<key>-<time>-<id>.parquet`
    (written to a temporary name, fsynced, then renamed: readers never see half a file, and a published
    file is never replaced, so a reader that already chose one can finish on it). Readers take the
    newest complete file of the current digest; each file records its digest and key in its metadata,
    and one that is incomplete or not for these steps is ignored (and rebuilt here). Superseded files,
    and the counts of steps versions that are neither this one nor the lab's current one on disk, are
    removed once idle for STALE_GRACE_S. `force` builds a new file even when one is current. Raises
    LabError when the lab folder is not writable.
    """
    lab = open_lab(lab)
    wanted = [keys] if isinstance(keys, str) else list(dict.fromkeys(keys))
    for k in wanted:
        if k not in TOOL_KEYS:
            raise ConfigError(f"key must be one of {', '.join(TOOL_KEYS)}, not {k!r}")
    digest = usage_digest(lab)
    current = current_usage_files(lab)
    out: list[ToolUsageFile] = []
    todo = []
    for k in wanted:
        path = current.get(k)
        if not force and path is not None:
            try:
                out.append(ToolUsageFile(k, path, pq.ParquetFile(path).metadata.num_rows, built=False))
                continue
            except (OSError, pa.ArrowException):  # removed meanwhile: build it
                pass
        todo.append(k)
    bar = tqdm(todo, desc="tool_usage", unit="key", disable=(not progress) or None, leave=False)
    for k in bar:
        bar.set_postfix_str(k)
        t0 = time.perf_counter()
        try:
            path, rows = _write(lab, k, digest)
        except OSError as e:
            raise LabError(f"cannot materialize tool_usage in {lab.root / TOOL_USAGE_DIR}: {e}") from e
        out.append(ToolUsageFile(k, path, rows, built=True, seconds=time.perf_counter() - t0))
    if todo:
        _prune(lab, digest)
    order = {k: i for i, k in enumerate(wanted)}
    return sorted(out, key=lambda f: order[f.key])


def _write(lab: Lab, key: str, digest: str) -> tuple[Path, int]:
    """One key's counts, computed on the library's read-only connection (no user SQL), written here."""
    path = lab.root / TOOL_USAGE_DIR / digest / new_usage_name(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    schema = TOOL_USAGE_SCHEMA.with_metadata(usage_metadata(digest, key))
    cur = connection(lab)
    rows = 0
    try:
        rel = cur.sql(usage_select(key))
        reader = getattr(rel, "to_arrow_reader", None) or rel.fetch_record_batch  # DuckDB 2.x / 1.x
        reader = reader(ROW_GROUP_ROWS)
        with pq.ParquetWriter(
            tmp,
            schema,
            compression="lz4",
            use_dictionary=["key", "trajectory_id", "tool"],
            write_statistics=True,
        ) as writer:
            for batch in reader:
                table = pa.Table.from_batches([batch]).cast(schema)
                writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
                rows += table.num_rows
        with open(tmp, "rb") as f:  # durable before it becomes visible: a crash never leaves a torn file
            os.fsync(f.fileno())
        os.rename(tmp, path)  # a fresh name: nothing is replaced
        fsync_dir(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        cur.close()
    return path, rows


def _prune(lab: Lab, digest: str) -> None:
    """Delete counts of other versions of the steps, superseded files and crashed temporary files,
    once idle for STALE_GRACE_S.

    Kept: the version just written and the lab's current one on disk (this Lab object may be older
    than the manifest: a stale process must not delete the counts current readers use), and in them
    the newest file of each key, and older ones until they have been superseded for STALE_GRACE_S.
    """
    base = lab.root / TOOL_USAGE_DIR
    keep = {digest}
    with contextlib.suppress(LabError, OSError):
        keep.add(manifest_usage_digest(Lab.open(lab.root).manifest))
    now = time.time()
    for d in base.iterdir() if base.is_dir() else []:
        try:
            idle = now - d.stat().st_mtime
            if d.name in keep:
                _prune_builds(d, now)
            elif idle > STALE_GRACE_S:
                shutil.rmtree(d, ignore_errors=True) if d.is_dir() else d.unlink(missing_ok=True)
        except OSError:  # removed by a concurrent prune, or not ours to remove: leave it
            continue


def _prune_builds(d: Path, now: float) -> None:
    for f in d.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            if now - f.stat().st_mtime > STALE_GRACE_S:
                f.unlink(missing_ok=True)
    for key in TOOL_KEYS:
        files = usage_files(d, key)
        for newer, older in pairwise(files):
            with contextlib.suppress(OSError):  # superseded since `newer` was published
                if now - newer.stat().st_mtime > STALE_GRACE_S:
                    older.unlink(missing_ok=True)


def tool_usage_rows(lab: LabLike, key: str = "tool") -> pa.Table:
    """The `tool_usage` rows of one key (from the materialized file when current, else computed)."""
    if key not in TOOL_KEYS:
        raise ConfigError(f"key must be one of {', '.join(TOOL_KEYS)}, not {key!r}")
    cur = connection(lab)
    return fetch_arrow(cur.sql(f"SELECT * FROM tool_usage WHERE key = '{key}'"))
