"""The gap table equals a direct computation, on any small world: `gaps.sql` over the steps (one row
per call), over the materialized tool_usage counts and on a lab without tool_seq (schema v1), and the
Python API's point estimates, ungrouped and per model."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from analysis_labs import LabBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlab.analysis import gaps, refresh_tool_usage, run_sql

TRAJ = st.tuples(
    st.sampled_from(["success", "failure", "unknown"]),
    st.sampled_from(["m1", "m2"]),
    st.lists(st.sampled_from(["ffprobe", "python", "whisper", "grep"]), max_size=6),
)


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def expected(world: list[tuple[str, str, list[str]]], by_model: bool) -> dict[tuple, dict[str, Any]]:
    """Per (group, tool): the counts, shares, gaps and usage rates, straight from the definitions."""
    out: dict[tuple, dict[str, Any]] = {}
    groups = sorted({m for _, m, _ in world}) if by_model else [None]
    for g in groups:
        runs = [(o, tools) for o, m, tools in world if o != "unknown" and (g is None or m == g)]
        calls = {o: Counter(t for oo, ts in runs if oo == o for t in ts) for o in ("success", "failure")}
        users = {o: Counter(t for oo, ts in runs if oo == o for t in set(ts)) for o in ("success", "failure")}
        n_traj = {o: sum(1 for oo, _ in runs if oo == o) for o in ("success", "failure")}
        total = {o: sum(calls[o].values()) for o in calls}
        for tool in set(calls["success"]) | set(calls["failure"]):
            share = {o: calls[o][tool] / total[o] if total[o] else None for o in calls}
            usage = {o: users[o][tool] / n_traj[o] if n_traj[o] else None for o in calls}
            out[(g, tool)] = {
                "calls_success": calls["success"][tool],
                "calls_failure": calls["failure"][tool],
                "n_traj_success": n_traj["success"],
                "n_traj_failure": n_traj["failure"],
                "traj_using_success": users["success"][tool],
                "traj_using_failure": users["failure"][tool],
                "share_success": share["success"],
                "share_failure": share["failure"],
                "gap": _diff(share["success"], share["failure"]),
                "usage_success": usage["success"],
                "usage_failure": usage["failure"],
                "usage_gap": _diff(usage["success"], usage["failure"]),
            }
    return out


def _check(rows: list[dict[str, Any]], want: dict[tuple, dict[str, Any]], by_model: bool, what: str) -> None:
    got = {(r["model"] if by_model else None, r["tool"]): r for r in rows}
    assert set(got) == set(want), what
    for key, w in want.items():
        for col, v in w.items():
            g = got[key][col]
            assert (g is None) == (v is None) and (v is None or g == pytest.approx(v)), (what, key, col, g, v)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=st.lists(TRAJ, min_size=1, max_size=7))
def test_gap_table_matches_its_definition(world: list[tuple[str, str, list[str]]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        labs = {}
        for tool_seq in (True, False):
            b = LabBuilder(Path(d) / f"lab-{tool_seq}")
            for i, (outcome, model, tools) in enumerate(world):
                b.traj(f"T{i}", outcome, model=model)
                b.step(f"T{i}")
                for t in tools:
                    b.call(f"T{i}", t)
            labs[tool_seq] = b.build(tool_seq=tool_seq)
        lab = labs[True]
        has_calls = any(o != "unknown" and tools for o, _, tools in world)
        has_both = {o for o, _, _ in world} >= {"success", "failure"}
        p = {"min_support": 0, "min_trajectories": 0}
        for by_model in (False, True):
            want = expected(world, by_model)
            by = "model" if by_model else ""
            _check(run_sql(lab, "gaps", params=p, by=by, counts="steps").to_pylist(), want, by_model, "steps")
            _check(run_sql(labs[False], "gaps", params=p, by=by).to_pylist(), want, by_model, "v1 lab")
            refresh_tool_usage(lab, force=True)
            _check(
                run_sql(lab, "gaps", params=p, by=by, counts="tool_usage").to_pylist(),
                want,
                by_model,
                "usage",
            )
            if has_calls and has_both:
                res = gaps(lab, by=by or None, min_support=0, min_trajectories=0, n_boot=0, progress=False)
                _check(res.table.to_pylist(), want, by_model, "gaps()")
