"""Running build tasks: in this process, or in worker processes that read their own row groups and
write their own Parquet parts, so the parent only plans tasks and commits the parts they wrote.

Nothing but the task (row group numbers, owned trajectory ids and their `trajectories` rows) goes to a
worker, and nothing but part paths and a short summary per trajectory comes back: no step rows or
DAG rows are pickled between processes.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
from collections import deque
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..gcutil import fewer_gc_passes
from ..schema import TABLES, default_row
from ..sigutil import deferred_sigint, ignore_sigint
from ..store import PartWriter, table_schema
from ._build import build_dag
from ._scan import Task, grouped_steps

DAG_TABLES = ("dag_nodes", "dag_edges", "dag_metrics")

Summary = tuple[str, int, int, int, int, list[str], str | None]
"""(trajectory id, steps, nodes, edges, candidates, anomalies, error or None) of one built DAG."""

GC_THRESHOLD = 100_000
"""First-generation threshold of the garbage collector during a build. A DAG build allocates many
short-lived dicts and lists but few reference cycles; at the default (700) the collector rescans the
young objects thousands of times per trajectory, about a fifth of the build time."""


@dataclass
class TaskResult:
    number: int
    parts: dict[str, list[tuple[Path, int]]] = field(default_factory=dict)  # table -> [(part, rows)]
    built: list[Summary] = field(default_factory=list)


def dag_writers(folder: Path, generation: int) -> dict[str, PartWriter]:
    return {
        t: PartWriter(folder / t, table_schema(t), default_row(TABLES[t]), generation) for t in DAG_TABLES
    }


def build_into(
    trajectory: dict[str, Any], steps: list[dict[str, Any]], writers: dict[str, PartWriter]
) -> Summary:
    """Build one DAG and buffer its rows; a rule bug becomes an error string (reported, not fatal)."""
    tid = trajectory["trajectory_id"]
    try:
        dag = build_dag(trajectory, steps)
    except Exception as e:
        return tid, len(steps), 0, 0, 0, [], f"{type(e).__name__}: {e}"
    writers["dag_nodes"].extend(dag.nodes)
    writers["dag_edges"].extend(dag.edges)
    writers["dag_metrics"].add(dag.metrics)
    anomalies = list(dag.metrics.get("anomalies") or [])
    return tid, len(steps), len(dag.nodes), len(dag.edges), len(dag.candidates), anomalies, None


def run_task(task: Task, folder: Path, generation: int, batch_size: int = 16_384) -> TaskResult:
    """Read the task's row groups, build its trajectories' DAGs and write them as parts in `folder`."""
    writers = dag_writers(folder / f"task{task.number:05d}", generation)
    out = TaskResult(task.number)
    try:
        with fewer_gc_passes(GC_THRESHOLD):
            for tid, steps in grouped_steps(task.batches(batch_size), task.counts):
                out.built.append(build_into(task.trajectories[tid], steps, writers))
        out.parts = {t: w.close() for t, w in writers.items()}
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    return out


def _context() -> Any:
    methods = mp.get_all_start_methods()
    if "fork" in methods and sys.version_info < (3, 12):
        return mp.get_context("fork")
    return mp.get_context("forkserver" if "forkserver" in methods else "spawn")


@contextmanager
def task_pool(workers: int, n_tasks: int) -> Iterator[ProcessPoolExecutor | None]:
    """Worker processes for a build (None: run the tasks in this process). One pool serves every
    transaction of a build."""
    if workers <= 1 or n_tasks <= 1:
        yield None
        return
    with ProcessPoolExecutor(
        max_workers=min(workers, n_tasks), mp_context=_context(), initializer=ignore_sigint
    ) as pool:
        yield pool


def run_tasks(
    tasks: list[Task],
    folder: Path,
    generation: int,
    pool: ProcessPoolExecutor | None,
    batch_size: int = 16_384,
) -> Generator[TaskResult, None, None]:
    """Results in task order. Every task is submitted at once (a task is a few ids and row group
    numbers, a result a few part paths), so a slow task never leaves a worker idle.

    If anything fails (a task, the caller, Ctrl-C), the tasks not started are cancelled and the
    running ones are waited for before the error goes on: the transaction then removes its staging
    folder, and no worker may still be writing into it (it would leave part files behind). The pool
    is not usable afterwards."""
    if pool is None or len(tasks) <= 1:
        for task in tasks:
            yield run_task(task, folder, generation, batch_size)
        return
    futures: deque[Future[TaskResult]] = deque()
    try:
        with deferred_sigint():  # the first submit forks the workers (see trajlab.sigutil)
            futures.extend(pool.submit(run_task, task, folder, generation, batch_size) for task in tasks)
        while futures:
            yield futures.popleft().result()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
