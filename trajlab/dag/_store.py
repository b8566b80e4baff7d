"""Build the DAGs of a lab (incremental, streaming) and read one back."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from ..errors import LabError
from ..store import Lab, table_schema
from ._build import build_dag
from ._model import DAG_VERSION, StepDag
from ._pool import Result, build_many

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
)
"""Columns of `steps` the DAG rules read."""
TRAJECTORY_COLUMNS = (
    "trajectory_id",
    "runner",
    "domain",
    "task",
    "final_answer",
    "anomalies",
    "outcome",
    "ingested_at",
)
_TEXT_KEEP = 16_000  # characters of task / final answer kept per pending trajectory
DAG_TABLES = ("dag_nodes", "dag_edges", "dag_metrics")
POOL_MIN_STEPS = 20_000
"""Below this many steps, worker processes cost more to start than they save."""


@dataclass
class DagReport:
    """What `build_lab` did."""

    lab: Path
    built: int = 0
    up_to_date: int = 0
    removed: int = 0
    steps: int = 0
    nodes: int = 0
    edges: int = 0
    candidates: int = 0
    with_anomalies: int = 0
    anomaly_kinds: Counter[str] = field(default_factory=Counter)
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    generation: int = 0

    def format(self) -> str:
        rate = f" ({self.steps / self.seconds:,.0f} steps/s)" if self.seconds > 0 and self.steps else ""
        lines = [
            f"built {self.built} DAGs from {self.steps:,} steps in {self.seconds:.2f}s{rate}; "
            f"{self.up_to_date} up to date, {self.removed} removed",
            f"{self.nodes:,} nodes, {self.edges:,} edges, {self.candidates:,} decisive-step candidates",
            f"{self.with_anomalies} trajectories with anomalies"
            + (
                ": " + ", ".join(f"{k} x{n}" for k, n in self.anomaly_kinds.most_common(6))
                if self.anomaly_kinds
                else ""
            ),
        ]
        for tid, err in self.failed[:10]:
            lines.append(f"FAILED {tid}: {err}")
        lines.append(f"lab generation {self.generation}")
        return "\n".join(lines)


def _open(lab: Lab | str | os.PathLike[str]) -> Lab:
    return lab if isinstance(lab, Lab) else Lab.open(lab)


def _anomaly_kind(a: str) -> str:
    """`duplicate call id X at steps 1, 2` -> `duplicate call id` (for the report's tally)."""
    words = []
    for w in a.split():
        if (
            any(c.isdigit() for c in w)
            or w.startswith(("(", "call_", "toolu_", "t_"))
            or w in ("at", "for", "of")
        ):
            break
        words.append(w.rstrip(":"))
    return " ".join(words[:5]) or a[:30]


def _todo(lab: Lab, ids: list[str] | None, rebuild: bool) -> tuple[list[str], list[str], int]:
    """(trajectories to build, stale trajectories whose DAG rows go, number already up to date)."""
    traj = lab.read("trajectories", ["trajectory_id", "ingested_at"]).to_pydict()
    ingested = dict(zip(traj["trajectory_id"], traj["ingested_at"]))
    if ids is not None:
        ids = [_resolve(t, ingested) or t for t in ids]  # a unique id prefix is enough, as for `dag show`
        unknown = [t for t in ids if t not in ingested]
        if unknown:
            raise LabError(f"no trajectory {', '.join(unknown[:5])} in {lab.root}")
    selected = list(ingested) if ids is None else list(dict.fromkeys(ids))
    built = lab.read("dag_metrics", ["trajectory_id", "built_at", "dag_version"]).to_pydict()
    have: dict[str, tuple[datetime, int]] = {
        t: (b, v) for t, b, v in zip(built["trajectory_id"], built["built_at"], built["dag_version"])
    }
    stale = [t for t in have if t not in ingested] if ids is None else []
    todo = []
    for t in selected:
        h = have.get(t)
        if rebuild or h is None or h[1] < DAG_VERSION or (ingested[t] is not None and h[0] < ingested[t]):
            todo.append(t)
    return todo, stale, len(selected) - len(todo)


def scan_steps(
    lab: Lab, trajectory_ids: set[str] | None = None, batch_size: int = 16_384
) -> Iterator[pa.RecordBatch]:
    """The DAG columns of the steps table, batch by batch (only `trajectory_ids` when given).

    One part file and one row group at a time, without pre-buffering or read-ahead threads: a
    dataset scan pre-buffers whole part files, so its memory grows with the part size (and with
    the lab); this stays bounded by one row group. Parts written before a column existed get nulls.
    """
    full = table_schema("steps")
    fields = [full.field(c) for c in STEP_COLUMNS]
    wanted = pa.array(sorted(trajectory_ids), type=pa.string()) if trajectory_ids is not None else None
    for path in lab.files("steps"):
        pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
        present = set(pf.schema_arrow.names)
        cols = [f.name for f in fields if f.name in present]
        for batch in pf.iter_batches(batch_size=batch_size, columns=cols, use_threads=False):
            if wanted is not None:
                batch = batch.filter(pc.is_in(batch.column("trajectory_id"), value_set=wanted))
                if not batch.num_rows:
                    continue
            if batch.schema.names != [f.name for f in fields] or any(
                batch.schema.field(f.name).type != f.type for f in fields if f.name in present
            ):
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


def _resolve(prefix: str, ids: dict[str, Any]) -> str | None:
    if prefix in ids:
        return prefix
    hits = [t for t in ids if t.startswith(prefix)]
    return hits[0] if len(hits) == 1 else None


def _grouped(
    lab: Lab, todo: set[str], counts: dict[str, int], batch_size: int, all_: bool = False
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Stream (trajectory id, its steps) from the steps table; holds only trajectories still being read."""
    open_: dict[str, list[dict[str, Any]]] = {}
    for batch in scan_steps(lab, None if all_ else todo, batch_size):
        for row in batch.to_pylist():
            tid = row["trajectory_id"]
            rows = open_.get(tid)
            if rows is None:
                rows = open_[tid] = []
            rows.append(row)
            if len(rows) >= counts.get(tid, 0):
                yield tid, open_.pop(tid)
    yield from open_.items()


def build_lab(
    lab: Lab | str | os.PathLike[str],
    trajectory_ids: list[str] | None = None,
    rebuild: bool = False,
    progress: bool = True,
    batch_size: int = 16_384,
    workers: int | None = None,
) -> DagReport:
    """Build and store the step DAGs of a lab's trajectories, in one write transaction.

    Incremental: only trajectories without a DAG, with an older `dag_version`, or re-ingested after
    their DAG was built are processed (all selected ones with `rebuild=True`); their old rows are
    deleted in the same transaction, as are rows of trajectories no longer in the lab. Steps are
    streamed, so memory is bounded by the largest trajectory rather than the lab. `workers`
    processes build the DAGs (default: the CPU count, up to 4; 1 builds in this process).
    """
    t0 = time.perf_counter()
    lab = _open(lab)
    report = DagReport(lab=lab.root)
    todo, stale, report.up_to_date = _todo(lab, trajectory_ids, rebuild)
    if not todo and not stale:
        report.seconds = time.perf_counter() - t0
        report.generation = lab.generation
        return report
    todo_set = set(todo)
    vc = (
        pc.value_counts(lab.read("steps", ["trajectory_id"]).column("trajectory_id").combine_chunks())
        if lab.rows("steps")
        else None
    )
    counts: dict[str, int] = {}
    every = True  # every trajectory with steps is being built: the scan needs no filter
    if vc is not None:
        for v in vc.to_pylist():
            if v["values"] in todo_set:
                counts[v["values"]] = v["counts"]
            else:
                every = False
    trows = _trajectory_rows(lab, todo)
    bar = tqdm(
        total=sum(counts.values()),
        unit="step",
        unit_scale=True,
        desc="dag",
        disable=not progress,
        leave=False,
    )
    try:
        with lab.write("dag") as txn:
            for table in DAG_TABLES:
                txn.delete(table, "trajectory_id", [*todo, *stale])
            seen: set[str] = set()

            def items() -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
                for tid, steps in _grouped(lab, todo_set, counts, batch_size, every):
                    seen.add(tid)
                    yield trows[tid], steps
                for tid in todo:
                    if tid not in seen:  # a trajectory without steps still gets its (empty) DAG
                        yield trows[tid], []

            total = sum(counts.values())
            n_workers = (workers or min(os.cpu_count() or 1, 4)) if total >= POOL_MIN_STEPS else 1
            for result in build_many(items(), n_workers):
                _absorb(txn, report, result)
                bar.update(result[1])
            report.removed = len(stale)
            txn.summary["dag"] = {
                "built": report.built,
                "removed": report.removed,
                "dag_version": DAG_VERSION,
            }
    finally:
        bar.close()
    report.seconds = time.perf_counter() - t0
    report.generation = lab.refresh().generation
    return report


def _trajectory_rows(lab: Lab, todo: list[str]) -> dict[str, dict[str, Any]]:
    flt = pc.field("trajectory_id").isin(pa.array(todo, type=pa.string()))
    out: dict[str, dict[str, Any]] = {}
    for batch in lab.dataset("trajectories").to_batches(columns=list(TRAJECTORY_COLUMNS), filter=flt):
        for r in batch.to_pylist():
            for k in ("task", "final_answer"):
                if r.get(k) and len(r[k]) > _TEXT_KEEP:
                    r[k] = r[k][:_TEXT_KEEP]
            out[r["trajectory_id"]] = r
    return out


def _absorb(txn: Any, report: DagReport, result: Result) -> None:
    tid, n_steps, rows, error = result
    if rows is None:  # a rule bug must not lose the whole lab's build; it is reported
        report.failed.append((tid, error or "unknown error"))
        return
    txn.append("dag_nodes", rows["nodes"])
    txn.append("dag_edges", rows["edges"])
    txn.append("dag_metrics", [rows["metrics"]])
    report.built += 1
    report.steps += n_steps
    report.nodes += len(rows["nodes"])
    report.edges += len(rows["edges"])
    report.candidates += rows["candidates"]
    anomalies = rows["metrics"]["anomalies"]
    if anomalies:
        report.with_anomalies += 1
        report.anomaly_kinds.update(_anomaly_kind(a) for a in anomalies)


def resolve_trajectory_id(lab: Lab | str | os.PathLike[str], prefix: str) -> str:
    """The trajectory id equal to, or uniquely starting with, `prefix`."""
    lab = _open(lab)
    ids = lab.read("trajectories", ["trajectory_id"]).column("trajectory_id").to_pylist()
    if prefix in ids:
        return prefix
    hits = [t for t in ids if t.startswith(prefix)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise LabError(f"no trajectory {prefix!r} in {lab.root}")
    raise LabError(f"{prefix!r} is ambiguous: {', '.join(hits[:5])}{'...' if len(hits) > 5 else ''}")


def load_dag(lab: Lab | str | os.PathLike[str], trajectory_id: str) -> StepDag:
    """A trajectory's DAG from the stored tables; built in memory (not stored) when absent or outdated."""
    lab = _open(lab)
    tid = resolve_trajectory_id(lab, trajectory_id)
    flt = pc.field("trajectory_id") == tid
    metrics = lab.read("dag_metrics", filter=flt).to_pylist()
    if metrics and metrics[0]["dag_version"] >= DAG_VERSION:
        m = metrics[0]
        nodes = lab.read("dag_nodes", filter=flt).sort_by("node_id").to_pylist()
        edges = lab.read("dag_edges", filter=flt).to_pylist()
        edges.sort(key=lambda e: (e["src"], e["dst"], e["type"]))
        return StepDag(tid, nodes, edges, m, orjson.loads(m["decisive_candidates"] or "[]"))
    trows = lab.read("trajectories", list(TRAJECTORY_COLUMNS), filter=flt).to_pylist()
    steps = lab.read_trajectory_steps(tid, list(STEP_COLUMNS)).to_pylist()
    return build_dag(trows[0], steps)


def read_steps(lab: Lab | str | os.PathLike[str], trajectory_id: str) -> list[dict[str, Any]]:
    """The step rows `render_text` shows outputs from."""
    lab = _open(lab)
    return lab.read_trajectory_steps(
        resolve_trajectory_id(lab, trajectory_id), list(STEP_COLUMNS)
    ).to_pylist()
