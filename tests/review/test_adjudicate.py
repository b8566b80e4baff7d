from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from review_synth import Tax, make_lab, step_rows, traj_row

from trajlab.errors import ConfigError
from trajlab.review import AdjudicationRecord, AnnotationStore, adjudicate

ACTS = [("a", "a", "a", False)] * 4  # 6 steps per trajectory


def _lab_with_votes(tmp_path: Path, votes: dict[str, dict[str, tuple[str, int | None, list[int]]]]):
    lab = make_lab(tmp_path / "lab", [(traj_row(t, 6), step_rows(t, ACTS)) for t in votes])
    store = AnnotationStore(tmp_path / "ann", "ds")
    for tid, by in votes.items():
        for who, (cat, step, ev) in by.items():
            store.append(
                {
                    "trajectory_id": tid,
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1.0.0",
                    "category": cat,
                    "decisive_step_index": step,
                    "evidence_steps": ev,
                    "annotator": who,
                }
            )
    store.load_into_lab(lab, Tax())
    return lab, store


A, V, T = "audio_perception", "video_perception", "tool_infrastructure"


def test_methods_steps_and_evidence(tmp_path: Path) -> None:
    lab, _store = _lab_with_votes(
        tmp_path,
        {
            "t_unan": {"x": (A, 3, [1, 3]), "y": (A, 3, [3]), "z": (A, 2, [3, 4])},
            "t_major": {"x": (V, 4, [4]), "y": (V, 2, [2]), "z": (T, 1, [1])},
            "t_tie": {"x": (V, 1, []), "y": (T, 1, [])},
            "t_one": {"x": (A, 1, [])},
            "t_unsure": {"x": ("unsure", 1, []), "y": ("unsure", None, [])},
        },
    )
    r = adjudicate(lab, Tax(), min_reviewers=2)
    gold = {g["trajectory_id"]: g for g in r.gold}
    assert set(gold) == {"t_unan", "t_major"}
    assert (gold["t_unan"]["method"], gold["t_unan"]["decisive_step_index"]) == ("unanimous", 3)
    assert gold["t_unan"]["evidence_steps"] == [3]  # cited by at least half of the winning votes
    assert gold["t_unan"]["annotators"] == ["x", "y", "z"]
    assert gold["t_major"]["method"] == "majority" and gold["t_major"]["category"] == V
    assert gold["t_major"]["decisive_step_index"] == 2  # tie between 4 and 2 -> earliest step
    assert gold["t_major"]["reason"] == "2 of 3 votes"
    assert [u.trajectory_id for u in r.unresolved] == ["t_tie"]
    assert sorted(r.pending) == ["t_one", "t_unsure"]
    stored = lab.refresh().read("gold_labels").to_pylist()
    assert sorted(g["trajectory_id"] for g in stored) == ["t_major", "t_unan"]
    # Unanimous policy sends the majority case to an adjudicator too.
    strict = adjudicate(lab, Tax(), policy="unanimous", min_reviewers=2, write=False)
    assert sorted(u.trajectory_id for u in strict.unresolved) == ["t_major", "t_tie"]
    assert not strict.written


def test_adjudicator_decision_wins_and_gold_is_replaced(tmp_path: Path) -> None:
    lab, store = _lab_with_votes(
        tmp_path, {"t_tie": {"x": (V, 1, []), "y": (T, 2, [])}, "t_ok": {"x": (A, 1, []), "y": (A, 1, [])}}
    )
    adjudicate(lab, Tax(), min_reviewers=2)
    assert lab.refresh().rows("gold_labels") == 1
    store.append_adjudication(
        {
            "trajectory_id": "t_tie",
            "taxonomy_id": "omni-failure",
            "taxonomy_version": "1.0.0",
            "category": T,
            "decisive_step_index": 2,
            "decided_by": "dana",
            "reason": "the tool was missing; the blurry frame came later",
        }
    )
    decisions, problems = store.adjudications()
    assert problems == [] and decisions[0].line == 1
    r = adjudicate(lab, Tax(), [d.record for d in decisions], min_reviewers=2)
    assert r.unresolved == []
    stored = {g["trajectory_id"]: g for g in lab.refresh().read("gold_labels").to_pylist()}
    assert len(stored) == 2  # rerun replaced, not duplicated
    g = stored["t_tie"]
    assert (g["method"], g["decided_by"], g["category"], g["decisive_step_index"]) == (
        "adjudicated",
        "dana",
        T,
        2,
    )
    assert "tool was missing" in g["reason"]


def test_bad_adjudication_input() -> None:
    with pytest.raises(ValueError, match="reason"):
        AdjudicationRecord(
            trajectory_id="t",
            taxonomy_id="omni-failure",
            taxonomy_version="1.0.0",
            category=A,
            decided_by="dana",
            reason="  ",
            created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        )
    with pytest.raises(ValueError, match="unsure"):
        AdjudicationRecord(
            trajectory_id="t",
            taxonomy_id="omni-failure",
            taxonomy_version="1.0.0",
            category="unsure",
            decided_by="dana",
            reason="x",
            created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        )


def test_unknown_policy(tmp_path: Path) -> None:
    lab, _ = _lab_with_votes(tmp_path, {"t": {"x": (A, 1, [])}})
    with pytest.raises(ConfigError, match="policy"):
        adjudicate(lab, Tax(), policy="loudest")
