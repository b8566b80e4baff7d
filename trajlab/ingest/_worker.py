"""Parse a batch of source units into Parquet parts (runs in worker processes, or inline for one worker).

Each unit's rows are converted to Arrow as the adapter yields them and held until the unit is done,
so a unit that fails (adapter exception, rows that do not fit the schema) leaves nothing behind and is
quarantined whole. A unit whose rows exceed UNIT_BUFFER_BYTES is streamed to the part files instead;
if it fails after that, what was written stays and the failure is quarantined next to it.

This module runs the adapter on each unit and keeps its bookkeeping (counts, quarantine rows, its
`sources` row); converting rows to Arrow and writing the parts is `_parts`.
"""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Generator, Iterable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import xxhash

from ..errors import SchemaError
from ..formats import ROWS_VERSION, ParseContext, SourceUnit, finish_trajectory, get_adapter
from ..fsutil import path_text
from ..gcutil import fewer_gc_passes
from ..schema import DIGEST_ALGORITHM
from ..sigutil import ignore_sigint
from ..store import fsync_file
from ._meta import MetaIndex, apply_meta
from ._parts import CHUNK_STEPS, _convert_together, _UnitRows, _Writers

WAIT_BYTES = 32 << 20  # input bytes of small units whose rows wait to be converted together
RAW_KEEP_MAX = 16 << 20  # whole unreadable files larger than this are referenced, not copied


def unit_digest(files: list[Path]) -> str:
    """Content digest of a unit: the primary's bytes, then each companion's relative path and bytes.

    The primary's own name is left out, so the same run copied under another name is a duplicate.
    """
    h = xxhash.xxh3_128()
    base = files[0].parent
    buf = getattr(_DIGEST_BUF, "buf", None)
    if buf is None:
        buf = _DIGEST_BUF.buf = bytearray(1 << 22)
    view = memoryview(buf)
    for i, f in enumerate(files):
        if i:
            h.update(b"\x00")
            h.update(os.path.relpath(f, base).encode("utf-8", "surrogateescape"))
            h.update(b"\x00")
        with open(f, "rb", buffering=0) as fh:  # into one reused buffer: no new bytes per chunk
            while n := fh.readinto(buf):
                h.update(view[:n])
    return f"{DIGEST_ALGORITHM}:{h.hexdigest()}"


_DIGEST_BUF = threading.local()  # one reused read buffer per thread


@dataclass
class UnitResult:
    source: dict[str, Any]
    runner: str
    trajectories: int = 0
    steps: int = 0
    tool_calls: int = 0
    quarantined: list[tuple[str, int | None, int | None, str]] = field(default_factory=list)


@dataclass
class BatchResult:
    units: list[UnitResult] = field(default_factory=list)
    parts: list[tuple[str, str, int]] = field(default_factory=list)  # (table, path, rows)
    bytes: int = 0


# Set once per worker process by `init_worker` (so that big meta indexes are not sent with every job).
_STATE: dict[str, Any] = {"defaults": {}, "meta": None}


def init_pool_worker(defaults: dict[str, Any], meta: MetaIndex | None) -> None:
    """`init_worker` in a worker process, which leaves Ctrl-C to the parent."""
    ignore_sigint()
    init_worker(defaults, meta)


def init_worker(defaults: dict[str, Any], meta: MetaIndex | None) -> None:
    _STATE["defaults"] = defaults
    _STATE["meta"] = meta


GC_THRESHOLD = (50_000, 20, 100)  # collections while parsing: gen0 every 50k new containers, not 700


def parse_batch(args: tuple[list[SourceUnit], str, int]) -> BatchResult:
    result, writers = _parse_units(args)
    result.parts = writers.close()
    # Flush the parts to disk here, in parallel with the other workers: the commit fsyncs them again
    # (durability is its job), which is then nearly free instead of a serial wait at the end.
    for _, path, _ in result.parts:
        fsync_file(Path(path))
    return result


def parse_batches_inline(
    jobs: Iterable[tuple[list[SourceUnit], str, int]],
) -> Generator[BatchResult, None, None]:
    """`parse_batch` of each job in this process (one worker), in order; the last row groups of a batch
    are encoded and its parts fsynced on its writer thread while the next batch is parsed, instead of
    the parsing waiting for them (Parquet encoding, LZ4 and fsync release the GIL)."""
    inflight: tuple[BatchResult, Future[list[tuple[str, str, int]]]] | None = None
    try:
        for job in jobs:
            result, writers = _parse_units(job)
            done, inflight = inflight, (result, writers.close_async(fsync_file))
            if done is not None:
                done[0].parts = done[1].result()
                yield done[0]
        if inflight is not None:
            done, inflight = inflight, None
            done[0].parts = done[1].result()
            yield done[0]
    finally:
        if inflight is not None:  # failing: let its writer finish before the transaction cleans up
            wait([inflight[1]])


