"""The analyses on a lab written with schema v1 (steps parts without `tool_seq`) give the numbers they
give on the same lab written today, without upgrading its manifest (v1 stays v1), and stay equal once
ingest adds v2 parts to it (a mixed lab) or re-reads its runs with --force; so do the DAGs.

One difference is by design: a v1 part cannot tell a call of a program the shell did not find
(`whisper: command not found`, numbered `tool_seq = 0` since rows v7) from a use of the tool, so the
tool-use analyses count it there, as the lab written today would with every call numbered
(`count_missing_programs`); a re-read (--force) applies the rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cli_harness import example_lab, run
from v1_lab import count_missing_programs, rounded, v1_copy

from trajlab import analysis
from trajlab.review import review_stage
from trajlab.store import Lab, query

P0 = {"min_support": 0, "min_trajectories": 0}


def _rows(table: Any) -> list[str]:
    """Rows as sorted JSON (row order of a query without ORDER BY is not defined), floats to 9 digits
    (DuckDB sums doubles in a thread-dependent order: the last bits of an average can change)."""

    return sorted(json.dumps(rounded(row), sort_keys=True, default=str) for row in table.to_pylist())


def _results(lab: Lab) -> dict[str, list[str]]:
    out = {}
    for key in analysis.TOOL_KEYS:
        for by in ((), ("domain",)):
            for counts in ("steps", "tool_usage"):
                g = analysis.gaps(lab, by=by, key=key, counts=counts, n_boot=50, seed=1, progress=False, **P0)
                out[f"gaps key={key} by={by} counts={counts}"] = _rows(g.table)
                out[f"gaps.sql key={key} by={by} counts={counts}"] = _rows(
                    analysis.run_sql(lab, "gaps", by=by, key=key, params=P0, counts=counts)
                )
    out["gaps_per_trajectory"] = _rows(analysis.run_sql(lab, "gaps_per_trajectory", counts="steps"))
    for name, fn in (
        ("capability", analysis.capability_usage),
        ("tokens", analysis.token_efficiency),
        ("media", analysis.media_strategy),
        ("funnel", analysis.step_funnel),
        ("recovery", analysis.error_recovery),
    ):
        out[name] = _rows(fn(lab).table)
    for source in ("judge", "gold"):
        out[f"failures {source}"] = _rows(analysis.failure_distribution(lab, source=source).table)
    for name in ("tools", "probing", "step_capability"):
        out[name] = _rows(analysis.run_sql(lab, name))
    return out


@pytest.fixture(scope="module")
def labs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(examples folder, the lab as written today, its schema-v1 copy): ingest, DAGs, rules judge and
    the ground truth as reviewer (gold labels), then the copy."""
    root = tmp_path_factory.mktemp("v1")
    lab = example_lab(root, tasks=6)
    assert run("judge", "run", str(lab), "--rules", "--no-progress").code == 0
    review_stage(Lab.open(lab), root / "ex", root / "annotations")
    return root / "ex", lab, v1_copy(lab, root / "v1")


