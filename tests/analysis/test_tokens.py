from __future__ import annotations

import pytest

from trajlab.analysis import token_efficiency


def _lab(b):
    b.traj(
        "a1",
        "success",
        model="A",
        input_tokens=100,
        output_tokens=20,
        reasoning_tokens=5,
        cached_tokens=50,
        cost_usd=0.1,
    )  # total = prompt + completion = 120
    b.traj("a2", "failure", model="A", input_tokens=200, output_tokens=40, total_tokens=240, cost_usd=0.3)
    b.traj("b1", "success", model="B", input_tokens=450, output_tokens=50, total_tokens=500)
    b.traj("b2", "success", model="B", input_tokens=450, output_tokens=50, total_tokens=500)
    b.traj("c1", "success", model="C", total_tokens=700)
    b.traj("c2", "failure", model="C", total_tokens=700)
    b.traj("d1", "success", model="D")  # no token counts at all
    return b.build()  # fmt: skip


def test_tokens_accuracy_and_pareto(builder):
    res = token_efficiency(_lab(builder), by="model")
    assert res.missing == []
    rows = {r["model"]: r for r in res.table.to_pylist()}
    a, b, c, d = rows["A"], rows["B"], rows["C"], rows["D"]
    assert (a["n_traj"], a["n_with_tokens"], a["n_success"], a["n_failure"]) == (2, 2, 1, 1)
    assert a["accuracy"] == 0.5
    assert a["prompt_tokens"] == 150 and a["completion_tokens"] == 30
    assert a["reasoning_tokens"] == 5 and a["cached_tokens"] == 50
    assert a["total_tokens"] == 180 and a["tokens_per_solved"] == 360
    assert a["cost_per_solved"] == pytest.approx(0.4)
    assert (b["accuracy"], b["total_tokens"], b["tokens_per_solved"]) == (1.0, 500, 500)
    assert (c["accuracy"], c["total_tokens"], c["tokens_per_solved"]) == (0.5, 700, 1400)
    assert d["n_with_tokens"] == 0 and d["total_tokens"] is None and d["accuracy"] == 1.0
    # A (cheapest) and B (most accurate) are on the frontier; C is dominated by A; D has no tokens
    assert {m: r["pareto"] for m, r in rows.items()} == {"A": True, "B": True, "C": False, "D": False}
    assert [r["model"] for r in res.table.to_pylist()] == ["A", "B", "C", "D"]  # by tokens


def test_runs_of_unknown_outcome_count_in_no_token_per_solve_figure(builder):
    """The corpus lab's case: runs with no outcome but many tokens (Codex, Claude Code sessions) had
    their tokens added to the successes' bill, and a group whose successes record no tokens took its
    token mean from the unknown runs and its accuracy from the others: a false Pareto point."""
    builder.traj("s1", "success", model="A", total_tokens=100)
    builder.traj("f1", "failure", model="A", total_tokens=300)
    builder.traj("u1", "unknown", model="A", total_tokens=1_000_000)
    # B: successes without token counts, tokens only on a run of unknown outcome
    builder.traj("s2", "success", model="B").traj("s3", "success", model="B")
    builder.traj("u2", "unknown", model="B", total_tokens=300)
    rows = {r["model"]: r for r in token_efficiency(builder.build(), by="model").table.to_pylist()}
    a, b = rows["A"], rows["B"]
    assert a["tokens_per_solved"] == 400  # (100 + 300) / 1, not (100 + 300 + 1M) / 1
    assert (a["n_scored"], a["n_scored_success"], a["scored_accuracy"], a["scored_tokens"]) == (
        2,
        1,
        0.5,
        200,
    )
    assert a["total_tokens"] == pytest.approx(1_000_400 / 3)  # the plain mean keeps every run with counts
    assert b["accuracy"] == 1.0 and b["total_tokens"] == 300  # each over its own runs ...
    assert (b["n_scored"], b["scored_accuracy"], b["tokens_per_solved"]) == (0, None, None)
    assert b["pareto"] is False  # ... so they make no point together
    assert a["pareto"] is True


def test_default_grouping_is_model_harness_effort(builder):
    builder.traj("x", "success", model="M", harness="h", reasoning_effort="high", total_tokens=10)
    builder.traj("y", "failure", model="M", harness="h", reasoning_effort="low", total_tokens=5)
    res = token_efficiency(builder.build())
    assert res.columns[:3] == ["model", "harness", "reasoning_effort"]
    assert {(r["reasoning_effort"], r["accuracy"]) for r in res.table.to_pylist()} == {
        ("high", 1.0),
        ("low", 0.0),
    }
    assert res.params["by"] == ["model", "harness", "reasoning_effort"]


def test_missing_tokens_and_outcomes_are_named(builder):
    builder.traj("x", "success", model="M").traj("y", "failure", model="M")
    res = token_efficiency(builder.build(), by="model")
    assert res.missing == ["no token counts"]
    (row,) = res.table.to_pylist()
    assert row["accuracy"] == 0.5 and row["total_tokens"] is None and row["tokens_per_solved"] is None
    assert row["pareto"] is False


def test_missing_outcomes(tmp_path):
    from analysis_labs import LabBuilder

    b = LabBuilder(tmp_path / "lab")
    b.traj("x", model="M", total_tokens=10).traj("y", model="M", total_tokens=30)
    res = token_efficiency(b.build(), by="model")
    assert res.missing == ["no outcomes"]
    (row,) = res.table.to_pylist()
    assert row["total_tokens"] == 20 and row["accuracy"] is None and row["tokens_per_solved"] is None


def test_empty_lab(tmp_path):
    from trajlab.store import Lab

    res = token_efficiency(Lab.open(tmp_path / "e", create=True))
    assert res.missing == ["no trajectories"] and res.num_rows == 0


def test_rows_with_the_same_tokens_come_in_a_fixed_order(builder):
    # eight groups with the same mean tokens: more accurate first, then by name, on every run (the order
    # used to follow DuckDB's hash aggregate)
    accuracy = {"g1": 3, "g2": 7, "g3": 0, "g4": 5, "g5": 2, "g6": 6, "g7": 1, "g8": 4}  # successes of 7
    for g, wins in accuracy.items():
        for k in range(7):
            builder.traj(f"{g}_{k}", "success" if k < wins else "failure", model=g, total_tokens=100)
    builder.traj("z_0", "success", model="z", total_tokens=100).traj("z_1", "failure", model="z")
    builder.traj("y_0", "success", model="y", total_tokens=90)
    lab = builder.build()
    want = ["y", "g2", "g6", "g4", "g8", "z", "g1", "g5", "g7", "g3"]
    for _ in range(5):
        assert token_efficiency(lab, by="model").table.column("model").to_pylist() == want
