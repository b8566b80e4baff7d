"""`skills compare`: paired accuracy with McNemar's test, failure categories and cost deltas."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from distill_labs import make_lab, traj

from trajlab.cli import cli
from trajlab.distill import compare, mcnemar
from trajlab.errors import ConfigError
from trajlab.store import Lab


def test_mcnemar_values() -> None:
    assert mcnemar(0, 0) == (1.0, "none (no discordant pairs)")
    p, m = mcnemar(1, 9)  # exact: 2 * P(X <= 1), X ~ Bin(10, 1/2) = 2 * 11/1024
    assert m == "exact binomial" and p == pytest.approx(22 / 1024)
    p, m = mcnemar(10, 20)  # chi-square with continuity correction: (|10-20|-1)^2/30 = 2.7
    assert m.startswith("chi-square") and p == pytest.approx(0.10035, abs=1e-4)


def _labs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = [], []
    for i in range(10):
        ok_a = i < 3
        ok_b = i < 8
        a.append(
            (
                traj(
                    f"a{i}",
                    "success" if ok_a else "failure",
                    task_id=f"t{i}",
                    total_tokens=1000,
                    duration_s=10.0,
                    n_steps=10,
                ),
                [],
            )
        )
        b.append(
            (
                traj(
                    f"b{i}",
                    "success" if ok_b else "failure",
                    task_id=f"t{i}",
                    total_tokens=1200,
                    duration_s=12.0,
                    n_steps=9,
                ),
                [],
            )
        )
    a.append((traj("a-extra", "failure", task_id="only-a"), []))
    make_lab(tmp_path / "A", a)
    make_lab(tmp_path / "B", b)
    now = datetime(2026, 10, 2, tzinfo=timezone.utc)
    with Lab.open(tmp_path / "A").write("labels") as txn:
        txn.append(
            "gold_labels",
            [
                {
                    "trajectory_id": f"a{i}",
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1",
                    "category": "video_perception" if i % 2 else "reasoning_calculation",
                    "method": "unanimous",
                    "created_at": now,
                }
                for i in range(3, 10)
            ],
        )
    return tmp_path / "A", tmp_path / "B"


def test_compare_paired(tmp_path: Path) -> None:
    la, lb = _labs(tmp_path)
    c = compare(la, lb)
    assert (c.pairs, c.tasks, c.unpaired_a, c.unpaired_b) == (10, 10, 1, 0)
    assert (c.accuracy_a, c.accuracy_b, c.delta) == (0.3, 0.8, pytest.approx(0.5))
    assert (c.both_right, c.only_a, c.only_b, c.both_wrong) == (3, 0, 5, 2)
    assert c.p_value == pytest.approx(2 / 32) and c.method == "exact binomial"
    cats = {x["category"]: (x["a"], x["b"]) for x in c.categories}
    assert cats == {"video_perception": (4, 0), "reasoning_calculation": (3, 0), "unlabeled": (0, 2)}
    cost = {x["metric"]: x for x in c.cost}
    assert cost["tokens"]["mean_delta"] == 200 and cost["seconds"]["median_delta"] == 2.0
    assert cost["steps"]["mean_delta"] == -1
    r = CliRunner().invoke(cli, ["skills", "compare", str(la), str(lb)])
    assert r.exit_code == 0 and "delta +0.500" in r.output and "p = 0.0625" in r.output


def test_compare_conditions_in_one_lab_and_no_pairs(tmp_path: Path) -> None:
    runs = [(traj(f"n{i}", "failure", task_id=f"t{i}", condition="no-skill"), []) for i in range(4)]
    runs += [(traj(f"s{i}", "success", task_id=f"t{i}", condition="skill"), []) for i in range(4)]
    make_lab(tmp_path / "L", runs)
    c = compare(tmp_path / "L", tmp_path / "L", "no-skill", "skill")
    assert (c.pairs, c.only_b, c.accuracy_b) == (4, 4, 1.0)
    with pytest.raises(ConfigError, match="no task appears in both"):
        compare(tmp_path / "L", tmp_path / "L", "no-skill", "other")
