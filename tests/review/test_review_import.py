from __future__ import annotations

import json
from pathlib import Path

import pyarrow.compute as pc
import pytest

from trajlab.review import AnnotationStore, agreement, import_example_truth, import_who_and_when
from trajlab.store import Lab


@pytest.mark.corpus
def test_who_and_when_annotations_become_step_records(corpus_dir: Path, tmp_path: Path) -> None:
    from trajlab.ingest import ingest

    ingest([corpus_dir / "who_and_when"], tmp_path / "lab", progress=False)
    lab = Lab.open(tmp_path / "lab")
    trajs = lab.read("trajectories", ["trajectory_id", "metadata", "n_steps"]).to_pylist()
    expected = {}
    for t in trajs:
        ann = json.loads(t["metadata"])["who_and_when"]
        step = ann.get("mistake_step")
        if isinstance(step, int) and 0 <= step < t["n_steps"]:
            expected[t["trajectory_id"]] = step
    assert len(expected) >= 80  # nearly every development-half run has a usable mistake step
    store = AnnotationStore(tmp_path / "ann", "ww")
    report = import_who_and_when(lab, store, "multi-agent")
    assert report.appended == len(expected) and len(report.skipped) == len(trajs) - len(expected)
    recs = store.records()
    assert {r.trajectory_id: r.decisive_step_index for r in recs} == expected
    assert {r.category for r in recs} == {"unsure"} and all(r.note.startswith("mistake_agent=") for r in recs)
    assert import_who_and_when(lab, store, "multi-agent").appended == 0  # idempotent
    store.load_into_lab(lab, "multi-agent")
    # The annotated mistake step, said by the annotated agent: agent agreement of a rater with itself.
    rows = [
        {
            "rater": "copy",
            "trajectory_id": r.trajectory_id,
            "category": None,
            "decisive_step_index": r.decisive_step_index,
        }
        for r in recs
    ]
    rep = agreement(lab.refresh(), k=0)
    assert rep.raters == {"who-and-when": "human"} and rep.n_unsure == len(expected)
    assert agreement(rows + [{**x, "rater": "copy2"} for x in rows]).pairs[0].step_exact == 1.0


@pytest.mark.slow
def test_example_ground_truth_maps_calls_to_steps(tmp_path: Path) -> None:
    from trajlab.examples import generate_examples, load_ground_truth
    from trajlab.ingest import ingest

    generate_examples(tmp_path / "ex", n_tasks=8, seed=3)
    ingest([tmp_path / "ex" / "runs"], tmp_path / "lab", progress=False)
    lab = Lab.open(tmp_path / "lab")
    truth = [r for r in load_ground_truth(tmp_path / "ex") if r["outcome"] == "failure"]
    store = AnnotationStore(tmp_path / "ann", "examples")
    report = import_example_truth(lab, store, load_ground_truth(tmp_path / "ex"), "omni-failure")
    assert report.appended == len(truth) > 0 and report.skipped == []
    by_tid = {r.trajectory_id: r for r in store.records()}
    assert sorted(r.category for r in by_tid.values()) == sorted(t["category"] for t in truth)
    checked = 0
    for t in truth:
        call = (t.get("decisive") or {}).get("call_id")
        if not call:
            continue
        steps = lab.read("steps", ["trajectory_id", "step_index"], pc.field("call_id") == call).to_pylist()
        (step,) = steps
        assert by_tid[step["trajectory_id"]].decisive_step_index == step["step_index"]
        checked += 1
    assert checked >= len(truth) // 2
    assert store.validate(lab, "omni-failure") == []
