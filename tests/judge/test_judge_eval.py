"""`evaluate` and `evaluate_who_and_when`: metrics checked against hand computation and scikit-learn."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from judge_labs import make_lab
from sklearn.metrics import cohen_kappa_score, f1_score

from trajlab.errors import ConfigError, InputFileError
from trajlab.judge import (
    classification_metrics,
    evaluate,
    evaluate_who_and_when,
    format_eval,
    load_gold,
    rules_judge,
    step_metrics,
)

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)


def test_classification_metrics_match_sklearn() -> None:
    gold = ["a", "a", "b", "b", "c", "c"]
    pred = ["a", "b", "b", "b", "c", None]
    m = classification_metrics(gold, pred)
    assert m["n"] == 6
    assert m["accuracy"] == pytest.approx(4 / 6)
    filled = [p or "(none)" for p in pred]
    assert m["kappa"] == pytest.approx(cohen_kappa_score(gold, filled))
    assert m["macro_f1"] == pytest.approx(f1_score(gold, filled, labels=["a", "b", "c"], average="macro"))
    # by hand: a P=1 R=.5 F=.667; b P=2/3 R=1 F=.8; c P=1 R=.5 F=.667 -> macro .711
    assert m["macro_f1"] == pytest.approx((2 / 3 + 0.8 + 2 / 3) / 3)


def test_step_metrics_exact_and_within_k() -> None:
    m = step_metrics([3, 5, 10, None, 7], [3, 6, 13, 2, None], k=1)
    assert m["n"] == 4 and m["exact"] == 0.25 and m["within_1"] == 0.5
    m2 = step_metrics([3, 5, 10], [3, 6, 13], k=3)
    assert m2["within_3"] == 1.0


def _label(lab, tid, category, step, judge="llm", model="m1", status="labeled", at=T0):
    row = {
        "label_id": f"jl_{tid}_{judge}_{model}_{at.timestamp()}",
        "trajectory_id": tid,
        "judge": judge,
        "model": model,
        "prompt_hash": "ph_x",
        "taxonomy_id": "omni-failure",
        "taxonomy_version": "1.0.0",
        "status": status,
        "category": category,
        "decisive_step_index": step,
        "created_at": at,
    }
    with lab.write("test") as txn:
        txn.append("judge_labels", [row])


def test_evaluate_against_a_gold_file(tmp_path) -> None:
    lab = make_lab(tmp_path / "lab", "omni_runs")
    _label(lab, "t_audio_infra", "tool_infrastructure", 3)
    _label(lab, "t_video_skip", "video_perception", 2)
    _label(lab, "t_video_skip", "insufficient_exploration", 3, at=T0.replace(day=3))  # latest wins
    _label(lab, "t_misheard", None, None, status="error")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "trajectory_id": "t_audio_infra",
                    "category": "tool_infrastructure",
                    "decisive_step_index": 2,
                },
                {
                    "trajectory_id": "t_video_skip",
                    "category": "insufficient_exploration",
                    "decisive_step_index": 3,
                },
                {"trajectory_id": "t_misheard", "category": "audio_perception", "decisive_step_index": 1},
                {"trajectory_id": "t_success", "category": "unsure", "decisive_step_index": None},
            ]
        )
        + "\n"
    )
    res = evaluate(lab, gold, k=1)
    assert res["judge"] == "llm" and res["n_gold"] == 3  # `unsure` is excluded
    assert res["statuses"] == {"labeled": 2, "error": 1}
    assert res["coverage"] == pytest.approx(2 / 3)
    assert res["category"]["accuracy"] == pytest.approx(2 / 3)
    assert res["decisive_step"]["exact"] == pytest.approx(1 / 3) and res["decisive_step"][
        "within_1"
    ] == pytest.approx(2 / 3)
    assert res["on_labeled"]["category"]["accuracy"] == 1.0
    assert {"gold": "audio_perception", "pred": "(none)", "n": 1} in res["confusion"]
    text = format_eval(res)
    assert "coverage 66.7%" in text and "within +-1 66.7%" in text


def test_bad_gold_files_name_the_line(tmp_path) -> None:
    lab = make_lab(tmp_path / "lab", "omni_runs")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trajectory_id": "t_audio_infra", "category": "tool_infrastructure"}\n{oops\n')
    with pytest.raises(InputFileError, match=r"bad.jsonl:2: not valid JSON"):
        load_gold(bad)
    bad.write_text('{"trajectory_id": "t_audio_infra", "category": "x", "decisive_step_index": "3"}\n')
    with pytest.raises(InputFileError, match=r"bad.jsonl:1: decisive_step_index must be an integer"):
        load_gold(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_gold(tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match="no judge labels"):
        evaluate(lab, [{"trajectory_id": "t_audio_infra", "category": "x", "decisive_step_index": None}])


def test_who_and_when_agent_and_step_accuracy(tmp_path) -> None:
    lab = make_lab(tmp_path / "lab", "who_and_when_mini")
    rules_judge(lab, "multi-agent", progress=False)
    res = evaluate_who_and_when(lab, judge="rules")
    assert res["judge"] == "rules"
    alg = res["subsets"]["Algorithm-Generated"]
    # rules: the KeyError at #2 was executed from #1, written by Data_Expert = the annotated mistake.
    assert alg == {
        "n": 1,
        "labeled": 1,
        "agent_accuracy": 1.0,
        "step_accuracy": 1.0,
        "agent_accuracy_on_labeled": 1.0,
        "step_accuracy_on_labeled": 1.0,
    }
    # rules-2: the year of the final answer that no tool output shows was first said by WebSurfer at #2
    # (unsupported_claim -> wrong_information), the annotated mistake.
    hc = res["subsets"]["Hand-Crafted"]
    assert hc == {**alg, "n": 1, "labeled": 1}
    labels = {r["trajectory_id"]: r for r in lab.refresh().read("judge_labels").to_pylist()}
    assert labels["t_ww_info"]["category"] == "wrong_information"
    assert labels["t_ww_info"]["decisive_step_index"] == 2
    assert res["subsets"]["all"]["agent_accuracy"] == 1.0
    assert "Algorithm-Generated" in format_eval(res)


@pytest.mark.corpus
def test_rules_judge_on_the_real_who_and_when_set(corpus_dir, tmp_path) -> None:
    from trajlab.formats import get_adapter  # noqa: F401  (the adapter must be registered)
    from trajlab.ingest import ingest

    ingest([corpus_dir / "who_and_when"], tmp_path / "lab", progress=False, workers=1)
    rep = rules_judge(tmp_path / "lab", "multi-agent", selection="all", progress=False)
    assert rep.judged == 92
    res = evaluate_who_and_when(tmp_path / "lab", judge="rules")
    s = res["subsets"]["all"]
    assert s["n"] == 92
    assert 0 < s["labeled"] < 92  # the rules decide only execution failures
    assert s["agent_accuracy_on_labeled"] > s["agent_accuracy"]


def test_a_superseded_gold_record_is_replaced_not_counted_twice(tmp_path) -> None:
    """A human annotation file as --gold: the record a later one `supersedes` is history."""
    from trajlab.review import AnnotationStore

    lab = make_lab(tmp_path / "lab", "omni_runs")
    _label(lab, "t_audio_infra", "tool_infrastructure", 2)
    _label(lab, "t_video_skip", "insufficient_exploration", 3)
    store = AnnotationStore(tmp_path / "ann", "gold")
    base = dict(taxonomy_id="omni-failure", taxonomy_version="1.0.0", annotator="alice")
    first = store.append({**base, "trajectory_id": "t_audio_infra", "category": "audio_perception"})
    store.append(
        {**base, "trajectory_id": "t_audio_infra", "category": "tool_infrastructure", "supersedes": first}
    )
    store.append({**base, "trajectory_id": "t_video_skip", "category": "video_perception"})
    path = store.path_for("alice")
    assert [r["category"] for r in load_gold(path, lab)] == ["tool_infrastructure", "video_perception"]
    res = evaluate(lab, path)
    gold, pred = (
        ["tool_infrastructure", "video_perception"],
        ["tool_infrastructure", "insufficient_exploration"],
    )
    assert res["n_gold"] == 2 and res["statuses"] == {"labeled": 2}
    assert res["category"]["accuracy"] == pytest.approx(0.5)
    assert res["category"]["kappa"] == pytest.approx(cohen_kappa_score(gold, pred))
    assert res["category"]["macro_f1"] == pytest.approx(
        f1_score(gold, pred, labels=sorted(set(gold)), average="macro", zero_division=0)
    )


def test_gold_files_with_two_labels_for_a_run_or_an_unknown_run_name_the_line(tmp_path) -> None:
    lab = make_lab(tmp_path / "lab", "omni_runs")
    bad = tmp_path / "gold.jsonl"
    rec = {"trajectory_id": "t_audio_infra", "category": "tool_infrastructure", "decisive_step_index": 2}
    bad.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "category": "audio_perception"}) + "\n")
    with pytest.raises(
        InputFileError, match=r"gold.jsonl:2: conflicting gold labels for t_audio_infra: line 1"
    ):
        load_gold(bad, lab)
    bad.write_text(json.dumps(rec) + "\n" + json.dumps(rec) + "\n")  # a repeat counts once
    assert load_gold(bad, lab) == [rec]
    bad.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "trajectory_id": "t_audio_infar"}) + "\n")
    with pytest.raises(InputFileError, match=r"gold.jsonl:2: unknown trajectory id 't_audio_infar'"):
        load_gold(bad, lab)


def test_kappa_is_undefined_not_perfect_when_gold_and_judge_use_one_category() -> None:
    m = classification_metrics(["a", "a", "a"], ["a", "a", "a"])
    assert m["accuracy"] == 1.0 and m["kappa"] is None  # scikit-learn: nan (chance agreement is 1)
    assert classification_metrics(["a", "a"], ["a", None])["kappa"] == pytest.approx(
        cohen_kappa_score(["a", "a"], ["a", "(none)"])
    )


def test_labels_of_two_models_or_taxonomies_are_not_scored_as_one_judge(tmp_path) -> None:
    lab = make_lab(tmp_path / "lab", "omni_runs")
    _label(lab, "t_audio_infra", "tool_infrastructure", 3, model="m1")
    _label(lab, "t_video_skip", "video_perception", 2, model="m2", at=T0.replace(day=3))  # a rerun on one run
    gold = [
        {"trajectory_id": "t_audio_infra", "category": "tool_infrastructure", "decisive_step_index": 3},
        {"trajectory_id": "t_video_skip", "category": "video_perception", "decisive_step_index": 2},
    ]
    with pytest.raises(ConfigError, match=r"from 2 models \(m1: 1, m2: 1 runs\); choose one with --model"):
        evaluate(lab, gold)
    res = evaluate(lab, gold, model="m1")
    assert res["model"] == "m1" and res["coverage"] == 0.5
