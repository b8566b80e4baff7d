from __future__ import annotations

import json
import multiprocessing as mp
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from review_synth import Tax, judge_row, make_lab, step_rows, traj_row

from trajlab.review import AnnotationStore, QueueError, ReviewQueue
from trajlab.store import Lab

ACTS = [("whisper", "whisper a.wav", "hello", False), ("python", "python x.py", "42", False)]


def build(tmp_path: Path) -> Lab:
    trajs = [(traj_row(t, 4), step_rows(t, ACTS)) for t in ("t_a", "t_b", "t_c", "t_d")]
    trajs.append((traj_row("t_ok", 4, outcome="success"), step_rows("t_ok", ACTS)))
    judges = [
        judge_row("t_a", "audio_perception", confidence=0.9),
        judge_row("t_b", "audio_perception", confidence=0.3),
        judge_row("t_c", "video_perception", confidence=0.9),
        judge_row("t_c", "tool_infrastructure", judge="rules", confidence=None, step=2),
    ]
    return make_lab(tmp_path / "lab", trajs, judges)


def queue(lab: Lab, tmp_path: Path, annotator: str = "alice", **kw) -> ReviewQueue:
    return ReviewQueue(lab, Tax(), annotator, store=AnnotationStore(tmp_path / "ann", "ds"), **kw)


def test_items_in_priority_order_with_reasons(tmp_path: Path) -> None:
    lab = build(tmp_path)
    items = queue(lab, tmp_path).items()
    # low_confidence + disagreement + 0.5 * rare_category (nothing reviewed yet: 1/(1+0) = 1);
    # t_d is a failure nobody judged: low_confidence 1.0 and no category.
    order = [i.trajectory_id for i in items]
    assert order == ["t_c", "t_b", "t_d", "t_a"]
    assert [i.priority for i in items] == pytest.approx([1.6, 1.2, 1.0, 0.6])
    c = items[0]
    assert c.judge is not None and c.judge.judge == "llm" and c.judge.category == "video_perception"
    assert any("disagree" in r for r in c.reasons)
    assert "t_ok" not in order  # successes without a judge label are not failures to review


def test_rare_categories_and_classifier_uncertainty_change_the_order(tmp_path: Path) -> None:
    lab = build(tmp_path)
    store = AnnotationStore(tmp_path / "ann", "ds")
    for who, tid in (("bob", "t_x1"), ("carol", "t_x2")):
        store.append(
            {
                "trajectory_id": tid,
                "taxonomy_id": "omni-failure",
                "taxonomy_version": "1.0.0",
                "category": "audio_perception",
                "annotator": who,
            }
        )
    items = {i.trajectory_id: i for i in queue(lab, tmp_path).items()}
    assert items["t_b"].signals["rare_category"] == pytest.approx(1 / 3)
    assert items["t_b"].priority == pytest.approx(0.7 + 0.5 / 3)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    with lab.write("predict") as txn:
        txn.append(
            "predicted_labels",
            [
                {
                    "trajectory_id": "t_a",
                    "model_id": "pm_x",
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1.0.0",
                    "category": "audio_perception",
                    "probability": 0.25,
                    "probabilities": "{}",
                    "uncertainty": 0.75,
                    "created_at": now,
                }
            ],
        )
    items = queue(lab, tmp_path).items()
    a = next(i for i in items if i.trajectory_id == "t_a")
    assert a.priority == pytest.approx(0.1 + 0.5 / 3 + 0.75)
    assert [i.trajectory_id for i in items] == ["t_c", "t_a", "t_d", "t_b"]


