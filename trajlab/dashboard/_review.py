"""The labels of one trajectory and the review actions, all through `trajlab.review`.

A review is appended to `annotations/<dataset>/<annotator>.jsonl` by `ReviewQueue.submit` (which
enforces the N-reviewer rule and blind mode), or, when the reviewer changes a label they already gave,
by `AnnotationStore.append` with a record that `supersedes` the old one. Runs outside the queue
(successes nobody judged) get a plain record. The lab itself is never written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow.compute as pc

from ..errors import ConfigError
from ..review import (
    SPECIAL_CATEGORIES,
    AgreementReport,
    AnnotationRecord,
    Problem,
    QueueError,
    ReviewQueue,
    agreement,
)
from ._source import LabSource


@dataclass
class TrajectoryLabels:
    """Every label of one trajectory, newest first within each kind."""

    judge: list[dict[str, Any]] = field(default_factory=list)
    under_review: dict[str, Any] | None = None
    human: list[dict[str, Any]] = field(default_factory=list)
    gold: list[dict[str, Any]] = field(default_factory=list)
    predicted: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    """Problems of the dataset's annotation files (their lines are not used): shown, never hidden."""


def _newest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    epoch = datetime.min.replace(tzinfo=timezone.utc)
    return sorted(rows, key=lambda r: r.get("created_at") or epoch, reverse=True)


def judge_under_review(judge_rows: list[dict[str, Any]], taxonomy_id: str) -> dict[str, Any] | None:
    """The label a review reviews: the newest labeled LLM judge label, else the newest rules label
    (the same choice as `ReviewQueue`)."""
    labeled = [r for r in judge_rows if r["status"] == "labeled" and r["taxonomy_id"] == taxonomy_id]
    llm = _newest([r for r in labeled if r["judge"] != "rules"])
    rules = _newest([r for r in labeled if r["judge"] == "rules"])
    chosen = llm or rules
    return chosen[0] if chosen else None


def trajectory_labels(source: LabSource, tid: str) -> TrajectoryLabels:
    lab = source.lab
    flt = pc.field("trajectory_id") == tid
    tax = source.taxonomy.id
    judge = _newest(lab.read("judge_labels", filter=flt).to_pylist())
    out = TrajectoryLabels(judge=judge, under_review=judge_under_review(judge, tax))
    out.gold = _newest(
        [r for r in lab.read("gold_labels", filter=flt).to_pylist() if r["taxonomy_id"] == tax]
    )
    out.predicted = _newest(
        [r for r in lab.read("predicted_labels", filter=flt).to_pylist() if r["taxonomy_id"] == tax]
    )
    read = source.store.read()
    out.problems = read.problems
    humans = [
        {**loc.record.model_dump(), "dataset": source.store.dataset, "live": True}
        for loc in read.effective
        if loc.record.trajectory_id == tid and loc.record.taxonomy_id == tax
    ]
    humans += [
        {**r, "live": False}
        for r in lab.read("human_labels", filter=flt).to_pylist()
        if r["taxonomy_id"] == tax and r["dataset"] != source.store.dataset
    ]
    out.human = _newest(humans)
    return out


def annotation_problems(source: LabSource) -> list[Problem]:
    """Every problem of the dataset's annotation files (bad lines, conflicts, layout): the readers skip
    those lines, so the pages that show human labels must say so."""
    return source.store.read().problems


@dataclass
class ReviewResult:
    record: AnnotationRecord
    message: str


def _check_steps(tid: str, n_steps: int, steps: Sequence[int | None]) -> None:
    for s in steps:
        if s is not None and not 0 <= s < max(n_steps, 1):
            raise QueueError(f"step {s} does not exist in {tid} ({n_steps} steps)")


def submit_review(
    source: LabSource,
    tid: str,
    annotator: str,
    *,
    accept: bool = False,
    category: str | None = None,
    decisive_step_index: int | None = None,
    evidence_steps: Sequence[int] | None = None,
    note: str | None = None,
    mode: str = "normal",
    reviewers_per_item: int = 1,
) -> ReviewResult:
    """Record `annotator`'s label of `tid`; raises `ConfigError`/`QueueError` with a reason to show."""
    if not annotator:
        raise ConfigError("enter your name as reviewer first (top right)")
    queue = ReviewQueue(
        source.lab,
        source.taxonomy,
        annotator,
        mode=mode,
        reviewers_per_item=reviewers_per_item,
        store=source.store,
    )
    tax = source.taxonomy

    def mine() -> list[AnnotationRecord]:
        return [
            r
            for r in source.store.records(annotator=annotator, trajectory_id=tid, effective=True)
            if r.taxonomy_id == tax.id
        ]

    # Saves of this server (several tabs, several reviewers) one at a time, so each one is decided on
    # what the saves before it wrote: two tabs saving at once end as they would one after the other.
    with source.review_lock:
        if not mine():
            try:
                rec = queue.submit(
                    tid,
                    category,
                    accept=accept,
                    decisive_step_index=decisive_step_index,
                    evidence_steps=evidence_steps,
                    note=note,
                )
                source.invalidate_annotations()
                return ReviewResult(rec, _describe(rec, source))
            except QueueError as e:
                # outside the queue, or another process saved this reviewer's label just now: a change
                if "not in the review queue" not in str(e) and not mine():
                    raise
        # A change of the reviewer's own label, or a run outside the queue: a record of its own, decided
        # and appended under the dataset lock (another process may be saving too).
        with source.store.lock():
            rec = _own_record(
                source,
                tid,
                annotator,
                mine(),
                accept=accept,
                category=category,
                decisive_step_index=decisive_step_index,
                evidence_steps=evidence_steps,
                note=note,
                mode=mode,
            )
            source.store.append(rec)
    source.invalidate_annotations()
    return ReviewResult(rec, _describe(rec, source))


