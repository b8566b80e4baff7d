from __future__ import annotations

import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from analysis_labs import LabBuilder, simulated_lab
from scipy import stats

from trajlab.analysis import adjust_pvalues, gaps, read_metadata, run_sql
from trajlab.errors import ConfigError


def _small_lab(b: LabBuilder):
    # successes: S1 ffprobe x2 + python; S2 ffprobe + whisper
    b.traj("S1", "success", model="m1").traj("S2", "success", model="m1")
    b.call("S1", "ffprobe"), b.call("S1", "python"), b.call("S1", "ffprobe")
    b.step("S2"), b.call("S2", "ffprobe"), b.call("S2", "whisper")
    # failures: F1 python x3; F2 python + ffprobe; F3 no tool call at all
    b.traj("F1", "failure", model="m1").traj("F2", "failure", model="m2").traj("F3", "failure", model="m2")
    for _ in range(3):
        b.call("F1", "python")
    b.call("F2", "python"), b.call("F2", "ffprobe")
    b.step("F3")
    # unknown outcome: ignored however many calls it makes
    b.traj("U1", "unknown", model="m1")
    for _ in range(5):
        b.call("U1", "whisper")
    return b.build()


def _rows(result, key="tool"):
    table = getattr(result, "table", result)
    return {r[key]: r for r in table.to_pylist()}


def test_exact_gaps_and_usage_rates(builder):
    lab = _small_lab(builder)
    res = gaps(lab, min_support=0, min_trajectories=0, n_boot=200, progress=False)
    rows = _rows(res)
    assert set(rows) == {"ffprobe", "python", "whisper"}
    assert res.missing == []
    assert res.notes == ["1 trajectories with unknown outcome are left out"]
    ff, py, wh = rows["ffprobe"], rows["python"], rows["whisper"]
    # 5 calls in successes, 5 in failures
    assert (ff["calls_success"], ff["calls_failure"], ff["n_calls"]) == (3, 1, 4)
    assert ff["share_success"] == pytest.approx(0.6) and ff["share_failure"] == pytest.approx(0.2)
    assert ff["gap"] == pytest.approx(0.4)
    assert py["gap"] == pytest.approx(0.2 - 0.8)
    assert wh["gap"] == pytest.approx(0.2)
    # usage over 2 successful and 3 failed trajectories (F3 made no call and still counts)
    assert (ff["n_traj_success"], ff["n_traj_failure"]) == (2, 3)
    assert ff["usage_gap"] == pytest.approx(1 - 1 / 3)
    assert py["usage_gap"] == pytest.approx(0.5 - 2 / 3)
    assert wh["usage_gap"] == pytest.approx(0.5)
    assert [r["tool"] for r in res.table.to_pylist()] == ["ffprobe", "whisper", "python"]
    assert ff["favors"] == "success" and py["favors"] == "failure"
    # the interval brackets the point estimate
    for r in rows.values():
        assert r["gap_ci_low"] <= r["gap"] <= r["gap_ci_high"]
        assert r["usage_gap_ci_low"] <= r["usage_gap"] <= r["usage_gap_ci_high"]
    # Fisher's exact test on trajectories using / not using the tool
    assert ff["p_value"] == pytest.approx(stats.fisher_exact([[2, 0], [1, 2]]).pvalue)


def test_sql_file_gives_the_same_point_estimates(builder):
    lab = _small_lab(builder)
    api = _rows(gaps(lab, min_support=0, min_trajectories=0, n_boot=0, progress=False))
    sql = _rows(run_sql(lab, "gaps", params={"min_support": 0, "min_trajectories": 0}))
    assert set(api) == set(sql)
    for tool, r in sql.items():
        for col in (
            "n_calls",
            "calls_success",
            "calls_failure",
            "n_traj_success",
            "n_traj_failure",
            "traj_using_success",
            "traj_using_failure",
        ):
            assert r[col] == api[tool][col], (tool, col)
        for col in ("share_success", "share_failure", "gap", "usage_success", "usage_failure", "usage_gap"):
            assert r[col] == pytest.approx(api[tool][col]), (tool, col)
    # SQL ordering matches the API's: gap descending
    assert [r["tool"] for r in run_sql(lab, "gaps").to_pylist()] == ["ffprobe", "whisper", "python"]