def test_n_reviewers_per_item_is_enforced(tmp_path: Path) -> None:
    lab = build(tmp_path)
    alice = queue(lab, tmp_path, "alice", reviewers_per_item=2)
    bob = queue(lab, tmp_path, "bob", reviewers_per_item=2)
    carol = queue(lab, tmp_path, "carol", reviewers_per_item=2)
    alice.submit("t_c", "video_perception")
    assert "t_c" not in [i.trajectory_id for i in alice.items()]
    assert "t_c" in [i.trajectory_id for i in bob.items()]
    assert next(i for i in bob.items() if i.trajectory_id == "t_c").n_reviews == 1
    with pytest.raises(QueueError, match="already reviewed"):
        alice.submit("t_c", "audio_perception")
    bob.submit("t_c", "tool_infrastructure", decisive_step_index=2)
    assert "t_c" not in [i.trajectory_id for i in carol.items()]
    with pytest.raises(QueueError, match="already has 2 reviewer"):
        carol.submit("t_c", "video_perception")
    with pytest.raises(QueueError, match="not in taxonomy"):
        carol.submit("t_b", "made_up")
    with pytest.raises(QueueError, match="step 9 does not exist"):
        carol.submit("t_b", "audio_perception", decisive_step_index=9)
    with pytest.raises(QueueError, match="not in the review queue"):
        carol.submit("t_ok", "audio_perception")


def _race(args: tuple[str, str, str, float]) -> str:
    lab_path, ann, who, start = args
    store = AnnotationStore(ann, "ds")
    real = store.append

    def slow_append(rec):  # type: ignore[no-untyped-def]
        time.sleep(0.5)  # widen the window between the reviewer check and the append: only the lock closes it
        return real(rec)

    store.append = slow_append  # type: ignore[method-assign]
    q = ReviewQueue(Lab.open(lab_path), Tax(), who, reviewers_per_item=1, store=store)
    time.sleep(max(0.0, start - time.time()))  # all submit at the same moment, however long start-up took
    try:
        q.submit("t_a", "audio_perception")
        return "ok"
    except QueueError:
        return "refused"


def test_reviewer_limit_holds_when_annotators_submit_at_once(tmp_path: Path) -> None:
    lab = build(tmp_path)
    # spawn, not fork: forking the threaded pytest process is unsafe (and warned about on 3.12+)
    start = time.time() + 8
    with mp.get_context("spawn").Pool(4) as pool:
        results = pool.map(_race, [(str(lab.root), str(tmp_path / "ann"), f"r{i}", start) for i in range(4)])
    assert sorted(results) == ["ok", "refused", "refused", "refused"]
    assert len(AnnotationStore(tmp_path / "ann", "ds").records(trajectory_id="t_a")) == 1


def test_normal_mode_accept_and_override(tmp_path: Path) -> None:
    lab = build(tmp_path)
    q = queue(lab, tmp_path)
    acc = q.submit("t_a", accept=True, note="fine")
    assert (acc.category, acc.decisive_step_index, acc.evidence_steps) == ("audio_perception", 1, [1])
    assert (acc.review_action, acc.reviews_label_id) == ("accepted", "jl_llm_t_a")
    over = q.submit("t_b", "knowledge_retrieval", decisive_step_index=2)
    assert (over.review_action, over.reviews_label_id, over.decisive_step_index) == (
        "overridden",
        "jl_llm_t_b",
        2,
    )
    new = q.submit("t_d", "unsure")
    assert (new.review_action, new.reviews_label_id) == (None, None)
    with pytest.raises(QueueError, match="no judge label to accept"):
        queue(lab, tmp_path, "bob", reviewers_per_item=2).submit("t_d", accept=True)


def test_blind_mode_hides_the_judge_label(tmp_path: Path) -> None:
    lab = build(tmp_path)
    q = queue(lab, tmp_path, mode="blind")
    items = q.items()
    assert [i.trajectory_id for i in items] == ["t_c", "t_b", "t_d", "t_a"]  # same order as normal
    for it in items:
        assert it.judge is None and it.signals == {} and it.reasons == []
        exposed = json.dumps(it.to_dict(), default=str)
        for cat in ("audio_perception", "video_perception", "tool_infrastructure", "jl_llm"):
            assert cat not in exposed
    with pytest.raises(QueueError, match="blind mode"):
        q.submit("t_c", accept=True)
    r = q.submit("t_c", "video_perception", decisive_step_index=1)
    assert (r.review_action, r.reviews_label_id) == ("blind", "jl_llm_t_c")
    assert r.evidence_steps == []  # nothing copied from the hidden label
