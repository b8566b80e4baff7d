"""Parse a batch of source units into Parquet parts (runs in worker processes, or inline for one worker).

Each unit's rows are converted to Arrow as the adapter yields them and held until the unit is done,
so a unit that fails (adapter exception, rows that do not fit the schema) leaves nothing behind and is
quarantined whole. A unit whose rows exceed UNIT_BUFFER_BYTES is streamed to the part files instead;
if it fails after that, what was written stays and the failure is quarantined next to it.
"""

from __future__ import annotations

import os
import threading
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from ..errors import SchemaError
from ..formats import ParseContext, SourceUnit, finish_trajectory, get_adapter
from ..gcutil import fewer_gc_passes
from ..schema import DIGEST_ALGORITHM, TABLES, default_row
from ..store import PartWriter, rows_to_table, table_schema
from ._meta import MetaIndex, apply_meta
from ._rows import RowProblem, convert_rows, raw_row

UNIT_BUFFER_BYTES = 256 << 20  # Arrow bytes of one unit held back until it parses cleanly
CHUNK_STEPS = 8192  # steps converted to Arrow at a time
MAX_PENDING_WRITES = 4  # Arrow tables queued for the writer thread
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


class _Writers:
    """The part writers of one batch.

    Writing runs on one background thread, in submission order: Parquet encoding and LZ4 compression
    release the GIL, so they overlap with parsing the next units instead of adding to it. At most
    MAX_PENDING_WRITES writes wait (memory stays bounded); a write error is raised in the caller at
    the next write or at `close`."""

    def __init__(self, folder: Path, generation: int):
        self.folder = folder
        self.generation = generation
        self._w: dict[str, PartWriter] = {}
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="trajlab-parts")
        self._pending: deque[Future[None]] = deque()

    def _get(self, table: str) -> PartWriter:  # on the writer thread only
        if table not in self._w:
            self._w[table] = PartWriter(
                self.folder / table, table_schema(table), default_row(TABLES[table]), self.generation
            )
        return self._w[table]

    def _submit(self, fn: Callable[[], None]) -> None:
        self._pending.append(self._thread.submit(fn))
        while self._pending and (len(self._pending) > MAX_PENDING_WRITES or self._pending[0].done()):
            self._pending.popleft().result()

    def write_table(self, table: str, data: pa.Table) -> None:
        self._submit(lambda: self._get(table).write_table(data))

    def add_rows(self, table: str, rows: list[dict[str, Any]]) -> None:
        self._submit(lambda: self._get(table).extend(rows))

    def close(self) -> list[tuple[str, str, int]]:
        try:
            while self._pending:
                self._pending.popleft().result()
            return self._thread.submit(self._close_all).result()
        finally:
            self._thread.shutdown(wait=True)

    def _close_all(self) -> list[tuple[str, str, int]]:
        return [(table, str(path), rows) for table, w in self._w.items() for path, rows in w.close()]


_STEP_SCHEMA = table_schema("steps")
_STEP_DEFAULTS = default_row(TABLES["steps"])
_TRAJ_SCHEMA = table_schema("trajectories")
_TRAJ_DEFAULTS = default_row(TABLES["trajectories"])
_STEP_NAMES = frozenset(_STEP_SCHEMA.names)
_TRAJ_NAMES = frozenset(_TRAJ_SCHEMA.names)

# Set once per worker process by `init_worker` (so that big meta indexes are not sent with every job).
_STATE: dict[str, Any] = {"defaults": {}, "meta": None}


def init_worker(defaults: dict[str, Any], meta: MetaIndex | None) -> None:
    _STATE["defaults"] = defaults
    _STATE["meta"] = meta


GC_THRESHOLD = (50_000, 20, 100)  # collections while parsing: gen0 every 50k new containers, not 700


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def parse_batch(args: tuple[list[SourceUnit], str, int]) -> BatchResult:
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
        result.parts = writers.close()
    # Flush the parts to disk here, in parallel with the other workers: the commit fsyncs them again
    # (durability is its job), which is then nearly free instead of a serial wait at the end.
    for _, path, _ in result.parts:
        _fsync(path)
    return result


