"""Hand-built labs with known answers for the analysis tests (imported as `analysis_labs`)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from trajlab.normalize import normalize_call, program_not_found
from trajlab.schema import TABLES, arrow_schema, default_row
from trajlab.store import Lab

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


class LabBuilder:
    """Collect trajectories and their steps as row dicts, then write them with `Lab.append`."""

    def __init__(self, root: Path):
        self.root = root
        self.trajectories: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.labels: dict[str, list[dict[str, Any]]] = {}
        self._next: dict[str, int] = {}

    def traj(self, tid: str, outcome: str = "unknown", **fields: Any) -> LabBuilder:
        self.trajectories.append(
            {
                "trajectory_id": tid,
                "runner": fields.pop("runner", "test"),
                "format": "test",
                "source_path": f"/fixtures/{tid}.jsonl",
                "source_digest": f"xxh3_128:{tid}",
                "outcome": outcome,
                "ingested_at": NOW,
                **fields,
            }
        )
        self._next.setdefault(tid, 0)
        return self

    def step(self, tid: str, kind: str = "assistant", **fields: Any) -> int:
        i = self._next[tid]
        self._next[tid] = i + 1
        self.steps.append(
            {"trajectory_id": tid, "step_index": i, "step_id": f"{tid}:{i}", "kind": kind, **fields}
        )
        return i

    def call(self, tid: str, tool: str, error: bool = False, **fields: Any) -> int:
        """A tool call whose normalized tool is `tool` (programs = [tool])."""
        return self.step(
            tid, "tool_call", tool_name="Bash", tool=tool, programs=[tool], is_error=error, **fields
        )

    def shell(self, tid: str, command: str, tool_name: str = "Bash", error: bool = False) -> int:
        """A tool call normalized from a real command line, as ingest would store it."""
        args: Any = {"command": command} if isinstance(command, str) else command
        return self.runner_call(tid, tool_name, args, error=error)

    def runner_call(self, tid: str, tool_name: str, args: Any, error: bool = False) -> int:
        info = normalize_call(tool_name, args)
        return self.step(
            tid,
            "tool_call",
            tool_name=tool_name,
            tool=info.tool,
            programs=list(info.programs),
            modality=info.modality,
            command=info.command,
            is_error=error,
        )

    def label(self, table: str, **row: Any) -> LabBuilder:
        self.labels.setdefault(table, []).append({"created_at": NOW, **row})
        return self

    def build(self, tool_seq: bool = True) -> Lab:
        """Write the lab; `tool_seq=False` leaves steps.tool_seq null, as in a lab written by schema v1."""
        lab = Lab.open(self.root, create=True)
        with lab.write("test fixture") as txn:
            if self.trajectories:
                txn.append("trajectories", self.trajectories)
            if self.steps:
                txn.append("steps", with_tool_seq(self.steps) if tool_seq else self.steps)
            for table, rows in self.labels.items():
                txn.append(table, rows)
        return lab


def with_tool_seq(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with `tool_seq` as ingest writes it: per trajectory, the running count of calls of the
    same tool (tool, else tool_name, else "(unknown)") in step order, 0 on other steps and on calls of a
    program the shell did not find."""
    seen: dict[tuple[str, str], int] = {}
    out = []
    for s in sorted(steps, key=lambda s: (s["trajectory_id"], s["step_index"])):
        seq = 0
        if s["kind"] == "tool_call":
            tool = s.get("tool") if s.get("tool") is not None else s.get("tool_name")
            k = (s["trajectory_id"], "(unknown)" if tool is None else tool)
            if not program_not_found(
                k[1], s.get("exit_code"), s.get("is_error"), s.get("output"), s.get("stderr")
            ):
                seq = seen[k] = seen.get(k, 0) + 1
        out.append({**s, "tool_seq": seq})
    return out


def arrow_table(table: str, columns: dict[str, Any]) -> pa.Table:
    """An Arrow table for a lab table from the given columns; other columns get nulls or defaults."""
    n = len(next(iter(columns.values())))
    defaults = default_row(TABLES[table])
    arrays = []
    for f in arrow_schema(TABLES[table]):
        if f.name in columns:
            arrays.append(pa.array(columns[f.name], type=f.type))
        elif f.nullable:
            arrays.append(pa.nulls(n, f.type))
        else:
            arrays.append(pa.array([defaults[f.name]] * n, type=f.type))
    return pa.Table.from_arrays(arrays, schema=arrow_schema(TABLES[table]))


def simulated_lab(
    root: Path,
    n_replicates: int,
    n_per_outcome: int,
    p_success: float,
    p_failure: float,
    seed: int,
    tool_seq: bool = True,
) -> Lab:
    """Independent replicates (benchmark `rep<i>`) of a two-tool world with a known usage gap.

    Each trajectory calls `probe` with probability p (by outcome), 1 + Poisson(2) times when it does,
    and always calls `python` 1 + Poisson(4) times. Built as Arrow tables (tens of thousands of rows);
    `tool_seq=False` leaves steps.tool_seq null (a lab written before schema v2).
    """
    rng = np.random.default_rng(seed)
    tids, outcomes, benches = [], [], []
    step_tid, step_idx, step_tool, step_seq = [], [], [], []
    for rep in range(n_replicates):
        for outcome, p in (("success", p_success), ("failure", p_failure)):
            for k in range(n_per_outcome):
                tid = f"t_{rep:04d}_{outcome[0]}{k:04d}"
                tids.append(tid)
                outcomes.append(outcome)
                benches.append(f"rep{rep:04d}")
                n_probe = 1 + rng.poisson(2) if rng.random() < p else 0
                n_py = 1 + rng.poisson(4)
                tools = ["probe"] * n_probe + ["python"] * n_py
                rng.shuffle(tools)
                step_tid += [tid] * len(tools)
                step_idx += list(range(len(tools)))
                step_tool += tools
                step_seq += [tools[: i + 1].count(t) for i, t in enumerate(tools)]
    n = len(tids)
    traj = arrow_table(
        "trajectories",
        {
            "trajectory_id": tids,
            "runner": ["sim"] * n,
            "format": ["sim"] * n,
            "source_path": [f"/sim/{t}" for t in tids],
            "source_digest": [f"xxh3_128:{t}" for t in tids],
            "benchmark": benches,
            "outcome": outcomes,
            "ingested_at": [NOW] * n,
        },
    )
    m = len(step_tid)
    steps = arrow_table(
        "steps",
        {
            "trajectory_id": step_tid,
            "step_index": step_idx,
            "step_id": [f"{t}:{i}" for t, i in zip(step_tid, step_idx)],
            "kind": ["tool_call"] * m,
            "tool": step_tool,
            "programs": [[t] for t in step_tool],
            "tool_seq": step_seq if tool_seq else [None] * m,
        },
    )
    lab = Lab.open(root, create=True)
    with lab.write("simulation") as txn:
        txn.append("trajectories", traj)
        txn.append("steps", steps)
    return lab