def test_analyses_on_a_v1_lab_agree_with_the_lab_written_today(labs):
    _, new_path, old_path = labs
    manifest = (old_path / "lab.json").read_bytes()
    new, old = Lab.open(new_path), Lab.open(old_path)
    assert old.manifest.schema_version == 1
    assert not any("tool_seq" in pq.read_schema(f).names for f in old.files("steps"))
    seq = "SELECT count(*) AS calls, count(tool_seq) AS numbered FROM steps WHERE kind = 'tool_call'"
    calls = query(new, seq).to_pylist()[0]["calls"]
    assert calls > 50 and query(new, seq).to_pylist() == [{"calls": calls, "numbered": calls}]
    assert query(old, seq).to_pylist() == [{"calls": calls, "numbered": 0}]

    want, got = _results(new), _results(old)
    assert [k for k, rows in want.items() if not rows] == []  # nothing agrees by being empty
    assert got.keys() == want.keys()
    # the example runs have calls of a missing whisper: only the tool-use analyses count them on v1
    missing = "SELECT count(*) AS n FROM steps WHERE kind = 'tool_call' AND tool_seq = 0"
    assert query(new, missing).to_pylist()[0]["n"] > 0
    differ = [k for k in want if got[k] != want[k]]
    assert differ and all(k.startswith("gaps") for k in differ), differ
    counted = _results(Lab.open(count_missing_programs(new_path, new_path.parent / "pre-v7")))
    assert [k for k in counted if got[k] != counted[k]] == []

    # the numbers themselves, counted here without the analyses: calls and runs using each tool
    truth = query(
        old,
        "SELECT coalesce(tool, tool_name, '(unknown)') AS tool, count(*) AS n_calls, "
        "count(DISTINCT trajectory_id) AS n_traj FROM tool_calls "
        "WHERE outcome IN ('success', 'failure') GROUP BY 1",
    ).to_pylist()
    g = analysis.run_sql(old, "gaps", params=P0, counts="steps").to_pylist()
    assert {r["tool"]: (r["n_calls"], r["traj_using_success"] + r["traj_using_failure"]) for r in g} == {
        r["tool"]: (r["n_calls"], r["n_traj"]) for r in truth
    }
    # some tool is called more than once by one run, so first uses and calls differ
    assert any(r["n_calls"] > r["n_traj"] for r in truth)
    assert (old_path / "lab.json").read_bytes() == manifest  # read, never upgraded by a write


def test_a_v1_lab_that_ingest_adds_to_or_rereads_keeps_the_same_numbers(labs, tmp_path):
    """New runs ingested into a v1 lab land in v2 parts next to the v1 ones (a mixed lab); --force
    re-reads the old runs and numbers their calls. The analyses agree with the lab written today at
    every step, and so do the DAGs rebuilt from both kinds of parts."""
    examples, new_path, old_path = labs
    # copies (the module's labs stay as they are): the lab written today, the same with its calls of
    # missing programs numbered as the v1 parts count them, and the v1 lab
    new, counted, old = tmp_path / "new", tmp_path / "counted", tmp_path / "old"
    shutil.copytree(new_path, new, symlinks=True)
    count_missing_programs(new_path, counted)
    shutil.copytree(old_path, old, symlinks=True)
    assert run("examples", str(tmp_path / "more"), "--tasks", "3", "--seed", "11").code == 0
    for lab in (new, counted, old):
        assert run("ingest", str(tmp_path / "more" / "runs"), "--out", str(lab), "-q", "-j", "1").code == 0
        assert run("dag", "build", str(lab), "--rebuild", "-q").code == 0  # every DAG, from v1 parts too
    mixed = Lab.open(old)
    assert mixed.manifest.schema_version == 2  # stamped by its first write
    parts = [("tool_seq" in pq.read_schema(f).names) for f in mixed.files("steps")]
    assert True in parts and False in parts
    added = query(mixed, "SELECT count(*) AS n FROM steps WHERE tool_seq IS NOT NULL").to_pylist()[0]["n"]
    assert 0 < added < mixed.rows("steps")
    want = _results(Lab.open(counted))
    got = _results(mixed)
    assert [k for k in want if got[k] != want[k]] == []
    for dag in ("dag_nodes", "dag_edges", "dag_metrics"):
        sql = f"SELECT * EXCLUDE (built_at) FROM {dag}" if dag == "dag_metrics" else f"SELECT * FROM {dag}"
        assert _rows(query(mixed, sql)) == _rows(query(Lab.open(new), sql)), dag
    assert mixed.rows("dag_metrics") == mixed.rows("trajectories")

    assert run("ingest", str(examples / "runs"), "--out", str(old), "-q", "-j", "1", "--force").code == 0
    reread = Lab.open(old)
    assert query(reread, "SELECT count(*) AS n FROM steps WHERE tool_seq IS NULL").to_pylist() == [{"n": 0}]
    assert _results(reread) == _results(Lab.open(new))