def test_grouped_gaps_and_groups_missing_an_outcome(builder):
    lab = _small_lab(builder)
    res = gaps(lab, by="model", min_support=0, min_trajectories=0, n_boot=100, progress=False)
    rows = res.table.to_pylist()
    assert [(r["model"], r["tool"]) for r in rows] == [
        ("m1", "ffprobe"),
        ("m1", "whisper"),
        ("m1", "python"),
        ("m2", "ffprobe"),
        ("m2", "python"),
    ]
    m1 = {r["tool"]: r for r in rows if r["model"] == "m1"}
    # m1: successes S1, S2 (5 calls); failure F1 (3 python calls)
    assert m1["ffprobe"]["gap"] == pytest.approx(0.6)
    assert m1["python"]["gap"] == pytest.approx(0.2 - 1.0)
    m2 = [r for r in rows if r["model"] == "m2"]
    assert all(r["note"] == "no successful trajectories in this group" for r in m2)
    assert all(r["gap"] is None or math.isnan(r["gap"]) for r in m2)
    assert not any(r["supported"] or r["significant"] for r in m2)
    assert res.missing == []
    assert any("groups lacking one outcome" in n for n in res.notes)
    # the SQL file agrees on groups too
    sql = {(r["model"], r["tool"]): r for r in run_sql(lab, "gaps", by=["model"]).to_pylist()}
    assert sql[("m1", "ffprobe")]["gap"] == pytest.approx(0.6)
    assert sql[("m2", "python")]["gap"] is None


def test_min_support_keeps_rows_flagged(builder):
    lab = _small_lab(builder)
    res = gaps(lab, n_boot=50, progress=False)  # defaults: 10 calls, 5 trajectories
    rows = _rows(res)
    assert len(rows) == 3  # nothing silently dropped
    assert rows["ffprobe"]["supported"] is False
    assert rows["ffprobe"]["note"] == "4 calls < min_support 10"
    assert rows["python"]["note"] == "5 calls < min_support 10"
    assert all(r["p_adjusted"] is None and r["significant"] is False for r in rows.values())
    res2 = gaps(lab, min_support=2, min_trajectories=3, n_boot=50, progress=False)
    rows2 = _rows(res2)
    assert rows2["ffprobe"]["supported"] is True  # 4 calls, 3 trajectories
    assert rows2["whisper"]["note"] == "1 calls < min_support 2"
    assert rows2["ffprobe"]["p_adjusted"] is not None
    rows3 = _rows(gaps(lab, min_support=1, min_trajectories=2, n_boot=0, progress=False))
    assert rows3["whisper"]["note"] == "used in 1 trajectories < min_trajectories 2"
    assert rows3["whisper"]["supported"] is False and rows3["python"]["supported"] is True


@pytest.mark.slow
def test_bootstrap_intervals_cover_the_true_gap_at_the_nominal_rate(tmp_path):
    # 200 independent replicates (benchmark = replicate) of a world with known population gaps
    p_s, p_f, n = 0.6, 0.3, 40
    lab = simulated_lab(tmp_path / "sim", 200, n, p_s, p_f, seed=7)
    res = gaps(lab, by="benchmark", min_support=0, min_trajectories=0, n_boot=1000, seed=3, progress=False)
    probe = [r for r in res.table.to_pylist() if r["tool"] == "probe"]
    assert len(probe) == 200
    true_usage_gap = p_s - p_f
    # expected probe calls p * (1 + 2), python calls 1 + 4: the share is a ratio of expectations
    true_gap = p_s * 3 / (p_s * 3 + 5) - p_f * 3 / (p_f * 3 + 5)
    cover_usage = np.mean([r["usage_gap_ci_low"] <= true_usage_gap <= r["usage_gap_ci_high"] for r in probe])
    cover_gap = np.mean([r["gap_ci_low"] <= true_gap <= r["gap_ci_high"] for r in probe])
    # nominal 95%; the binomial sd of a coverage estimate over 200 replicates is ~1.5 points
    assert 0.90 <= cover_usage <= 0.985, cover_usage
    assert 0.90 <= cover_gap <= 0.985, cover_gap
    # 90% intervals are narrower and cover less often
    res90 = gaps(
        lab,
        by="benchmark",
        min_support=0,
        min_trajectories=0,
        n_boot=1000,
        seed=3,
        alpha=0.10,
        progress=False,
    )
    probe90 = [r for r in res90.table.to_pylist() if r["tool"] == "probe"]
    cover90 = np.mean([r["usage_gap_ci_low"] <= true_usage_gap <= r["usage_gap_ci_high"] for r in probe90])
    assert 0.80 <= cover90 < cover_usage


