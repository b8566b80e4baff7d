"""The README's main job: `trajlab demo` runs every stage on generated example runs, and a second run
on the same folder changes nothing it does not have to."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from trajlab.pipeline import run_demo
from trajlab.store import Lab, query

STAGES = [
    "generate example runs",
    "ingest",
    "overview (SQL)",
    "step DAGs",
    "judge (rules; LLM when configured)",
    "human review, agreement, propagation",
    "tool-usage analytics (DuckDB SQL)",
    "skill distillation",
    "paper figures and tables",
    "dashboard (every page rendered on the server)",
]


@pytest.mark.slow
@pytest.mark.browser
def test_demo_runs_every_stage_and_reruns_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("TRAJLAB_JUDGE_MODEL", "TRAJLAB_JUDGE_BASE_URL", "OPENAI_BASE_URL", "TRAJLAB_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no ./trajlab.yaml: the LLM judge stays off, nothing leaves the machine
    out = tmp_path / "demo"
    lines: list[str] = []
    res = run_demo(out, n_tasks=8, seed=7, workers=1, echo=lines.append, progress=False)
    assert [s.name for s in res.stages] == STAGES
    data = {s.name: s.data for s in res.stages}
    assert data["generate example runs"]["runs"] == 32
    assert data["ingest"]["trajectories"] == 32 and data["step DAGs"]["built"] == 32
    assert data["dashboard (every page rendered on the server)"]["failed"] == 0
    # the dashboard command the demo prints gives a new reviewer every failure to review
    assert data["dashboard (every page rendered on the server)"]["to_review"] == sum(
        1 for ln in (out / "examples" / "ground_truth.jsonl").open() if json.loads(ln).get("category")
    )
    assert any("--dataset examples --reviewers 2" in ln for ln in lines)
    assert data["skill distillation"]["valid"] is True

    lab = Lab.open(out / "lab")
    counts = query(
        lab,
        "SELECT (SELECT count(*) FROM trajectories) t, (SELECT count(*) FROM dag_metrics) m, "
        "(SELECT count(*) FROM judge_labels) j, (SELECT count(*) FROM gold_labels) g",
        as_="pandas",
    ).iloc[0]
    failures = sum(
        1 for ln in (out / "examples" / "ground_truth.jsonl").open() if json.loads(ln).get("category")
    )
    assert counts["t"] == counts["m"] == 32 and counts["j"] == counts["g"] == failures > 0
    for name in ("gaps", "capability", "tokens", "failures", "failures_judge", "funnel"):
        assert (out / "analysis" / f"{name}.csv").stat().st_size > 0
    # the failure distribution counts every failure (adjudicated labels), not only the judge's share
    with (out / "analysis" / "failures.csv").open() as f:
        assert sum(int(r["n"]) for r in csv.DictReader(f)) == failures
    index = json.loads((out / "figures" / "index.json").read_text())
    assert index and (out / "figures" / "tool_gaps.pdf").read_bytes().startswith(b"%PDF")
    # the figure's bootstrap uses the demo's seed, so its intervals are the printed ones
    assert json.loads((out / "figures" / "tool_gaps.json").read_text())["params"]["seed"] == 7
    cmp = json.loads((out / "distill" / "comparison.json").read_text())
    assert {"accuracy_a", "accuracy_b", "p_value"} <= set(cmp)

    # a second run: the same example runs, nothing re-ingested, no new skill versions
    lines.clear()
    again = run_demo(out, n_tasks=8, seed=7, workers=1, echo=lines.append, progress=False)
    text = "\n".join(lines)
    assert "reusing example runs" in text and "records seen 0 = ingested 0" in text
    skills = again.stages[STAGES.index("skill distillation")].data["skills"]
    assert skills and set(skills.values()) == {1}, skills
