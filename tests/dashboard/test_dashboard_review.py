"""The review actions of the labels panel: written through trajlab.review into annotations/, never the lab."""

from __future__ import annotations

import json

import pytest
from dash_labs import runs_lab

from trajlab.dashboard import LabSource, agreement_rows, live_agreement, submit_review, trajectory_labels
from trajlab.errors import ConfigError
from trajlab.review import QueueError


@pytest.fixture()
def source(tmp_path):
    return LabSource(runs_lab(tmp_path / "lab", 40), annotations=tmp_path / "annotations", dataset="study")


def lines(source, annotator):
    path = source.store.path_for(annotator)
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_accept_override_and_change_go_to_the_annotation_file(source):
    manifest = (source.lab.root / "lab.json").read_bytes()
    # t_0001: failure, LLM judge says video_perception (decisive 1, evidence [1]); 3 steps
    res = submit_review(source, "t_0001", "alice", accept=True)
    assert res.record.review_action == "accepted"
    assert "accepted as video_perception" in res.message and "study/alice.jsonl" in res.message
    (first,) = lines(source, "alice")
    assert first["trajectory_id"] == "t_0001"
    assert first["category"] == "video_perception"
    assert first["decisive_step_index"] == 1 and first["evidence_steps"] == [1]
    assert first["reviews_label_id"] == "jl_llm_t_0001" and first["supersedes"] is None

    # the same reviewer changes their mind: a new record superseding the first
    res = submit_review(
        source,
        "t_0001",
        "alice",
        category="tool_infrastructure",
        decisive_step_index=2,
        note="<b>not</b> video",
    )
    first_again, second = lines(source, "alice")
    assert first_again == first
    assert second["category"] == "tool_infrastructure" and second["decisive_step_index"] == 2
    assert second["review_action"] == "overridden" and second["supersedes"] == first["record_id"]
    assert second["note"] == "<b>not</b> video"
    assert "replaces your earlier label" in res.message
    current = source.store.records(annotator="alice", trajectory_id="t_0001", effective=True)
    assert [r.category for r in current] == ["tool_infrastructure"]
    labels = trajectory_labels(source, "t_0001")
    assert [(h["annotator"], h["category"], h["live"]) for h in labels.human] == [
        ("alice", "tool_infrastructure", True)
    ]

    # the runs index follows the files
    row = (
        source.snapshot()
        .cursor()
        .execute("SELECT category, label_source FROM runs WHERE trajectory_id = 't_0001'")
        .fetchone()
    )
    assert row == ("tool_infrastructure", "human")
    # the lab was never written
    assert (source.lab.root / "lab.json").read_bytes() == manifest


def test_queue_rules_and_bad_input(source):
    submit_review(source, "t_0005", "alice", category="audio_perception")
    with pytest.raises(QueueError, match=r"t_0005 already has 1 reviewer\(s\) \(alice\)"):
        submit_review(source, "t_0005", "bob", accept=True)
    # with two reviewers per item bob may add his
    rec = submit_review(source, "t_0005", "bob", accept=True, reviewers_per_item=2).record
    assert rec.review_action == "accepted" and rec.category == "tool_infrastructure"
    with pytest.raises(QueueError, match="category 'cooking' is not in taxonomy omni-failure"):
        submit_review(source, "t_0006", "alice", category="cooking")
    with pytest.raises(QueueError, match=r"step 9 does not exist in t_0006 \(4 steps\)"):
        submit_review(source, "t_0006", "alice", category="audio_perception", decisive_step_index=9)
    with pytest.raises(ConfigError, match="enter your name"):
        submit_review(source, "t_0006", "", accept=True)
    with pytest.raises(ConfigError, match="annotator name"):
        submit_review(source, "t_0006", "../../etc/passwd", accept=True)
    # a success nobody judged is outside the queue: a plain label, nothing to accept
    with pytest.raises(QueueError, match="no judge label to accept"):
        submit_review(source, "t_0002", "alice", accept=True)
    rec = submit_review(source, "t_0002", "alice", category="not_a_failure").record
    assert rec.review_action is None and rec.reviews_label_id is None
    assert [x["trajectory_id"] for x in lines(source, "alice")] == ["t_0005", "t_0002"]
    assert source.lab.refresh().rows("human_labels") == 4  # the fixture's lab labels, untouched


