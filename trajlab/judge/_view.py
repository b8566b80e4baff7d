"""What the judges read about one trajectory: its row, its steps, and its DAG (from the lab or built).

The DAG comes from the `dag_nodes` / `dag_metrics` tables when the DAG stage has run, else it is built
in memory with `trajlab.dag.build_dag` when that package is available, else node statuses are derived
from the steps alone. Trajectories are loaded in chunks so memory stays bounded on large labs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow.compute as pc

from ..store import Lab

STEP_COLUMNS = [
    "trajectory_id",
    "step_index",
    "agent_id",
    "depth",
    "kind",
    "role",
    "text",
    "tool_name",
    "tool",
    "command",
    "arguments",
    "output",
    "stderr",
    "exit_code",
    "is_error",
    "timed_out",
    "modality",
    "call_id",
    "parent_step_index",
    "metadata",
]
TRAJECTORY_COLUMNS = [
    "trajectory_id",
    "runner",
    "format",
    "native_id",
    "task_id",
    "task",
    "benchmark",
    "domain",
    "difficulty",
    "model",
    "harness",
    "outcome",
    "outcome_source",
    "final_answer",
    "exit_status",
    "error",
    "n_steps",
    "n_tool_calls",
    "n_errors",
    "metadata",
]
"""Trajectory columns the judges may see. `expected_answer` is deliberately absent: judges never see gold."""

NODE_COLUMNS = [
    "trajectory_id",
    "step_index",
    "status",
    "modality",
    "branch",
    "on_answer_path",
    "is_dead_end",
    "retry_of",
    "label",
]
METRIC_COLUMNS = [
    "trajectory_id",
    "branches",
    "answer_branches",
    "modalities",
    "n_unrecovered_errors",
    "first_error_step",
    "decisive_candidates",
    "n_dead_ends",
]


def step_status(step: dict[str, Any]) -> str:
    """ok / error / timeout from the step row alone (used when no DAG is available)."""
    if step.get("timed_out"):
        return "timeout"
    if step.get("is_error"):
        return "error"
    code = step.get("exit_code")
    if step.get("kind") == "tool_call" and code not in (None, 0):
        return "timeout" if code == 124 else "error"
    return "ok"


@dataclass
class TrajectoryView:
    trajectory: dict[str, Any]
    steps: list[dict[str, Any]]
    nodes: dict[int, dict[str, Any]] = field(default_factory=dict)
    metrics: dict[str, Any] | None = None
    dag_source: str = "steps"
    """`lab` (dag tables), `built` (built in memory), or `steps` (no DAG: statuses from the steps)."""

    @property
    def trajectory_id(self) -> str:
        return str(self.trajectory["trajectory_id"])

    @property
    def step_indexes(self) -> set[int]:
        return {int(s["step_index"]) for s in self.steps}

    def status(self, step: dict[str, Any]) -> str:
        node = self.nodes.get(int(step["step_index"]))
        if node and node.get("status"):
            return str(node["status"])
        return step_status(step)

    def is_failed(self, step: dict[str, Any]) -> bool:
        return self.status(step) in ("error", "timeout")

    def final_step_index(self) -> int | None:
        """The step that delivered the final answer: the last assistant message with text."""
        for s in reversed(self.steps):
            if s.get("kind") == "assistant" and (s.get("text") or "").strip():
                return int(s["step_index"])
        return int(self.steps[-1]["step_index"]) if self.steps else None

    def candidates(self) -> list[dict[str, Any]]:
        """The DAG's ranked decisive-step candidates (empty without a DAG)."""
        if not self.metrics:
            return []
        raw = self.metrics.get("decisive_candidates")
        if isinstance(raw, list):
            return raw
        try:
            out = json.loads(raw or "[]")
        except (TypeError, ValueError):
            return []
        return out if isinstance(out, list) else []

    def meta(self) -> dict[str, Any]:
        raw = self.trajectory.get("metadata")
        if isinstance(raw, dict):
            return raw
        try:
            d = json.loads(raw or "{}")
        except (TypeError, ValueError):
            return {}
        return d if isinstance(d, dict) else {}


def ensure_dag(view: TrajectoryView) -> TrajectoryView:
    """Build the DAG in memory if the view has none yet (a no-op when it came from the lab)."""
    if view.dag_source == "steps" and not view.nodes:
        _build_in_memory(view)
    return view


def _build_in_memory(view: TrajectoryView) -> None:
    try:
        from ..dag import build_dag
    except ImportError:
        return
    try:
        dag = build_dag(view.trajectory, view.steps)
    except Exception:  # a DAG bug must not stop judging; fall back to step statuses
        return
    view.nodes = {int(n["step_index"]): n for n in dag.nodes}
    view.metrics = dict(dag.metrics)
    view.dag_source = "built"


def view_from_rows(
    trajectory: dict[str, Any],
    steps: list[dict[str, Any]],
    nodes: Iterable[dict[str, Any]] | None = None,
    metrics: dict[str, Any] | None = None,
    build: bool = True,
) -> TrajectoryView:
    """A view over plain row dicts (tests, or callers that already hold the rows)."""
    steps = sorted(steps, key=lambda s: int(s["step_index"]))
    v = TrajectoryView(dict(trajectory), steps)
    if nodes is not None or metrics is not None:
        v.nodes = {int(n["step_index"]): n for n in nodes or []}
        v.metrics = metrics
        v.dag_source = "lab"
    elif build:
        _build_in_memory(v)
    return v


def iter_views(
    lab: Lab, trajectory_ids: list[str], chunk: int = 64, build: bool = True
) -> Iterator[TrajectoryView]:
    """Views of the given trajectories, in the given order, loading `chunk` trajectories at a time."""
    have_nodes = lab.has("dag_nodes")
    have_metrics = lab.has("dag_metrics")
    for i in range(0, len(trajectory_ids), chunk):
        ids = trajectory_ids[i : i + chunk]
        flt = pc.field("trajectory_id").isin(ids)
        trajs = {r["trajectory_id"]: r for r in lab.read("trajectories", TRAJECTORY_COLUMNS, flt).to_pylist()}
        steps: dict[str, list[dict[str, Any]]] = {t: [] for t in ids}
        for r in lab.read("steps", STEP_COLUMNS, flt).to_pylist():
            steps[r["trajectory_id"]].append(r)
        nodes: dict[str, list[dict[str, Any]]] = {}
        if have_nodes:
            for r in lab.read("dag_nodes", NODE_COLUMNS, flt).to_pylist():
                nodes.setdefault(r["trajectory_id"], []).append(r)
        metrics: dict[str, dict[str, Any]] = {}
        if have_metrics:
            metrics = {
                r["trajectory_id"]: r for r in lab.read("dag_metrics", METRIC_COLUMNS, flt).to_pylist()
            }
        for tid in ids:
            t = trajs.get(tid)
            if t is None:
                continue
            if tid in nodes or tid in metrics:
                yield view_from_rows(t, steps[tid], nodes.get(tid, []), metrics.get(tid))
            else:
                yield view_from_rows(t, steps[tid], build=build)


def load_view(lab: Lab, trajectory_id: str, build: bool = True) -> TrajectoryView:
    from ..errors import LabError

    for v in iter_views(lab, [trajectory_id], build=build):
        return v
    raise LabError(f"no trajectory {trajectory_id!r} in {lab.root}")
