"""Reading the steps table for DAG builds, and splitting a build into tasks that workers run alone.

The scan reads one part file and one row group at a time without pre-buffering: a pyarrow dataset
scan pre-buffers whole part files, so its memory grows with the part size (and with the lab).

A *task* is a run of consecutive row groups plus the trajectories it owns: the trajectories whose
first step lies in those row groups. It also reads the row groups up to the last step of its
trajectories (a trajectory can continue into the next row group), and keeps only its own rows, so a
trajectory is never split between tasks and a worker needs nothing from the parent but the task.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import LabError
from ..store import Lab, table_schema

STEP_COLUMNS = (
    "trajectory_id",
    "step_index",
    "agent_id",
    "parent_step_index",
    "depth",
    "kind",
    "role",
    "text",
    "tool_name",
    "tool",
    "programs",
    "command",
    "arguments",
    "output",
    "stderr",
    "exit_code",
    "is_error",
    "timed_out",
    "duration_s",
    "input_tokens",
    "timestamp",
    "call_id",
    "modality",
    "metadata",
    "source_line",
)
"""Columns of `steps` the DAG rules read (and `read_steps` returns)."""
BUILD_COLUMNS = tuple(c for c in STEP_COLUMNS if c != "role")
"""What a build scans: no rule looks at `role` (the step kind says it)."""


def _fields(columns: tuple[str, ...] = STEP_COLUMNS) -> list[pa.Field]:
    full = table_schema("steps")
    return [full.field(c) for c in columns]


def _open_part(path: Path, buffer_size: int = 0) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path, pre_buffer=False, buffer_size=buffer_size)
    except (OSError, pa.ArrowException) as e:
        raise LabError(f"cannot read steps part {path}: {e}") from e


def scan_part(
    path: Path,
    row_groups: list[int] | None = None,
    wanted: pa.Array | None = None,
    batch_size: int = 16_384,
    columns: tuple[str, ...] = STEP_COLUMNS,
) -> Iterator[pa.RecordBatch]:
    """The DAG columns of one part file (only `row_groups`, only trajectories in `wanted` when given)."""
    fields = _fields(columns)
    pf = _open_part(path, buffer_size=1 << 20)
    present = set(pf.schema_arrow.names)
    cols = [f.name for f in fields if f.name in present]
    names = [f.name for f in fields]
    batches = pf.iter_batches(batch_size=batch_size, row_groups=row_groups, columns=cols, use_threads=False)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (OSError, pa.ArrowException) as e:
            raise LabError(f"cannot read steps part {path}: {e}") from e
        if wanted is not None:
            keep = pc.is_in(batch.column("trajectory_id"), value_set=wanted)
            if keep.true_count < batch.num_rows:  # a filter copies every column, even to keep all rows
                batch = batch.filter(keep)
            if not batch.num_rows:
                continue
        if batch.schema.names != names or any(
            batch.schema.field(f.name).type != f.type for f in fields if f.name in present
        ):  # parts written before a column existed get nulls
            batch = pa.RecordBatch.from_arrays(
                [
                    batch.column(f.name).cast(f.type)
                    if f.name in present
                    else pa.nulls(batch.num_rows, f.type)
                    for f in fields
                ],
                schema=pa.schema(fields),
            )
        yield batch


def scan_steps(
    lab: Lab, trajectory_ids: set[str] | None = None, batch_size: int = 16_384
) -> Iterator[pa.RecordBatch]:
    """The DAG columns of the steps table, batch by batch (only `trajectory_ids` when given)."""
    wanted = pa.array(sorted(trajectory_ids), type=pa.string()) if trajectory_ids is not None else None
    for path in lab.files("steps"):
        yield from scan_part(path, None, wanted, batch_size)


def step_rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """Row dicts for the builder. Timestamps become POSIX seconds (what the rules compare; the same
    floats `datetime.timestamp()` gives), which spares a timezone-aware datetime per step."""
    i = batch.schema.get_field_index("timestamp")
    if i >= 0 and pa.types.is_timestamp(batch.schema.field(i).type):
        col = batch.column(i)
        us = pc.cast(col.cast(pa.timestamp("us", tz=col.type.tz)), pa.int64())
        secs = pc.divide(pc.cast(us, pa.float64()), 1e6)
        batch = batch.set_column(i, "timestamp", secs)
    # what `batch.to_pylist()` gives, with the dicts made in C (it builds them in a Python loop)
    names = batch.schema.names
    return list(map(dict, map(zip, repeat(names), zip(*[c.to_pylist() for c in batch.columns]))))


def _runs(batch: pa.RecordBatch) -> list[int]:
    """Start rows of the runs of equal `trajectory_id` in a batch, and its length."""
    n = batch.num_rows
    if n < 2:
        return [0, n]
    ids = batch.column(batch.schema.get_field_index("trajectory_id"))
    change = pc.indices_nonzero(pc.not_equal(ids.slice(1), ids.slice(0, n - 1)).fill_null(True))
    return [0, *(k + 1 for k in change.to_pylist()), n]


def grouped_steps(
    batches: Iterator[pa.RecordBatch], counts: dict[str, int]
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(trajectory id, its steps) as soon as all `counts[tid]` steps were read; holds only open ones.

    A batch is taken run by run (consecutive rows of one trajectory), not row by row."""
    open_: dict[str, list[dict[str, Any]]] = {}
    for batch in batches:
        rows = step_rows(batch)
        runs = _runs(batch)
        for k in range(len(runs) - 1):
            a, b = runs[k], runs[k + 1]
            tid = rows[a]["trajectory_id"]
            while a < b:
                got = open_.get(tid)
                if got is None:
                    got = open_[tid] = []
                want = counts.get(tid, 0)
                take = min(b, a + max(want - len(got), 1))  # a trajectory is done at its count
                got += rows[a:take]
                a = take
                if len(got) >= want:
                    yield tid, open_.pop(tid)
    yield from open_.items()