def test_blind_review(tmp_path):
    src = LabSource(runs_lab(tmp_path / "lab", 20), annotations=tmp_path / "ann", blind=True)
    with pytest.raises(QueueError, match="blind mode"):
        submit_review(src, "t_0001", "alice", accept=True, mode="blind")
    rec = submit_review(src, "t_0001", "alice", category="audio_perception", mode="blind").record
    assert rec.review_action == "blind" and rec.reviews_label_id == "jl_llm_t_0001"
    # the agreement page of a blind server compares humans only: a pair with the judge shows its label
    submit_review(src, "t_0006", "alice", category="video_perception", mode="blind")
    assert {r["kind"] for r in agreement_rows(src)} == {"human"}
    assert not any(
        p.rater_a.startswith("judge") or p.rater_b.startswith("judge") for p in live_agreement(src).pairs
    )
    seen = LabSource(src.lab, annotations=tmp_path / "ann")  # the same files without --blind
    assert "judge" in {r["kind"] for r in agreement_rows(seen)}


def test_live_agreement(source):
    # failures: 0 1 5 6 10 11 15 16 ...; t_0001 and t_0016 have LLM labels, t_0011 a rules label
    submit_review(source, "t_0001", "alice", accept=True)
    submit_review(source, "t_0011", "alice", accept=True)
    submit_review(source, "t_0016", "alice", category="audio_perception", decisive_step_index=1)
    rows = agreement_rows(source)
    alice = sorted((r["trajectory_id"], r["category"]) for r in rows if r["rater"] == "alice")
    assert alice == [
        ("t_0001", "video_perception"),
        ("t_0011", "tool_infrastructure"),
        ("t_0016", "audio_perception"),
    ]
    carol = [r for r in rows if r["rater"] == "carol"]  # lab human labels of dataset `other`
    assert len(carol) == 4
    rep = live_agreement(source, k=1)
    pair = next(p for p in rep.pairs if {p.rater_a, p.rater_b} == {"judge:llm", "alice"})
    # t_0016's LLM label is video_perception (16 % 3 == 1), alice said audio: 1 of 2 agree
    assert (pair.items_both, pair.n_items) == (2, 2)
    assert pair.observed == pytest.approx(0.5)
    assert pair.step_exact == 1.0
    rules = next(p for p in rep.pairs if {p.rater_a, p.rater_b} == {"judge:rules", "alice"})
    assert (rules.items_both, rules.observed) == (1, 1.0)


def _text(tree) -> str:
    """Every string in a Dash component tree (what the page shows), one per line."""
    out: list[str] = []
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        elif x is not None and hasattr(x, "children"):
            stack.append(x.children)
    return "\n".join(out)


