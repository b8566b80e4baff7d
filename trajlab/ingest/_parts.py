"""Rows to Arrow and Arrow to part files, for the ingest workers (see `_worker`).

A unit's rows are converted to Arrow in chunks of CHUNK_STEPS steps and held (`_UnitRows`) until the
unit is done, so a unit that fails leaves nothing behind; past UNIT_BUFFER_BYTES they are streamed to
the part files instead. Small units' rows can be converted together (`_convert_together`). The part
files are written on a background thread (`_Writers`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import SchemaError
from ..formats import ParseContext
from ..schema import TABLES, default_row
from ..store import PartWriter, rows_to_table, table_schema
from ._rows import RowProblem, convert_rows, raw_row

if TYPE_CHECKING:
    from ._worker import _Open

UNIT_BUFFER_BYTES = 256 << 20  # Arrow bytes of one unit held back until it parses cleanly
CHUNK_STEPS = 8192  # steps converted to Arrow at a time
MAX_PENDING_WRITES = 4  # Arrow tables queued for the writer thread


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

    def close_async(self, fsync: Callable[[Path], None]) -> Future[list[tuple[str, str, int]]]:
        """`close` on the writer thread, then `fsync` of every part there too: the caller goes on
        (parsing the next batch) while the last row groups are encoded. A write error is raised by
        the future's `result()`."""
        pending = list(self._pending)
        self._pending.clear()

        def finish() -> list[tuple[str, str, int]]:
            for f in pending:  # earlier writes ran before this one (one thread, in order)
                f.result()
            parts = self._close_all()
            for _, path, _ in parts:
                fsync(Path(path))
            return parts

        fut = self._thread.submit(finish)
        self._thread.shutdown(wait=False)  # the thread ends once `finish` is done
        return fut

    def _close_all(self) -> list[tuple[str, str, int]]:
        return [(table, str(path), rows) for table, w in self._w.items() for path, rows in w.close()]


_STEP_SCHEMA = table_schema("steps")
_STEP_DEFAULTS = default_row(TABLES["steps"])
_TRAJ_SCHEMA = table_schema("trajectories")
_TRAJ_DEFAULTS = default_row(TABLES["trajectories"])
_STEP_NAMES = frozenset(_STEP_SCHEMA.names)
_TRAJ_NAMES = frozenset(_TRAJ_SCHEMA.names)


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
