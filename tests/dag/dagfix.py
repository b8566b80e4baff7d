"""A small builder of step rows (as the steps table holds them) for hand-written DAG fixtures."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from trajlab.dag import StepDag, build_dag
from trajlab.normalize import normalize_call


class Run:
    """Appends step rows in order; each step is 5 s after the previous one unless `parallel=True`."""

    def __init__(self, tid: str = "t_fixture", domain: str | None = None, final_answer: str | None = None):
        self.trajectory: dict[str, Any] = {
            "trajectory_id": tid,
            "runner": "fixture",
            "domain": domain,
            "task": None,
            "final_answer": final_answer,
            "anomalies": [],
            "outcome": "unknown",
        }
        self.steps: list[dict[str, Any]] = []
        self.clock = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)

    def _add(self, kind: str, parallel: bool = False, **fields: Any) -> int:
        if not parallel:
            self.clock += timedelta(seconds=5)
        i = len(self.steps)
        row = {
            "trajectory_id": self.trajectory["trajectory_id"],
            "step_index": i,
            "agent_id": "main",
            "parent_step_index": None,
            "depth": 0,
            "kind": kind,
            "timestamp": self.clock,
            "is_error": False,
            "timed_out": False,
            **fields,
        }
        self.steps.append(row)
        return i

    def user(self, text: str, **kw: Any) -> int:
        if self.trajectory["task"] is None:
            self.trajectory["task"] = text
        return self._add("user", role="user", text=text, **kw)

    def think(self, text: str, **kw: Any) -> int:
        return self._add("reasoning", role="assistant", text=text, **kw)

    def say(self, text: str, **kw: Any) -> int:
        return self._add("assistant", role="assistant", text=text, **kw)

    def call(
        self,
        tool_name: str,
        args: dict[str, Any] | str,
        output: str | None = "",
        exit_code: int | None = 0,
        parallel: bool = False,
        **kw: Any,
    ) -> int:
        info = normalize_call(tool_name, args)
        fields: dict[str, Any] = {
            "role": "assistant",
            "tool_name": tool_name,
            "tool": info.tool,
            "programs": list(info.programs),
            "modality": info.modality,
            "command": info.command,
            "arguments": json.dumps(args) if not isinstance(args, str) else args,
            "output": output,
            "exit_code": exit_code,
            "is_error": exit_code not in (0, None),
            "call_id": f"call_{len(self.steps)}",
        }
        fields.update(kw)
        return self._add("tool_call", parallel=parallel, **fields)

    def bash(self, command: str, output: str = "", exit_code: int | None = 0, **kw: Any) -> int:
        return self.call("Bash", {"command": command}, output, exit_code, **kw)

    def compaction(self, text: str, **kw: Any) -> int:
        return self._add("compaction", role="system", text=text, **kw)

    def dag(self) -> StepDag:
        return build_dag(self.trajectory, self.steps)


def edge_set(dag: StepDag, type: str | None = None) -> set[tuple[int, int, str]]:
    return {(e["src"], e["dst"], e["type"]) for e in dag.edges if type is None or e["type"] == type}


def edge(dag: StepDag, src: int, dst: int, type: str) -> dict[str, Any]:
    found = [e for e in dag.edges if e["src"] == src and e["dst"] == dst and e["type"] == type]
    assert found, f"no {type} edge {src}->{dst}; edges: {sorted(edge_set(dag))}"
    return found[0]


def add_to_lab(lab: Any, runs: list[Run]) -> None:
    """Write the runs' trajectory and step rows into a lab, as ingest would."""
    now = datetime.now(timezone.utc)
    trajectories = []
    steps = []
    for r in runs:
        t = r.trajectory
        trajectories.append(
            {
                "trajectory_id": t["trajectory_id"],
                "runner": "fixture",
                "format": "fixture",
                "source_path": f"/fixtures/{t['trajectory_id']}.jsonl",
                "source_digest": "xxh3_128:0",
                "domain": t["domain"],
                "task": t["task"],
                "final_answer": t["final_answer"],
                "n_steps": len(r.steps),
                "ingested_at": now,
            }
        )
        for s in r.steps:
            steps.append({**s, "step_id": f"{t['trajectory_id']}:{s['step_index']}"})
    with lab.write("fixture") as txn:
        txn.append("trajectories", trajectories)
        txn.append("steps", steps)


def interrupt_build_at(monkeypatch: Any, n: int) -> Callable[[], None]:
    """Make the n-th DAG built raise KeyboardInterrupt (Ctrl-C); returns a function that undoes it."""
    import trajlab.dag._pool as dag_pool

    real = dag_pool.build_into
    seen: list[str] = []

    def build_into(trajectory, steps, writers):
        seen.append(trajectory["trajectory_id"])
        if len(seen) == n:
            raise KeyboardInterrupt
        return real(trajectory, steps, writers)

    monkeypatch.setattr(dag_pool, "build_into", build_into)
    return lambda: monkeypatch.setattr(dag_pool, "build_into", real)