def test_a_hand_edited_annotation_line_is_reported_with_file_and_line(tmp_path):
    """A line hand-edited into invalid JSON is skipped by the readers; the labels panel, the agreement
    page and the review queue must say so (file and line), not silently show the older label."""
    from trajlab.dashboard import create_app
    from trajlab.dashboard._labels import labels_body
    from trajlab.dashboard._panels import agreement_body, queue_body

    app = create_app(runs_lab(tmp_path / "lab", 20), annotations=tmp_path / "ann", dataset="study")
    ctx = app.trajlab
    src = ctx.source
    submit_review(src, "t_0001", "alice", category="audio_perception")
    submit_review(src, "t_0001", "alice", category="tool_infrastructure")  # supersedes line 1
    path = src.store.path_for("alice")
    first, second = path.read_text().splitlines()
    broken = second.replace('"category":', '"category"', 1)  # a missing colon: not JSON any more
    path.write_text(f"{first}\n{broken}\n")

    labels = trajectory_labels(src, "t_0001")
    assert [(p.path, p.line) for p in labels.problems] == [(str(path), 2)]
    panel = _text(labels_body(ctx, ctx.trajectories.get(ctx, "t_0001"), labels))
    assert f"{path}:2" in panel and "not valid JSON" in panel
    agreement_page = ctx.spec.by_path("/agreement")
    shown = _text(agreement_body(ctx, agreement_page.panels[0]))
    assert f"{path}:2" in shown and "not valid JSON" in shown
    queue_page = ctx.spec.by_path("/review")
    shown = _text(queue_body(ctx, queue_page, 0, queue_page.panels[0], "bob"))
    assert f"{path}:2" in shown

    # nothing is lost: a new save appends after the broken line, which stays as it was
    submit_review(src, "t_0001", "alice", category="unsure")
    kept = path.read_text().splitlines()
    assert kept[:2] == [first, broken] and len(kept) == 3
    # once the file is clean again, no warning
    path.write_text(f"{first}\n")
    clean = trajectory_labels(src, "t_0001")
    assert clean.problems == []
    assert "problem" not in _text(labels_body(ctx, ctx.trajectories.get(ctx, "t_0001"), clean))


@pytest.mark.parametrize(
    ("tid", "earlier"),
    [("t_0001", None), ("t_0001", "unsure"), ("t_0002", None)],
    ids=["first-review", "change", "outside-the-queue"],
)
def test_saves_racing_from_two_tabs_all_land(source, tid, earlier):
    """The same reviewer saving from several tabs at once: each save applies on top of the one before
    (as it does one after another), none is refused because of the timing, and the file is a clean
    chain of `supersedes` with one current label."""
    import threading

    if earlier:
        submit_review(source, tid, "alice", category=earlier)
    cats = ["video_perception", "audio_perception", "tool_infrastructure", "knowledge_retrieval"]
    barrier = threading.Barrier(len(cats))
    errors: list[str] = []

    def save(category: str) -> None:
        barrier.wait()
        try:
            submit_review(source, tid, "alice", category=category)
        except Exception as e:  # the test reports them all
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=save, args=(c,)) for c in cats]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    recs = lines(source, "alice")
    assert len(recs) == len(cats) + (1 if earlier else 0)
    assert [r["supersedes"] for r in recs] == [None] + [r["record_id"] for r in recs[:-1]]
    (current,) = source.store.records(annotator="alice", trajectory_id=tid, effective=True)
    assert current.record_id == recs[-1]["record_id"]
    assert source.store.validate() == []


def test_reviewer_name_with_surrounding_spaces_is_the_name_saving_uses(tmp_path):
    """Saving strips the reviewer name ("alice " saves to alice.jsonl), so the labels panel must not
    call the same name not allowed."""
    from trajlab.dashboard import create_app

    app = create_app(runs_lab(tmp_path / "lab", 10), annotations=tmp_path / "ann")
    client = app.server.test_client()

    def review_as(annotator: str) -> object:
        body = {
            "output": "..labels-body.children...review-as.children...review-accept.style..",
            "outputs": [
                {"id": "labels-body", "property": "children"},
                {"id": "review-as", "property": "children"},
                {"id": "review-accept", "property": "style"},
            ],
            "inputs": [
                {"id": "traj-id", "property": "data", "value": "t_0001"},
                {"id": "labels-version", "property": "data", "value": 0},
                {"id": "annotator", "property": "value", "value": annotator},
            ],
            "changedPropIds": ["annotator.value"],
        }
        r = client.post("/_dash-update-component", json=body)
        assert r.status_code == 200
        return json.loads(r.data)["response"]["review-as"]["children"]

    path = app.trajlab.source.store.path_for("alice")
    assert review_as("alice") == f"reviewing as alice → {path}"
    assert review_as(" alice ") == f"reviewing as alice → {path}"
    assert "is not allowed" in str(review_as("../alice"))
