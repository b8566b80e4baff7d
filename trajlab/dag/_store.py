"""Build the DAGs of a lab (incremental, streaming) and read one back."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from ..batching import consecutive_groups
from ..errors import LabError, WorkerDiedError
from ..gcutil import fewer_gc_passes
from ..store import Lab
from ._build import build_dag, start_cwd
from ._model import DAG_VERSION, StepDag
from ._pool import (
    DAG_TABLES,
    GC_THRESHOLD,
    Summary,
    TaskResult,
    build_into,
    dag_writers,
    run_tasks,
    task_pool,
)
from ._scan import STEP_COLUMNS, locate, make_tasks

TRAJECTORY_COLUMNS = (
    "trajectory_id",
    "runner",
    "domain",
    "task",
    "final_answer",
    "expected_answer",
    "anomalies",
    "outcome",
    "ingested_at",
    "metadata",
)
_TEXT_KEEP = 16_000  # characters of task / final answer kept per pending trajectory
POOL_MIN_STEPS = 20_000
"""Below this many steps, worker processes cost more to start than they save."""
TASK_STEPS = 10_000
"""Least steps per task (a task ends at a trajectory boundary). A pool gets about 8 tasks per worker,
so that the workers finish at about the same time; each task writes its own three part files."""
COMMIT_EVERY_STEPS = 2_000_000
"""Steps per write transaction: an interrupted or crashed build keeps the DAGs of the transactions it
committed, and the next (incremental) build goes on from there."""


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
    commits: int = 0

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
        resolved = []
        for t in ids:  # a unique id prefix is enough, as for `dag show`
            hits = _hits(t, ingested)
            if len(hits) > 1:
                raise _ambiguous(t, hits)
            resolved.append(hits[0] if hits else t)
        ids = resolved
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


def _hits(prefix: str, ids: Any) -> list[str]:
    """The trajectory id equal to `prefix`, else those starting with it."""
    if prefix in ids:
        return [prefix]
    return [t for t in ids if t.startswith(prefix)]


def _ambiguous(prefix: str, hits: list[str]) -> LabError:
    return LabError(f"{prefix!r} is ambiguous: {', '.join(hits[:5])}{'...' if len(hits) > 5 else ''}")


class DagInterrupted(KeyboardInterrupt):
    """Ctrl-C during `build_lab`: `report` holds what the committed transactions built."""

    def __init__(self, report: DagReport):
        super().__init__("DAG build interrupted")
        self.report = report


def build_lab(
    lab: Lab | str | os.PathLike[str],
    trajectory_ids: list[str] | None = None,
    rebuild: bool = False,
    progress: bool = True,
    batch_size: int = 16_384,
    workers: int | None = None,
    commit_every_steps: int | None = None,
) -> DagReport:
    """Build and store the step DAGs of a lab's trajectories, in write transactions of about
    `commit_every_steps` steps (default COMMIT_EVERY_STEPS).

    Incremental: only trajectories without a DAG, with an older `dag_version`, or re-ingested after
    their DAG was built are processed (all selected ones with `rebuild=True`); their old rows are
    deleted in the transaction that adds the new ones; rows of trajectories no longer in the lab go in
    the last one. Steps are streamed, so memory is bounded by the largest trajectory rather than the
    lab. `workers` processes build the DAGs (default: the CPU count, up to 4; 1 builds in this
    process). Ctrl-C raises DagInterrupted after rolling back only the transaction in flight.
    """
    t0 = time.perf_counter()
    lab = _open(lab)
    report = DagReport(lab=lab.root)
    todo, stale, report.up_to_date = _todo(lab, trajectory_ids, rebuild)
    if not todo and not stale:
        report.seconds = time.perf_counter() - t0
        report.generation = lab.generation
        return report
    where, counts = locate(lab, set(todo))
    trows = _trajectory_rows(lab, todo)
    total = sum(counts.values())
    n_workers = (workers or min(os.cpu_count() or 1, 4)) if total >= POOL_MIN_STEPS else 1
    commit_every_steps = max(1, commit_every_steps or COMMIT_EVERY_STEPS)
    if n_workers > 1:  # enough tasks to balance the load (about 8 per worker, 4 per transaction)
        task_steps = max(TASK_STEPS, min(total // (n_workers * 8), commit_every_steps // (n_workers * 4)))
    else:  # one task per transaction, in this process
        task_steps = commit_every_steps
    tasks = make_tasks(where, counts, trows, task_steps)
    groups = list(consecutive_groups(tasks, lambda t: t.steps, commit_every_steps)) or [[]]
    empty = [t for t in todo if t not in counts]
    bar = tqdm(total=total, unit="step", unit_scale=True, desc="dag", disable=not progress, leave=False)
    try:
        with task_pool(n_workers, len(tasks)) as pool:
            for i, group in enumerate(groups):
                last = i == len(groups) - 1
                done = DagReport(lab=lab.root)  # merged into the report once its transaction commits
                with lab.write("dag") as txn:
                    ids = [t for task in group for t in task.counts]
                    if last:
                        ids += [*empty, *stale]
                    for table in DAG_TABLES:
                        txn.delete(table, "trajectory_id", ids)
                    results = run_tasks(group, txn.staging_dir, txn.generation, pool, batch_size)
                    try:
                        for result in results:
                            _absorb(txn, done, result)
                            bar.update(sum(b[1] for b in result.built))
                    finally:
                        results.close()  # on an error: no worker writes into staging any more
                    if last and empty:  # a trajectory without steps still gets its (empty) DAG
                        writers = dag_writers(txn.staging_dir / "no-steps", txn.generation)
                        with fewer_gc_passes(GC_THRESHOLD):
                            built = [build_into(trows[t], [], writers) for t in empty]
                        _absorb(txn, done, TaskResult(-1, {t: w.close() for t, w in writers.items()}, built))
                    if last:
                        done.removed = len(stale)
                    txn.summary["dag"] = {
                        "built": done.built,
                        "removed": done.removed,
                        "dag_version": DAG_VERSION,
                    }
                _merge(report, done)
    except KeyboardInterrupt:
        report.seconds = time.perf_counter() - t0
        report.generation = lab.refresh().generation
        raise DagInterrupted(report) from None
    except BrokenProcessPool:
        kept = (
            f"the {report.built} DAGs of the {report.commits} transaction(s) this run committed are kept"
            if report.commits
            else "this run committed nothing"
        )
        raise WorkerDiedError(
            f"{lab.root}: a DAG worker process died (killed by a signal, or out of memory?); the "
            f"transaction in flight was rolled back and the lab is at generation {lab.refresh().generation} "
            f"({kept}); run `trajlab dag {lab.root}` again to build the rest"
        ) from None
    finally:
        bar.close()
    report.seconds = time.perf_counter() - t0
    report.generation = lab.refresh().generation
    return report


def _merge(report: DagReport, done: DagReport) -> None:
    for name in ("built", "removed", "steps", "nodes", "edges", "candidates", "with_anomalies"):
        setattr(report, name, getattr(report, name) + getattr(done, name))
    report.anomaly_kinds.update(done.anomaly_kinds)
    report.failed += done.failed
    report.commits += 1


def _trajectory_rows(lab: Lab, todo: list[str]) -> dict[str, dict[str, Any]]:
    flt = pc.field("trajectory_id").isin(pa.array(todo, type=pa.string()))
    out: dict[str, dict[str, Any]] = {}
    for batch in lab.dataset("trajectories").to_batches(columns=list(TRAJECTORY_COLUMNS), filter=flt):
        for r in batch.to_pylist():
            for k in ("task", "final_answer", "expected_answer"):
                if r.get(k) and len(r[k]) > _TEXT_KEEP:
                    r[k] = r[k][:_TEXT_KEEP]
            r["metadata"] = _slim_metadata(r.get("metadata"))
            out[r["trajectory_id"]] = r
    return out


def _slim_metadata(meta: Any) -> str | None:
    """Of a pending trajectory's metadata JSON, only what the rules read (the working directory)."""
    if not isinstance(meta, str) or '"cwd"' not in meta:
        return None
    cwd = start_cwd({"metadata": meta})
    return orjson.dumps({"cwd": cwd}).decode() if cwd else None


