from __future__ import annotations

import json
from pathlib import Path

import pytest
from review_synth import CATEGORIES, Tax, signal_lab

from trajlab.errors import ConfigError
from trajlab.review import AnnotationStore, ReviewQueue, propagate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def labeled(tmp_path_factory):
    lab, truth = signal_lab(tmp_path_factory.mktemp("prop") / "lab", n_per_class=10, seed=1)
    train = {t: c for i, (t, c) in enumerate(sorted(truth.items())) if i % 2 == 0}
    judge_before = lab.read("judge_labels").num_rows
    report = propagate(lab, Tax(), labels=train, control=True, folds=3, seed=0)
    return lab, truth, train, report, judge_before


def test_known_signal_is_learned_and_shuffled_labels_are_not(labeled) -> None:
    lab, truth, train, r, judge_before = labeled
    assert r.n_train == 30 and r.cv_folds == 3 and len(r.class_counts) == 6
    chance = 1 / len(CATEGORIES)
    assert r.chance_accuracy <= 0.2
    assert r.cv_accuracy >= 0.8, r.format()  # the planted step text and tools carry the label
    assert r.macro_f1 >= 0.75
    assert set(r.per_class_f1) == set(CATEGORIES)
    assert r.control_accuracy is not None and r.control_accuracy <= chance + 0.2, r.format()
    # Predictions for the 30 held-out failures, stored apart from human, gold and judge labels.
    pred = lab.refresh().read("predicted_labels").to_pylist()
    assert len(pred) == r.n_predicted == 30
    assert {p["trajectory_id"] for p in pred}.isdisjoint(train)
    assert lab.rows("human_labels") == 0 and lab.rows("gold_labels") == 0
    assert lab.read("judge_labels").num_rows == judge_before
    correct = sum(truth[p["trajectory_id"]] == p["category"] for p in pred)
    assert correct / len(pred) >= 0.8
    for p in pred:
        probs = json.loads(p["probabilities"])
        assert set(probs) == set(CATEGORIES)
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-4)
        assert p["probability"] == pytest.approx(max(probs.values()), abs=1e-6)
        assert p["uncertainty"] == pytest.approx(1 - p["probability"])
        assert p["model_id"] == r.model_id


def test_uncertainty_feeds_the_queue(labeled, tmp_path: Path) -> None:
    lab = labeled[0]
    pred = {p["trajectory_id"]: p["uncertainty"] for p in lab.refresh().read("predicted_labels").to_pylist()}
    items = ReviewQueue(lab, Tax(), "zoe", store=AnnotationStore(tmp_path, "ds")).items()
    for it in items:
        if it.trajectory_id in pred:
            assert it.signals["uncertainty"] == pytest.approx(pred[it.trajectory_id])
        else:
            assert "uncertainty" not in it.signals


def test_too_few_labels_is_a_clear_error(labeled) -> None:
    lab, _, train, _, _ = labeled
    two = dict(list(train.items())[:2])
    with pytest.raises(ConfigError, match="at least 3 reviewed labels"):
        propagate(lab, Tax(), labels=two, write=False)
    with pytest.raises(ConfigError, match="not in the lab"):
        propagate(lab, Tax(), labels={"t_nope": "audio_perception", **train}, write=False)


def test_rare_classes_are_left_out_and_reported(labeled) -> None:
    lab, _, train, _, _ = labeled
    few = {t: c for t, c in train.items() if c in ("audio_perception", "tool_infrastructure")}
    few["t_video_000"] = "video_perception"
    r = propagate(lab, Tax(), labels=few, write=False, folds=3)
    assert r.dropped == {"video_perception": 1}
    assert set(r.class_counts) == {"audio_perception", "tool_infrastructure"}
    assert r.cv_accuracy >= 0.8
    assert not r.written