class _UnitRows:
    """Arrow tables of one unit, held until the unit is done (or streamed once it is too big).

    Rows that do not fit the schema cost their bad values (or the row), quarantined in `ctx`
    (see `_rows.convert_rows`); `dropped` holds trajectories whose own row could not be stored."""

    def __init__(self, writers: _Writers, ctx: ParseContext):
        self.writers = writers
        self.ctx = ctx
        self.dropped: dict[str, dict[str, Any]] = {}  # trajectory id -> its row
        self.dropped_steps = self.dropped_calls = 0  # single step rows dropped
        self.held: list[tuple[str, pa.Table]] = []
        self.held_bytes = 0
        self.streaming = False
        self.pending_t: list[dict[str, Any]] = []
        self.pending_s: list[dict[str, Any]] = []

    def add(self, t: dict[str, Any], steps: list[dict[str, Any]]) -> None:
        self.pending_t.append(t)
        self.pending_s.extend(steps)
        if len(self.pending_s) >= CHUNK_STEPS:
            self.convert()

    def convert(self) -> None:
        # steps first: a step that had to be dropped is accounted for in its trajectory's row
        steps = None
        if self.pending_s:
            steps, problems = convert_rows(self.pending_s, _STEP_SCHEMA, _STEP_DEFAULTS)
            if problems:
                self._step_problems(problems)
            self.pending_s = []
        if self.pending_t:
            trajs, problems = convert_rows(self.pending_t, _TRAJ_SCHEMA, _TRAJ_DEFAULTS)
            for p in problems:
                tid = p.row.get("trajectory_id")
                what = f"trajectories row {tid}"
                if p.dropped:
                    self.dropped[str(tid)] = dict(p.row)
                    what += f" (with its {p.row.get('n_steps')} steps)"
                self._quarantine(p.row, f"{what}: {p.reason}", None)
            if self.dropped and steps is not None:
                keep = pc.invert(pc.is_in(steps["trajectory_id"], pa.array(list(self.dropped), pa.string())))
                steps = steps.filter(keep)
            self._put("trajectories", trajs)
            self.pending_t = []
        if steps is not None:
            self._put("steps", steps)

    def _step_problems(self, problems: list[RowProblem]) -> None:
        by_tid = {t.get("trajectory_id"): t for t in self.pending_t}
        for p in problems:
            row = p.row
            idx = row.get("step_index")
            self._quarantine(
                row, f"steps row {idx} of {row.get('trajectory_id')}: {p.reason}", row.get("source_line")
            )
            t = by_tid.get(row.get("trajectory_id"))
            if t is None:
                continue
            t["anomalies"] = [*(t.get("anomalies") or []), f"step {idx}: {p.reason}"[:500]]
            if p.dropped:
                self.dropped_steps += 1
                t["n_steps"] = (t.get("n_steps") or 1) - 1
                if row.get("kind") == "tool_call":
                    self.dropped_calls += 1
                    t["n_tool_calls"] = (t.get("n_tool_calls") or 1) - 1

    def _quarantine(self, row: Any, reason: str, line: Any) -> None:
        self.ctx.quarantine(
            self.ctx.unit.primary,
            reason,
            "schema",
            raw_row(row),
            line=line if type(line) is int else None,
        )

    def _put(self, table: str, data: pa.Table) -> None:
        if self.streaming:
            self.writers.write_table(table, data)
            return
        self.held.append((table, data))
        self.held_bytes += data.nbytes
        if self.held_bytes > UNIT_BUFFER_BYTES:
            self.release()
            self.streaming = True

    def release(self) -> None:
        for table, data in self.held:
            self.writers.write_table(table, data)
        self.held = []
        self.held_bytes = 0

    def drop(self) -> None:
        self.held, self.pending_t, self.pending_s = [], [], []


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
                m = meta.lookup(str(unit.primary), t.get("native_id"))
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


def _convert_together(ops: list[_Open], writers: _Writers) -> bool:
    """Convert the pending rows of several small units as one chunk (one Arrow conversion instead of
    two per unit, whose fixed cost dominated small units). Only when every row converts cleanly: on
    any problem nothing is written and each unit converts alone, which reports the problem per unit
    exactly as before. Unknown columns are looked for in each unit's first rows, as `rows_to_table`
    does per call."""
    steps = [s for op in ops for s in op.rows.pending_s]
    trajs = [t for op in ops for t in op.rows.pending_t]
    for op in ops:
        for rows, names in ((op.rows.pending_s, _STEP_NAMES), (op.rows.pending_t, _TRAJ_NAMES)):
            keys: set[str] = set()
            for r in rows[:64]:
                keys.update(r)
            if any(not k.startswith("_") for k in keys - names):
                return False
    try:
        steps_table = rows_to_table(steps, _STEP_SCHEMA, _STEP_DEFAULTS)
        trajs_table = rows_to_table(trajs, _TRAJ_SCHEMA, _TRAJ_DEFAULTS)
    except SchemaError:
        return False
    if trajs_table.num_rows:
        writers.write_table("trajectories", trajs_table)
    if steps_table.num_rows:
        writers.write_table("steps", steps_table)
    for op in ops:
        op.rows.pending_s, op.rows.pending_t = [], []
    return True


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
                    "unit_path": str(unit.primary),
                }
                for q in ctx.quarantined
            ],
        )
        for q in ctx.quarantined:
            res.quarantined.append((q.source_path, q.line, q.byte_offset, q.reason.split("\n", 1)[0]))
    tids = op.tids
    status = ("partial" if ctx.quarantined else "ingested") if tids else "quarantined"
    res.source = {
        "source_path": str(unit.primary),
        "files": [str(f) for f in unit.files],
        "sizes": sizes,
        "mtimes_ns": op.mtimes,
        "digest": unit.digest,
        "meta_digest": meta.digest_of(op.applied_meta) if meta is not None and op.applied_meta else None,
        "runner": op.runner,
        "format": op.fmt,
        "status": status,
        "records_seen": ctx.records_seen,
        "records_ingested": ctx.records_ingested,
        "records_quarantined": ctx.records_quarantined,
        "trajectory_ids": tids,
        "n_steps": res.steps,
        "n_tool_calls": res.tool_calls,
        "error": op.error or (ctx.quarantined[0].reason if status == "quarantined" else None),
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