def _parse_units(args: tuple[list[SourceUnit], str, int]) -> tuple[BatchResult, _Writers]:
    """Parse a batch's units and submit all their rows to the writers (not closed yet)."""
    units, staging, generation = args
    folder = Path(staging) / f"w{os.getpid()}-{os.urandom(4).hex()}"
    writers = _Writers(folder, generation)
    result = BatchResult()
    meta = _STATE["meta"]
    waiting: list[_Open] = []  # small units whose rows are converted together, in unit order
    waiting_steps = waiting_bytes = 0

    def close_waiting() -> None:
        nonlocal waiting_steps, waiting_bytes
        if len(waiting) > 1:
            _convert_together(waiting, writers)
        for w in waiting:
            result.units.append(_close_unit(w, writers, meta))
        waiting.clear()
        waiting_steps = waiting_bytes = 0

    with fewer_gc_passes(*GC_THRESHOLD, freeze=True):
        for unit in units:
            op = _open_unit(unit, writers, _STATE["defaults"], meta)
            result.bytes += sum(op.sizes)
            if not op.deferrable:
                close_waiting()
                result.units.append(_close_unit(op, writers, meta))
                continue
            waiting.append(op)
            waiting_steps += len(op.rows.pending_s)
            waiting_bytes += sum(op.sizes)
            if waiting_steps >= CHUNK_STEPS or waiting_bytes >= WAIT_BYTES:
                close_waiting()
        close_waiting()
    return result, writers


def _stat(unit: SourceUnit) -> tuple[list[int], list[int]]:
    sizes, mtimes = [], []
    for f in unit.files:
        try:
            st = f.stat()
            sizes.append(st.st_size)
            mtimes.append(st.st_mtime_ns)
        except OSError:
            sizes.append(0)
            mtimes.append(0)
    return sizes, mtimes


@dataclass
class _Open:
    """A unit whose parsing is done but whose last rows may not be converted to Arrow yet."""

    unit: SourceUnit
    runner: str
    ctx: ParseContext
    res: UnitResult
    rows: _UnitRows
    tids: list[str]
    applied_meta: list[dict[str, Any]]
    sizes: list[int]
    mtimes: list[int]
    now: datetime
    fmt: str
    parsed: bool = False  # the adapter ran (not skipped because the unit could not even be hashed)
    error: str | None = None

    @property
    def deferrable(self) -> bool:
        """Its rows can wait to be converted together with the next units' (see `_convert_together`)."""
        r = self.rows
        return self.error is None and not r.streaming and not r.held


def _open_unit(
    unit: SourceUnit, writers: _Writers, defaults: dict[str, Any], meta: MetaIndex | None
) -> _Open:
    """Parse a unit and finish its trajectories; rows beyond CHUNK_STEPS are converted on the way."""
    now = datetime.now(timezone.utc)
    adapter = get_adapter(unit.adapter)
    sizes, mtimes = _stat(unit)
    ctx = ParseContext(unit, adapter.runner)
    if unit.digest is None:
        try:
            unit.digest = unit_digest(unit.files)
        except OSError as e:
            ctx.quarantine(unit.primary, f"{unit.primary.name}: cannot read: {e}", "io")
            unit.digest = f"{DIGEST_ALGORITHM}:unreadable"
    op = _Open(
        unit,
        adapter.runner,
        ctx,
        UnitResult(source={}, runner=adapter.runner),
        _UnitRows(writers, ctx),
        [],
        [],
        sizes,
        mtimes,
        now,
        adapter.name,
    )
    if ctx.quarantined:
        return op
    res, rows = op.res, op.rows
    op.parsed = True
    try:
        for pt in adapter.parse(unit, ctx):
            t, steps = finish_trajectory(pt, unit, adapter.runner, adapter.name, now, defaults)
            if meta:
                m = meta.lookup(path_text(unit.primary), t.get("native_id"))
                if m:
                    apply_meta(t, m)
                    op.applied_meta.append(m)
            op.tids.append(t["trajectory_id"])
            res.trajectories += 1
            res.steps += len(steps)
            res.tool_calls += t["n_tool_calls"]
            rows.add(t, steps)
    except Exception as e:  # an adapter bug must not lose the file: quarantine what was not ingested
        _failed(op, e)
    return op