def test_planted_gap_is_significant_and_null_tool_is_not(tmp_path):
    lab = simulated_lab(tmp_path / "sim", 1, 150, 0.7, 0.2, seed=1)
    res = gaps(lab, n_boot=300, progress=False)
    rows = _rows(res)
    probe, python = rows["probe"], rows["python"]
    assert probe["supported"] and probe["significant"] and probe["favors"] == "success"
    assert probe["p_value"] < 1e-10
    assert probe["gap_ci_low"] > 0 and probe["usage_gap_ci_low"] > 0.3
    # python is used in every trajectory: no usage difference, nothing to report
    assert python["usage_gap"] == 0 and python["p_value"] == pytest.approx(1.0)
    assert python["significant"] is False
    # the permutation test on the call-share gap finds both (python's share drops as probe's rises)
    perm = _rows(gaps(lab, n_boot=0, test="permutation", n_perm=400, progress=False))
    assert perm["probe"]["p_value"] == pytest.approx(1 / 401)
    assert perm["probe"]["significant"] and perm["python"]["favors"] == "failure"


def test_permutation_test_does_not_flag_a_null_world(tmp_path):
    lab = simulated_lab(tmp_path / "null", 1, 60, 0.4, 0.4, seed=11)
    res = gaps(lab, n_boot=0, test="permutation", n_perm=500, seed=2, progress=False)
    rows = _rows(res)
    assert 0.05 < rows["probe"]["p_value"] <= 1.0
    assert not any(r["significant"] for r in rows.values())


def test_seeded_and_reproducible(builder):
    lab = _small_lab(builder)
    a = gaps(lab, min_support=0, min_trajectories=0, n_boot=300, seed=5, progress=False)
    b = gaps(lab, min_support=0, min_trajectories=0, n_boot=300, seed=5, progress=False)
    c = gaps(lab, min_support=0, min_trajectories=0, n_boot=300, seed=6, progress=False)
    assert a.table.equals(b.table)
    assert not a.table.equals(c.table)