@dataclass
class Task:
    """Row groups a worker reads (path -> row group numbers) and the trajectories it builds."""

    number: int
    reads: list[tuple[Path, list[int]]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # owned trajectory -> its number of steps
    trajectories: dict[str, dict[str, Any]] = field(default_factory=dict)  # owned -> trajectories row

    @property
    def steps(self) -> int:
        return sum(self.counts.values())

    def batches(self, batch_size: int = 16_384) -> Iterator[pa.RecordBatch]:
        wanted = pa.array(sorted(self.counts), type=pa.string())
        for path, groups in self.reads:
            yield from scan_part(path, groups, wanted, batch_size, BUILD_COLUMNS)


def locate(lab: Lab, todo: set[str]) -> tuple[list[tuple[Path, int, str, int]], dict[str, int]]:
    """Where each todo trajectory's steps are: (part, row group, id, rows) in storage order, and counts."""
    where: list[tuple[Path, int, str, int]] = []
    counts: dict[str, int] = {}
    for path in lab.files("steps"):
        pf = _open_part(path)
        for g in range(pf.metadata.num_row_groups):
            try:
                ids = pf.read_row_group(g, columns=["trajectory_id"], use_threads=False).column(0)
            except (OSError, pa.ArrowException) as e:
                raise LabError(f"cannot read steps part {path} (row group {g}): {e}") from e
            for v in pc.value_counts(ids.combine_chunks()).to_pylist():
                tid = v["values"]
                if tid in todo:
                    where.append((path, g, tid, v["counts"]))
                    counts[tid] = counts.get(tid, 0) + v["counts"]
    return where, counts


def make_tasks(
    where: list[tuple[Path, int, str, int]],
    counts: dict[str, int],
    trows: dict[str, dict[str, Any]],
    task_steps: int,
) -> list[Task]:
    """Cut the storage order into tasks of about `task_steps` steps, at trajectory starts."""
    groups: list[tuple[Path, int]] = []  # every row group holding todo steps, in storage order
    gidx: dict[tuple[Path, int], int] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for path, g, tid, _ in where:
        key = (path, g)
        if key not in gidx:
            gidx[key] = len(groups)
            groups.append(key)
        k = gidx[key]
        first.setdefault(tid, k)
        last[tid] = k
    tasks: list[Task] = []
    cur: Task | None = None
    span = (0, -1)
    started = -1  # the last row group where a trajectory of the current task starts
    for tid in sorted(first, key=lambda t: (first[t], last[t])):
        # cut only where a new row group starts: a row group is decoded whole, so a cut inside one
        # would make two tasks decode it
        if cur is None or (cur.steps >= task_steps and first[tid] > started):
            if cur is not None:
                tasks.append(_close(cur, span, groups))
            cur = Task(len(tasks))
            span = (first[tid], last[tid])
        cur.counts[tid] = counts[tid]
        cur.trajectories[tid] = trows[tid]
        started = first[tid]
        span = (span[0], max(span[1], last[tid]))
    if cur is not None:
        tasks.append(_close(cur, span, groups))
    return tasks


def _close(task: Task, span: tuple[int, int], groups: list[tuple[Path, int]]) -> Task:
    by_path: dict[Path, list[int]] = {}
    for k in range(span[0], span[1] + 1):
        path, g = groups[k]
        by_path.setdefault(path, []).append(g)
    task.reads = list(by_path.items())
    return task
