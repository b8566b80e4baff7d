from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from trajlab.analysis import failure_distribution
from trajlab.errors import ConfigError

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _judge(b, tid, category, judge="llm", status="labeled", minutes=0):
    b.label(
        "judge_labels",
        label_id=f"jl_{tid}_{judge}_{minutes}",
        trajectory_id=tid,
        judge=judge,
        taxonomy_id="omni-failure",
        taxonomy_version="1",
        status=status,
        category=category,
        created_at=T0 + timedelta(minutes=minutes),
    )


def _human(b, tid, annotator, category, minutes=0, line=1):
    b.label(
        "human_labels",
        record_id=f"hl_{tid}_{annotator}_{minutes}",
        trajectory_id=tid,
        annotator=annotator,
        taxonomy_id="omni-failure",
        taxonomy_version="1",
        category=category,
        created_at=T0 + timedelta(minutes=minutes),
        source_file="annotations/x.jsonl",
        source_line=line,
    )


def _lab(b):
    for i in range(4):
        b.traj(f"a{i}", "failure", model="A", benchmark="omni")
    b.traj("b0", "failure", model="B", benchmark="omni").traj("b1", "success", model="B", benchmark="omni")
    b.traj("b2", "failure", model="B", benchmark="omni")  # never labeled
    # judge: LLM labels win over rules labels; the latest LLM label wins
    _judge(b, "a0", "audio_perception")
    _judge(b, "a0", "tool_infrastructure", judge="rules", minutes=5)
    _judge(b, "a1", "audio_perception", minutes=0)
    _judge(b, "a1", "video_perception", minutes=9)
    _judge(b, "a2", "video_perception")
    _judge(b, "a3", None, status="unjudgeable")
    _judge(b, "b0", "reasoning_calculation", judge="rules")
    _judge(b, "b1", "not_a_failure")
    # humans: a0 two vs one -> audio; a1 tie -> unsure; annotator x relabels a2 later
    _human(b, "a0", "x", "audio_perception")
    _human(b, "a0", "y", "audio_perception")
    _human(b, "a0", "z", "video_perception")
    _human(b, "a1", "x", "audio_perception")
    _human(b, "a1", "y", "knowledge_retrieval")
    _human(b, "a2", "x", "audio_perception", minutes=0, line=1)
    _human(b, "a2", "x", "reasoning_calculation", minutes=3, line=7)
    b.label(
        "gold_labels",
        trajectory_id="a0",
        taxonomy_id="omni-failure",
        taxonomy_version="1",
        category="audio_perception",
        method="majority",
    )
    return b.build()


def _rows(res, *keys):
    return {tuple(r[k] for k in keys): r for r in res.table.to_pylist()}


def test_judge_distribution_prefers_llm_labels(builder):
    lab = _lab(builder)
    res = failure_distribution(lab, by="model")
    assert res.missing == []
    rows = _rows(res, "model", "category")
    # A: a0 audio (LLM beats the later rules label), a1 video (latest), a2 video; a3 unjudgeable
    assert rows[("A", "video_perception")]["n"] == 2
    assert rows[("A", "audio_perception")]["n"] == 1
    assert rows[("A", "reasoning_calculation")]["n"] == 0  # zero rows kept so groups line up
    assert rows[("A", "video_perception")]["share"] == pytest.approx(2 / 3)
    assert rows[("A", "video_perception")]["n_labeled"] == 3
    assert rows[("A", "video_perception")]["coverage"] == pytest.approx(3 / 4)
    # B: b0 rules label (no LLM label there), b1 not_a_failure, b2 unlabeled
    assert rows[("B", "reasoning_calculation")]["n"] == 1
    assert rows[("B", "reasoning_calculation")]["share"] == pytest.approx(0.5)
    assert rows[("B", "reasoning_calculation")]["failure_share"] == pytest.approx(1.0)
    assert rows[("B", "not_a_failure")]["failure_share"] is None
    assert rows[("B", "not_a_failure")]["coverage"] == pytest.approx(1 / 2)
    cats = {c for _, c in rows}
    assert cats == {"audio_perception", "video_perception", "reasoning_calculation", "not_a_failure"}
    assert [r["category"] for r in res.table.to_pylist()][:2] == ["video_perception", "audio_perception"]


def test_judge_kind_can_be_chosen(builder):
    lab = _lab(builder)
    rules = _rows(failure_distribution(lab, by=(), judge="rules"), "category")
    assert {c: r["n"] for (c,), r in rules.items()} == {"tool_infrastructure": 1, "reasoning_calculation": 1}


def test_human_majority_with_ties_as_unsure_and_latest_per_annotator(builder):
    lab = _lab(builder)
    res = failure_distribution(lab, source="human", by="model")
    rows = _rows(res, "model", "category")
    assert {c: r["n"] for (m, c), r in rows.items() if r["n"]} == {
        "audio_perception": 1,
        "unsure": 1,
        "reasoning_calculation": 1,
    }
    assert rows[("A", "unsure")]["failure_share"] is None
    assert rows[("A", "audio_perception")]["failure_share"] == pytest.approx(0.5)
    assert all(m == "A" for m, _ in rows)  # B has no human label: no rows for it


def test_gold_and_missing_sources(builder):
    lab = _lab(builder)
    gold = failure_distribution(lab, source="gold", by=())
    assert [(r["category"], r["n"], r["share"]) for r in gold.table.to_pylist()] == [
        ("audio_perception", 1, 1.0)
    ]
    pred = failure_distribution(lab, source="predicted")
    assert pred.missing == ["no predicted labels"] and pred.num_rows == 0
    with pytest.raises(ConfigError, match="source must be"):
        failure_distribution(lab, source="oracle")
    with pytest.raises(ConfigError, match="judge"):
        failure_distribution(lab, source="human", judge="llm")


def test_lab_without_labels(builder):
    builder.traj("x", "failure", model="A")
    res = failure_distribution(builder.build())
    assert res.missing == ["no judge labels"]
    assert res.num_rows == 0 and "failure_share" in res.columns


def test_labels_that_give_no_category_are_named_missing(builder):
    # every judge label is unjudgeable or an error: not an empty table without a word
    builder.traj("x", "failure", model="A").traj("y", "failure", model="A")
    _judge(builder, "x", None, status="unjudgeable")
    _judge(builder, "y", None, status="error")
    lab = builder.build()
    res = failure_distribution(lab)
    assert res.num_rows == 0
    assert res.missing == ["no judge label gives a category; `trajlab judge show LAB` lists their statuses"]
    _judge(builder, "x", "audio_perception", judge="rules", minutes=3)
    lab = builder.build()
    assert failure_distribution(lab).missing == [] and failure_distribution(lab).num_rows > 0
    res = failure_distribution(lab, judge="llm")
    assert res.missing == [
        "no judge label of the `llm` judge gives a category; `trajlab judge show LAB` lists their statuses"
    ]