def _absorb(txn: Any, report: DagReport, result: TaskResult) -> None:
    for table, parts in result.parts.items():
        for path, rows in parts:
            txn.add_part(table, path, rows)
    for summary in result.built:
        _count(report, summary)


def _count(report: DagReport, summary: Summary) -> None:
    tid, n_steps, n_nodes, n_edges, n_candidates, anomalies, error = summary
    if error is not None:  # a rule bug must not lose the whole lab's build; it is reported
        report.failed.append((tid, error))
        return
    report.built += 1
    report.steps += n_steps
    report.nodes += n_nodes
    report.edges += n_edges
    report.candidates += n_candidates
    if anomalies:
        report.with_anomalies += 1
        report.anomaly_kinds.update(_anomaly_kind(a) for a in anomalies)


def resolve_trajectory_id(lab: Lab | str | os.PathLike[str], prefix: str) -> str:
    """The trajectory id equal to, or uniquely starting with, `prefix` (the ids are streamed: only the
    matching ones are kept)."""
    lab = _open(lab)
    hits: list[str] = []
    for batch in lab.iter_batches("trajectories", ["trajectory_id"]):
        ids = batch.column(0)
        if pc.any(pc.equal(ids, prefix)).as_py():
            return prefix
        if len(hits) <= 5:  # enough to name a few in the message, and to know there are more
            hits += ids.filter(pc.starts_with(ids, pattern=prefix)).to_pylist()[: 6 - len(hits)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise LabError(f"no trajectory {prefix!r} in {lab.root}")
    raise _ambiguous(prefix, hits)


def load_dag(lab: Lab | str | os.PathLike[str], trajectory_id: str) -> StepDag:
    """A trajectory's DAG from the stored tables; built in memory (not stored) when absent or outdated.
    Reads that trajectory's rows only (`Lab.read_trajectory`): memory follows the trajectory, not the lab."""
    lab = _open(lab)
    tid = resolve_trajectory_id(lab, trajectory_id)
    metrics = lab.read_trajectory("dag_metrics", tid).to_pylist()
    if metrics and metrics[0]["dag_version"] >= DAG_VERSION:
        m = metrics[0]
        nodes = lab.read_trajectory("dag_nodes", tid).sort_by("node_id").to_pylist()
        edges = lab.read_trajectory("dag_edges", tid).to_pylist()
        edges.sort(key=lambda e: (e["src"], e["dst"], e["type"]))
        return StepDag(tid, nodes, edges, m, orjson.loads(m["decisive_candidates"] or "[]"))
    trows = lab.read_trajectory("trajectories", tid, list(TRAJECTORY_COLUMNS)).to_pylist()
    steps = lab.read_trajectory_steps(tid, list(STEP_COLUMNS)).to_pylist()
    return build_dag(trows[0], steps)


RENDER_STEP_COLUMNS = ("step_index", "kind", "output")
"""The step columns `render_text` shows (the first line of each action's output)."""


def read_steps(
    lab: Lab | str | os.PathLike[str], trajectory_id: str, columns: Sequence[str] = RENDER_STEP_COLUMNS
) -> list[dict[str, Any]]:
    """The step rows `render_text` shows outputs from (`columns` of them: by default only those it
    reads, not the steps' text, arguments and metadata), in step order."""
    lab = _open(lab)
    return lab.read_trajectory_steps(resolve_trajectory_id(lab, trajectory_id), list(columns)).to_pylist()
