"""DAGs of the generated example runs: the planted decisive step is among the top candidates."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from trajlab.dag import build_lab, load_dag
from trajlab.examples import generate_examples, load_ground_truth
from trajlab.ingest import ingest
from trajlab.store import Lab

pytestmark = pytest.mark.slow


def _target(g: dict, steps: list[dict], answer_step: int | None) -> set[int]:
    dec = g["decisive"]
    if "call_id" in dec:
        return {s["step_index"] for s in steps if s["call_id"] == dec["call_id"]}
    if dec.get("final_answer"):
        return {answer_step} if answer_step is not None else set()
    text = dec["assistant_text"].strip()
    return {s["step_index"] for s in steps if s["kind"] == "assistant" and (s["text"] or "").strip() == text}


def hit_rates(examples: Path, lab: Lab) -> tuple[Counter, Counter]:
    trajs = lab.read("trajectories", ["trajectory_id", "source_path"]).to_pylist()
    hits: Counter = Counter()
    total: Counter = Counter()
    for g in load_ground_truth(examples):
        if g["outcome"] != "failure" or not g["decisive"]:
            continue
        tid = next(t["trajectory_id"] for t in trajs if t["source_path"].endswith(g["source"]))
        d = load_dag(lab, tid)
        target = _target(g, lab.read_trajectory_steps(tid).to_pylist(), d.metrics["answer_step"])
        assert target, g["run_id"]
        order = [c["step_index"] for c in d.candidates]
        rank = next((k + 1 for k, s in enumerate(order) if s in target), None)
        for key in ("all", g["category"]):
            total[key] += 1
            for k in (1, 3):
                if rank is not None and rank <= k:
                    hits[(key, k)] += 1
    return hits, total


def test_planted_decisive_steps_rank_high(tmp_path: Path) -> None:
    ex = tmp_path / "examples"
    generate_examples(ex, n_tasks=20, seed=11)
    ingest([ex / "runs"], tmp_path / "lab", workers=1, progress=False)
    rep = build_lab(tmp_path / "lab", progress=False)
    assert rep.failed == [] and rep.built > 0
    hits, total = hit_rates(ex, Lab.open(tmp_path / "lab"))
    n = total["all"]
    assert n >= 20
    at1, at3 = hits[("all", 1)] / n, hits[("all", 3)] / n
    print(f"planted decisive step: hit@1 {at1:.2f}, hit@3 {at3:.2f} over {n} failed runs")
    assert at3 >= 0.9
    assert at1 >= 0.4
    for cat in total:
        if cat != "all":
            assert hits[(cat, 3)] / total[cat] >= 0.6, cat