def test_multiple_comparison_corrections():
    p = np.array([0.01, 0.04, 0.03, 0.005, np.nan])
    holm = adjust_pvalues(p, "holm")
    assert holm[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(holm[4])
    bh = adjust_pvalues(p, "bh")
    assert bh[:4] == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert bh[:4] == pytest.approx(stats.false_discovery_control(p[:4], method="bh"))
    assert adjust_pvalues(p, "bonferroni")[:4] == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert adjust_pvalues(p, "none")[:4] == pytest.approx(p[:4])
    with pytest.raises(ConfigError):
        adjust_pvalues(p, "sidak")


def test_correction_family_is_the_supported_rows(tmp_path):
    lab = simulated_lab(tmp_path / "sim", 3, 60, 0.7, 0.3, seed=4)
    holm = gaps(lab, by="benchmark", n_boot=0, correction="holm", progress=False).table.to_pylist()
    bh = gaps(lab, by="benchmark", n_boot=0, correction="bh", progress=False).table.to_pylist()
    raw = np.array([r["p_value"] for r in holm])
    assert [r["p_adjusted"] for r in holm] == pytest.approx(list(adjust_pvalues(raw, "holm")))
    assert [r["p_adjusted"] for r in bh] == pytest.approx(list(adjust_pvalues(raw, "bh")))
    assert all(h["p_adjusted"] >= b["p_adjusted"] for h, b in zip(holm, bh))


def test_missing_outcomes_labs_and_calls(builder, tmp_path):
    from trajlab.store import Lab

    empty = gaps(Lab.open(tmp_path / "empty", create=True), progress=False)
    assert empty.missing == ["no trajectories"] and empty.num_rows == 0

    builder.traj("a").traj("b")
    builder.call("a", "ls"), builder.call("b", "python")
    lab = builder.build()
    res = gaps(lab, progress=False)
    assert res.missing == ["no outcomes"]
    assert res.num_rows == 0 and "gap" in res.columns
    assert "FROM trajectories" in res.sql


def test_one_outcome_only_keeps_shares_and_says_so(builder):
    builder.traj("a", "success").traj("b", "success")
    builder.call("a", "ls"), builder.call("b", "python"), builder.call("b", "python")
    res = gaps(builder.build(), n_boot=10, progress=False)
    assert res.missing == ["no failed trajectories"]
    rows = _rows(res)
    assert rows["python"]["share_success"] == pytest.approx(2 / 3)
    assert rows["python"]["gap"] is None or math.isnan(rows["python"]["gap"])
    assert rows["python"]["note"] == "no failed trajectories in this group"


def test_a_benchmark_of_failures_only_is_named_as_a_confounder(builder):
    """Pooled gaps over a mixed benchmark and one that has failed runs only (Who&When-like): its tools
    would read as failure markers; a note says so, and not when grouped by benchmark."""
    from trajlab.analysis import one_outcome_sources

    for i in range(6):  # a mixed benchmark: 3 successes, 3 failures, both use ls
        tid = f"m{i}"
        builder.traj(tid, "success" if i < 3 else "failure", benchmark="mixed", model="m1")
        builder.call(tid, "ls")
    for i in range(8):  # failed runs only, with their own browser tool
        builder.traj(f"w{i}", "failure", benchmark="failures-only", runner="ww", model="m1")
        builder.call(f"w{i}", "browser")
    for i in range(2):  # too few to count: succeeded runs only, under 5 of them
        builder.traj(f"s{i}", "success", benchmark="tiny", model="m1")
        builder.call(f"s{i}", "ls")
    lab = builder.build()
    res = gaps(lab, n_boot=10, progress=False)
    assert [n for n in res.notes if "markers" in n] == [
        "benchmark 'failures-only': all 8 of its trajectories failed (73% of the 11 failures), so the "
        "tools it uses show up as failure markers here; compare within each benchmark with --by benchmark",
        "runner 'ww': all 8 of its trajectories failed (73% of the 11 failures), so the tools it uses "
        "show up as failure markers here; compare within each runner with --by runner",
    ]
    assert _rows(res)["browser"]["gap"] < 0  # the confounded finding the note warns about
    # grouped by benchmark: each group is compared within itself; the runner is the same set of runs
    assert not [n for n in gaps(lab, by="benchmark", n_boot=10, progress=False).notes if "markers" in n]
    # within a group of `by`, and named with it
    assert one_outcome_sources(lab, ["model"])[0].startswith("model='m1', benchmark 'failures-only': all 8")
    # one benchmark with both outcomes: nothing to say
    assert one_outcome_sources(lab, ["benchmark", "runner"]) == []


def test_a_source_is_a_confounder_by_its_share_of_its_outcome(builder):
    """The corpus lab's case: 10 chat-log runs, all succeeded, are 8% of 119 runs with an outcome but
    43% of the 23 successes, and their editor tools read as success markers: named by the share of the
    successes, not of all runs."""
    from trajlab.analysis import one_outcome_sources

    for i in range(10):
        builder.traj(f"c{i}", "success", runner="chat")
        builder.call(f"c{i}", "edit")
    for i in range(109):
        builder.traj(f"o{i}", "success" if i < 13 else "failure", runner="other")
        builder.call(f"o{i}", "ls")
    notes = one_outcome_sources(builder.build())
    assert notes == [
        "runner 'chat': all 10 of its trajectories succeeded (43% of the 23 successes), so the tools it uses "
        "show up as success markers here; compare within each runner with --by runner"
    ]


def test_no_tool_calls(builder):
    builder.traj("a", "success").traj("b", "failure")
    builder.step("a"), builder.step("b")
    res = gaps(builder.build(), progress=False)
    assert res.missing == ["no tool calls"] and res.num_rows == 0


def test_bad_arguments(builder):
    lab = _small_lab(builder)
    with pytest.raises(ConfigError, match="cannot group by 'tool; drop'"):
        gaps(lab, by="tool; drop")
    with pytest.raises(ConfigError, match="correction"):
        gaps(lab, correction="fdr")
    with pytest.raises(ConfigError, match="alpha"):
        gaps(lab, alpha=1.5)
    with pytest.raises(ConfigError, match="test must be"):
        gaps(lab, test="chi2")
    with pytest.raises(ConfigError, match="key must be one of tool, tool_modality, program"):
        gaps(lab, key="argv")
    with pytest.raises(ConfigError, match="n_perm"):
        gaps(lab, test="permutation", n_perm=0)
    with pytest.raises(ConfigError, match="n_boot"):
        gaps(lab, n_boot=-1)
    # aliases
    assert gaps(lab, by="effort", n_boot=0, progress=False).params["by"] == ["reasoning_effort"]


def test_results_write_with_provenance(builder, tmp_path):
    lab = _small_lab(builder)
    res = gaps(lab, min_support=0, min_trajectories=0, n_boot=50, progress=False)
    pq_path = res.write(tmp_path / "out" / "gaps.parquet")
    back = pq.read_table(pq_path)
    assert back.num_rows == 3 and back.column("tool").to_pylist() == ["ffprobe", "whisper", "python"]
    meta = read_metadata(pq_path)
    assert meta is not None and meta["name"] == "gaps" and meta["params"]["n_boot"] == 50
    assert "gaps_per_trajectory" not in meta["sql"] and "FROM steps" in meta["sql"]
    rows = json.loads(res.write(tmp_path / "gaps.json").read_text())
    assert rows[0]["tool"] == "ffprobe" and rows[0]["gap"] == pytest.approx(0.4)
    csv = res.write(tmp_path / "gaps.csv").read_text().splitlines()
    assert csv[0].startswith("tool,n_calls,calls_success") and len(csv) == 4
    assert res.to_polars().shape == (3, len(res.columns))
    assert list(res.to_pandas()["tool"]) == ["ffprobe", "whisper", "python"]


def test_results_do_not_depend_on_row_order(tmp_path):
    from analysis_labs import LabBuilder

    def build(root, order):
        b = LabBuilder(root)
        for i in order:
            b.traj(f"t{i:02d}", "success" if i % 3 else "failure")
            for j in range(1 + i % 4):
                b.call(f"t{i:02d}", "probe" if (i + j) % 2 else "python")
        return b.build()

    rng = np.random.default_rng(0)
    a = build(tmp_path / "a", list(range(40)))
    b = build(tmp_path / "b", list(rng.permutation(40)))
    ra = gaps(a, min_support=0, min_trajectories=0, n_boot=200, seed=1, progress=False)
    rb = gaps(b, min_support=0, min_trajectories=0, n_boot=200, seed=1, progress=False)
    assert ra.table.equals(rb.table)


@pytest.mark.parametrize("dense_cells", [0, 10**9])  # the sparse and the dense code path
def test_bootstrap_matches_explicit_resampling(monkeypatch, dense_cells):
    import scipy.sparse as sp

    from trajlab.analysis import _stats
    from trajlab.analysis._stats import _weight_chunks, bootstrap_rates

    monkeypatch.setattr(_stats, "_DENSE_CELLS", dense_cells)
    rng = np.random.default_rng(1)
    counts = rng.poisson(1.0, (30, 4))
    counts[:, 2] = 0
    counts[3, 2] = 5
    for matrix in (counts, sp.csr_matrix(counts)):
        shares, usage = bootstrap_rates(matrix, 50, np.random.default_rng(9))
        weights = np.vstack(list(_weight_chunks(np.random.default_rng(9), 30, 50)))
        for b in range(50):
            sample = counts[np.repeat(np.arange(30), weights[b].astype(int))]
            assert weights[b].sum() == 30
            assert shares[b] == pytest.approx(sample.sum(0) / sample.sum())
            assert usage[b] == pytest.approx((sample > 0).mean(0))


def test_no_interval_from_a_single_trajectory_of_an_outcome(builder):
    """Terminal-Bench in the corpus: one resolved and one failed trial. Every resample is the same
    trajectory, so the interval would be [gap, gap]: shown as no interval instead."""
    builder.traj("s", "success").traj("f", "failure")
    for t in ("s", "f"):
        builder.call(t, "ls"), builder.call(t, "cat")
    (row, *_) = gaps(builder.build(), n_boot=50, progress=False).table.to_pylist()
    assert row["gap"] == 0.0
    assert all(row[c] is None for c in ("gap_ci_low", "gap_ci_high", "usage_gap_ci_low", "usage_gap_ci_high"))
