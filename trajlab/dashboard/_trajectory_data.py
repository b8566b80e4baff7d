"""One trajectory's rows and DAG, cached per lab generation, and its folded, highlighted DAG view."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..dag import StepDag, load_dag
from ..errors import LabError
from ._graph import DEFAULT_MIN_RUN, GraphView, Highlights, build_view
from ._review import trajectory_labels

if TYPE_CHECKING:
    from ._app import DashContext


@dataclass
class TrajectoryData:
    row: dict[str, Any]
    dag: StepDag
    steps: dict[int, dict[str, Any]]


class TrajectoryCache:
    """The few trajectories being looked at, per lab generation (steps with outputs can be big)."""

    def __init__(self, size: int = 6):
        self.size = size
        self._d: OrderedDict[tuple[int, str], TrajectoryData] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, ctx: DashContext, tid: str) -> TrajectoryData:
        snap = ctx.source.snapshot()
        key = (snap.generation, tid)
        with self._lock:
            if key in self._d:
                self._d.move_to_end(key)
                return self._d[key]
        lab = ctx.source.lab
        rows = snap.cursor().execute("SELECT * FROM trajectories WHERE trajectory_id = ?", [tid])
        names = [d[0] for d in rows.description]
        found = rows.fetchall()
        if not found:
            raise LabError(f"no trajectory {tid!r} in this lab")
        row = dict(zip(names, found[0]))
        dag = load_dag(lab, tid)
        steps = {r["step_index"]: r for r in lab.read_trajectory_steps(tid).to_pylist()}
        data = TrajectoryData(row, dag, steps)
        with self._lock:
            self._d[key] = data
            while len(self._d) > self.size:
                self._d.popitem(last=False)
        return data


def _highlights(ctx: DashContext, d: TrajectoryData) -> Highlights:
    labels = trajectory_labels(ctx.source, d.row["trajectory_id"])
    judge = None if ctx.blind else labels.under_review
    human = labels.human[0] if labels.human else None
    gold = labels.gold[0] if labels.gold else None
    ref = gold or judge
    return Highlights(
        decisive=(ref or {}).get("decisive_step_index"),
        evidence=list((ref or {}).get("evidence_steps") or []),
        human_decisive=(human or {}).get("decisive_step_index"),
        candidates=[c["step_index"] for c in d.dag.candidates[:3] if c.get("step_index") is not None],
    )


def dag_view(
    ctx: DashContext,
    tid: str,
    collapse: Any,
    min_run: Any,
    agents: list[str] | None,
    expanded: list[str] | None,
) -> GraphView:
    """The folded, highlighted view of a trajectory's DAG, cached per lab generation and options."""
    d = ctx.trajectories.get(ctx, tid)
    hl = _highlights(ctx, d)
    min_run = max(2, int(min_run or DEFAULT_MIN_RUN))
    key = ("dag-view", tid, bool(collapse), min_run, tuple(agents or ()), tuple(expanded or ()), repr(hl))
    return ctx.source.snapshot().cached(
        key,
        lambda: build_view(
            d.dag,
            hl,
            collapse_runs=bool(collapse),
            min_run=min_run,
            collapsed_agents=agents or [],
            expanded_groups=expanded or [],
            secrets=ctx.secrets,
        ),
        size=32,
    )