def _failed(op: _Open, e: Exception) -> None:
    unit, ctx, res, rows = op.unit, op.ctx, op.res, op.rows
    if isinstance(e, OSError):
        etype, error, tb = "io", f"{unit.primary.name}: cannot read: {e}", ""
    else:
        kind = "rows do not fit the lab schema" if isinstance(e, SchemaError) else "adapter failed"
        etype, error = "adapter", f"{unit.adapter}: {kind}: {type(e).__name__}: {e}"
        tb = "\n" + traceback.format_exc(limit=4)
    op.error = error
    if not rows.streaming:  # nothing of this unit was written: quarantine the whole unit
        rows.drop()
        ctx.records_ingested = 0
        ctx.records_seen = len(ctx.quarantined)
        op.tids, res.trajectories, res.steps, res.tool_calls = [], 0, 0, 0
        ctx.quarantine(unit.primary, f"{error}{tb}", etype, _read_small(unit.primary))
    else:
        ctx.quarantine(unit.primary, f"{error} after {len(op.tids)} trajectories{tb}", etype)


def _close_unit(op: _Open, writers: _Writers, meta: MetaIndex | None) -> UnitResult:
    """Convert what is left of the unit's rows, write them and its quarantine rows; its `sources` row."""
    unit, ctx, res, rows = op.unit, op.ctx, op.res, op.rows
    if op.parsed and op.error is None:
        try:
            rows.convert()
        except Exception as e:
            _failed(op, e)
        else:
            res.steps -= rows.dropped_steps
            res.tool_calls -= rows.dropped_calls
            for tid, t in rows.dropped.items():
                op.tids.remove(tid)
                res.trajectories -= 1
                res.steps -= t.get("n_steps") or 0
                res.tool_calls -= t.get("n_tool_calls") or 0
    rows.release()
    sizes, now = op.sizes, op.now
    if ctx.records_seen == 0 and not ctx.quarantined:
        empty = all(s == 0 for s in sizes)
        ctx.quarantine(
            unit.primary,
            f"{unit.primary.name}: " + ("empty file" if empty else f"no records found by {unit.adapter}"),
            "empty" if empty else "schema",
            _read_small(unit.primary),
        )
    if not op.tids and not ctx.quarantined:
        # records were read (and counted as ingested) but the adapter made no trajectory of them and
        # said nothing: keep the unit as one quarantined record rather than lose it silently
        n = ctx.records_ingested
        ctx.records_seen -= n
        ctx.records_ingested = 0
        ctx.quarantine(
            unit.primary,
            f"{unit.primary.name}: {unit.adapter} read {n} records but found no trajectory in them",
            "schema",
            _read_small(unit.primary),
        )
    if ctx.quarantined:
        writers.add_rows(
            "quarantine",
            [
                {
                    "source_path": q.source_path,
                    "line": q.line,
                    "byte_offset": q.byte_offset,
                    "runner": op.runner,
                    "reason": q.reason,
                    "error_type": q.error_type,
                    "raw": q.raw,
                    "raw_size": q.raw_size,
                    "ingested_at": now,
                    "unit_path": path_text(unit.primary),
                }
                for q in ctx.quarantined
            ],
        )
        for q in ctx.quarantined:
            res.quarantined.append((q.source_path, q.line, q.byte_offset, q.reason.split("\n", 1)[0]))
    tids = op.tids
    status = ("partial" if ctx.quarantined else "ingested") if tids else "quarantined"
    res.source = {
        "source_path": path_text(unit.primary),
        "files": [path_text(f) for f in unit.files],
        "sizes": sizes,
        "mtimes_ns": op.mtimes,
        "digest": unit.digest,
        "meta_digest": meta.digest_of(op.applied_meta) if meta is not None and op.applied_meta else None,
        "runner": op.runner,
        "format": op.fmt,
        "adapter_version": get_adapter(unit.adapter).version,
        "rows_version": ROWS_VERSION,
        "status": status,
        "records_seen": ctx.records_seen,
        "records_ingested": ctx.records_ingested,
        "records_quarantined": ctx.records_quarantined,
        "trajectory_ids": tids,
        "n_steps": res.steps,
        "n_tool_calls": res.tool_calls,
        "error": op.error
        or (ctx.quarantined[0].reason if status == "quarantined" and ctx.quarantined else None),
        "ingested_at": now,
    }
    return res


def _read_small(path: Path) -> bytes | None:
    try:
        if path.stat().st_size <= RAW_KEEP_MAX:
            return path.read_bytes()
    except OSError:
        return None
    return None
