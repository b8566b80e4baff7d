"""Building DAGs in worker processes with a bounded window of work in flight (memory stays bounded)."""

from __future__ import annotations

import multiprocessing as mp
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from ._build import build_dag

Job = list[tuple[dict[str, Any], list[dict[str, Any]]]]
Result = tuple[str, int, dict[str, Any] | None, str | None]  # (trajectory id, steps, rows or None, error)

CHUNK_STEPS = 4_000
"""Trajectories are sent to workers in chunks of about this many steps (fewer round trips)."""


def build_one(trajectory: dict[str, Any], steps: list[dict[str, Any]]) -> Result:
    """Build one DAG; a rule bug becomes an error string instead of an exception (reported, not fatal)."""
    tid = trajectory["trajectory_id"]
    try:
        dag = build_dag(trajectory, steps)
    except Exception as e:
        return tid, len(steps), None, f"{type(e).__name__}: {e}"
    rows = {"nodes": dag.nodes, "edges": dag.edges, "metrics": dag.metrics, "candidates": len(dag.candidates)}
    return tid, len(steps), rows, None


def _build_chunk(job: Job) -> list[Result]:
    return [build_one(t, s) for t, s in job]


def _chunks(items: Iterable[tuple[dict[str, Any], list[dict[str, Any]]]]) -> Iterator[Job]:
    job: Job = []
    size = 0
    for t, steps in items:
        job.append((t, steps))
        size += len(steps) + 1
        if size >= CHUNK_STEPS:
            yield job
            job, size = [], 0
    if job:
        yield job


def _context() -> Any:
    methods = mp.get_all_start_methods()
    if "fork" in methods and sys.version_info < (3, 12):
        return mp.get_context("fork")
    return mp.get_context("forkserver" if "forkserver" in methods else "spawn")


def build_many(
    items: Iterable[tuple[dict[str, Any], list[dict[str, Any]]]], workers: int
) -> Iterator[Result]:
    """Results in input order. With `workers` > 1, at most 2 chunks per worker are in flight."""
    if workers <= 1:
        for t, steps in items:
            yield build_one(t, steps)
        return
    window: deque[Future[list[Result]]] = deque()
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        for job in _chunks(items):
            window.append(pool.submit(_build_chunk, job))
            if len(window) >= 2 * workers:
                yield from window.popleft().result()
        while window:
            yield from window.popleft().result()
