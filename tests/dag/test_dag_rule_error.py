"""A rule that raises on one trajectory: `trajlab dag LAB` names that trajectory and the error, exits 1,
stores the other trajectories' DAGs, and the next build retries only the failed one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from dagfix import add_to_lab
from test_omni import audio_run

import trajlab.dag._pool as dag_pool
from trajlab.cli import cli
from trajlab.compiled import is_compiled
from trajlab.store import Lab


def _lab(tmp_path: Path) -> Lab:
    runs = []
    for tid in ("t_good1", "t_bad", "t_good2"):
        r = audio_run()
        r.trajectory["trajectory_id"] = tid
        for s in r.steps:
            s["trajectory_id"] = tid
        runs.append(r)
    lab = Lab.create(tmp_path / "lab")
    add_to_lab(lab, runs)
    return lab


def _stored(lab: Lab) -> dict[str, list[str]]:
    lab = lab.refresh()
    return {
        t: sorted(set(lab.read(t, ["trajectory_id"]).column("trajectory_id").to_pylist()))
        for t in dag_pool.DAG_TABLES
    }


def test_a_rule_error_names_the_trajectory_exits_1_and_is_retried_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab = _lab(tmp_path)
    real = dag_pool.build_dag
    built: list[str] = []

    def build_dag(trajectory: dict[str, Any], steps: list[dict[str, Any]]) -> Any:
        built.append(trajectory["trajectory_id"])
        if trajectory["trajectory_id"] == "t_bad":
            raise ValueError("rule exploded on step 3")
        return real(trajectory, steps)

    monkeypatch.setattr(dag_pool, "build_dag", build_dag)
    res = CliRunner().invoke(cli, ["dag", str(lab.root), "-q", "-j", "1"])
    assert res.exit_code == 1, res.output
    assert "FAILED t_bad: ValueError: rule exploded on step 3" in res.output, res.output
    assert res.output.startswith("built 2 DAGs from 12 steps"), res.output
    assert sorted(built) == ["t_bad", "t_good1", "t_good2"]
    good = ["t_good1", "t_good2"]
    assert _stored(lab) == {t: good for t in dag_pool.DAG_TABLES}

    # still broken: only t_bad is tried again, and the build fails again
    built.clear()
    res = CliRunner().invoke(cli, ["dag", str(lab.root), "-q", "-j", "1"])
    assert res.exit_code == 1 and "FAILED t_bad" in res.output, res.output
    assert built == ["t_bad"] and "2 up to date" in res.output, res.output

    # fixed: the next build rebuilds only t_bad and succeeds
    monkeypatch.setattr(dag_pool, "build_dag", real)
    res = CliRunner().invoke(cli, ["dag", str(lab.root), "-q"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("built 1 DAGs from 6 steps") and "2 up to date" in res.output, res.output
    assert "FAILED" not in res.output
    assert _stored(lab) == {t: ["t_bad", *good] for t in dag_pool.DAG_TABLES}


@pytest.mark.skipif(
    is_compiled("trajlab.dag._build"),
    reason="patches a method of the builder, which the compiled build binds in C; CI runs it as plain Python",
)
def test_a_rule_that_links_backwards_fails_the_build_not_the_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The acyclicity check: every edge must point from an earlier step to a later one. A rule bug
    that links a step to an earlier one raises (naming the edge) instead of storing a cyclic graph,
    and the lab build reports that trajectory as failed."""
    import trajlab.dag._build as build

    good = audio_run().dag()
    assert good.edges and all(e["src"] < e["dst"] for e in good.edges)
    real = build._Builder.edge

    def swapped(self, src, dst, typ, artifact, rule):  # type: ignore[no-untyped-def]
        if self.tid == "t_bad" and typ == "data":  # the rule bug: source and target swapped
            src, dst = dst, src
        return real(self, src, dst, typ, artifact, rule)

    monkeypatch.setattr(build._Builder, "edge", swapped)
    bad = audio_run()
    bad.trajectory["trajectory_id"] = "t_bad"
    with pytest.raises(AssertionError, match=r"edge \d+->\d+ \(data/[\w-]+\) points backwards"):
        bad.dag()
    assert audio_run().dag().edges == good.edges  # other trajectories are built as before

    lab = _lab(tmp_path)
    res = CliRunner().invoke(cli, ["dag", str(lab.root), "-q", "-j", "1"])
    assert res.exit_code == 1 and res.output.startswith("built 2 DAGs"), res.output
    assert "FAILED t_bad: AssertionError: edge " in res.output and "points backwards" in res.output
    assert _stored(lab) == {t: ["t_good1", "t_good2"] for t in dag_pool.DAG_TABLES}