def _own_record(
    source: LabSource,
    tid: str,
    annotator: str,
    mine: list[AnnotationRecord],
    *,
    accept: bool,
    category: str | None,
    decisive_step_index: int | None,
    evidence_steps: Sequence[int] | None,
    note: str | None,
    mode: str,
) -> AnnotationRecord:
    """The record of a change of `annotator`'s own label (superseding `mine[-1]`) or of a run outside
    the queue."""
    tax = source.taxonomy
    labels = trajectory_labels(source, tid)
    judge = None if mode == "blind" else labels.under_review
    hidden = labels.under_review
    if accept:
        if mode == "blind":
            raise QueueError("blind mode: there is no judge label to accept; choose a category")
        if judge is None:
            raise QueueError(f"{tid} has no judge label to accept; choose a category")
        category = category or judge["category"]
    if category is None:
        raise QueueError("choose a category (or accept the judge label)")
    allowed = [*tax.category_ids, *SPECIAL_CATEGORIES]
    if category not in allowed:
        raise QueueError(f"category {category!r} is not in taxonomy {tax.id} (allowed: {', '.join(allowed)})")
    if judge is not None and category == judge["category"]:
        if decisive_step_index is None:
            decisive_step_index = judge["decisive_step_index"]
        if evidence_steps is None:
            evidence_steps = list(judge["evidence_steps"] or [])
    n_steps = source.lab.read(
        "trajectories", ["n_steps"], filter=pc.field("trajectory_id") == tid
    ).to_pylist()
    if not n_steps:
        raise QueueError(f"unknown trajectory {tid!r}")
    _check_steps(tid, int(n_steps[0]["n_steps"] or 0), [decisive_step_index, *(evidence_steps or [])])
    if mode == "blind":
        action = "blind" if hidden is not None else None
    elif judge is None:
        action = None
    elif category == judge["category"] and decisive_step_index == judge["decisive_step_index"]:
        action = "accepted"
    else:
        action = "overridden"
    return AnnotationRecord(
        trajectory_id=tid,
        taxonomy_id=tax.id,
        taxonomy_version=str(tax.version),
        category=category,
        decisive_step_index=decisive_step_index,
        evidence_steps=list(evidence_steps or []),
        note=note or None,
        annotator=annotator,
        created_at=datetime.now(timezone.utc),
        reviews_label_id=(hidden or {}).get("label_id") if action is not None else None,
        review_action=action,  # type: ignore[arg-type]
        supersedes=mine[-1].record_id if mine else None,
    ).with_id()


def _describe(rec: AnnotationRecord, source: LabSource) -> str:
    path = source.store.path_for(rec.annotator)
    what = rec.review_action or "labeled"
    step = f", decisive step {rec.decisive_step_index}" if rec.decisive_step_index is not None else ""
    change = " (replaces your earlier label)" if rec.supersedes else ""
    return f"saved: {what} as {rec.category}{step}{change} → {path} ({rec.record_id})"


def agreement_rows(source: LabSource) -> list[dict[str, Any]]:
    """Ratings for `agreement`: each judge's and the gold label from the lab, human labels from the
    annotation files of this dataset (live) and from the lab for other datasets; newest per rater.
    In blind mode there are no judge ratings: pairs with the judge would show what it said."""
    lab = source.lab
    tax = source.taxonomy.id
    newest: dict[tuple[str, str], tuple[datetime, dict[str, Any]]] = {}
    epoch = datetime.min.replace(tzinfo=timezone.utc)

    def put(rater: str, kind: str, r: dict[str, Any] | AnnotationRecord) -> None:
        get: Callable[[str], Any] = r.get if isinstance(r, dict) else lambda k: getattr(r, k)
        at = get("created_at") or epoch
        key = (rater, get("trajectory_id"))
        if key not in newest or at >= newest[key][0]:
            row = {
                "rater": rater,
                "kind": kind,
                "trajectory_id": get("trajectory_id"),
                "category": get("category"),
                "decisive_step_index": get("decisive_step_index"),
            }
            newest[key] = (at, row)

    jl = [
        r
        for r in lab.read(
            "judge_labels",
            [
                "trajectory_id",
                "judge",
                "model",
                "category",
                "decisive_step_index",
                "created_at",
                "status",
                "taxonomy_id",
            ],
        ).to_pylist()
        if r["status"] == "labeled" and r["taxonomy_id"] == tax and not source.blind
    ]
    models: dict[str, set[Any]] = {}
    for r in jl:
        models.setdefault(r["judge"], set()).add(r["model"])
    for r in jl:
        put(f"judge:{r['judge']}" + (f"/{r['model']}" if len(models[r["judge"]]) > 1 else ""), "judge", r)
    for r in lab.read("gold_labels").to_pylist():
        if r["taxonomy_id"] == tax:
            put("gold", "gold", r)
    for r in lab.read("human_labels").to_pylist():
        if r["taxonomy_id"] == tax and r["dataset"] != source.store.dataset:
            put(r["annotator"], "human", r)
    for rec in source.store.records(effective=True):
        if rec.taxonomy_id == tax:
            put(rec.annotator, "human", rec)
    return [row for _, row in newest.values()]


def live_agreement(source: LabSource, k: int = 1) -> AgreementReport:
    return agreement(agreement_rows(source), k=k, taxonomy_id=source.taxonomy.id)
