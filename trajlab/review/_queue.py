"""The review queue: judge labels (and unjudged failures) waiting for human review, most useful first.

Priority of an item is a weighted sum of documented signals (see `WEIGHTS`):

- `low_confidence`: 1 - the judge's confidence (0.5 when it gave none, 1.0 with no judge label);
- `disagreement`: 1 when the LLM judge and the rules judge chose different categories;
- `rare_category`: 1 / (1 + reviewed labels in the judge's category), so thin categories get examples;
- `uncertainty`: the propagation classifier's uncertainty (1 - max calibrated probability).

The library enforces N reviewers per item: an item leaves the queue once N distinct annotators labeled
it, and an annotator never sees an item twice. Blind mode hides the judge's label from the item.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from ..errors import ConfigError
from ._records import SPECIAL_CATEGORIES, AnnotationRecord, check_name
from ._store import AnnotationStore
from ._taxo import resolve_taxonomy

if TYPE_CHECKING:
    from ..store import Lab

WEIGHTS: dict[str, float] = {
    "low_confidence": 1.0,
    "disagreement": 1.0,
    "rare_category": 0.5,
    "uncertainty": 1.0,
}
MODES = ("normal", "blind")


class QueueError(ConfigError):
    """A review cannot be submitted (already reviewed by this annotator, enough reviewers, ...)."""


@dataclass(frozen=True)
class JudgeView:
    """The judge label shown with an item in normal mode."""

    label_id: str
    judge: str
    model: str | None
    category: str | None
    decisive_step_index: int | None
    evidence_steps: list[int]
    evidence_quotes: list[str]
    rationale: str | None
    confidence: float | None
    secondary_categories: list[str] = field(default_factory=list)


@dataclass
class ReviewItem:
    """One trajectory waiting for review. `judge` is None in blind mode (or when nothing judged it)."""

    trajectory_id: str
    priority: float
    signals: dict[str, float]
    reasons: list[str]
    task: str | None
    outcome: str
    benchmark: str | None
    domain: str | None
    n_steps: int
    final_answer: str | None
    n_reviews: int
    judge: JudgeView | None
    _label_id: str | None = field(default=None, repr=False)
    _judge_full: JudgeView | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("_label_id", None)
        d.pop("_judge_full", None)
        return d


def _pick_judges(rows: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(label under review, rules label) for one trajectory: the newest LLM label is reviewed when
    there is one, else the newest rules label."""
    llm = [r for r in rows if r["judge"] != "rules"]
    rules = [r for r in rows if r["judge"] == "rules"]

    def newest(rs: list[dict[str, Any]]) -> dict[str, Any] | None:
        return (
            max(rs, key=lambda r: r["created_at"] or datetime.min.replace(tzinfo=timezone.utc))
            if rs
            else None
        )

    main = newest(llm) or newest(rules)
    return main, newest(rules)


def _view(r: dict[str, Any]) -> JudgeView:
    return JudgeView(
        label_id=r["label_id"],
        judge=r["judge"],
        model=r.get("model"),
        category=r.get("category"),
        decisive_step_index=r.get("decisive_step_index"),
        evidence_steps=list(r.get("evidence_steps") or []),
        evidence_quotes=list(r.get("evidence_quotes") or []),
        rationale=r.get("rationale"),
        confidence=r.get("confidence"),
        secondary_categories=list(r.get("secondary_categories") or []),
    )


class ReviewQueue:
    """Items for one annotator, in priority order, with submission rules enforced."""

    def __init__(
        self,
        lab: Lab,
        taxonomy: Any = None,
        annotator: str = "",
        mode: str = "normal",
        reviewers_per_item: int = 1,
        store: AnnotationStore | None = None,
        include_unjudged: bool = True,
        weights: Mapping[str, float] | None = None,
    ):
        if mode not in MODES:
            raise ConfigError(f"unknown review mode {mode!r}; use one of {', '.join(MODES)}")
        if reviewers_per_item < 1:
            raise ConfigError("reviewers_per_item must be at least 1")
        try:
            self.annotator = check_name("annotator", annotator)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        self.lab = lab
        self.taxonomy = resolve_taxonomy(taxonomy)
        self.mode = mode
        self.reviewers_per_item = reviewers_per_item
        self.store = store if store is not None else AnnotationStore()
        self.include_unjudged = include_unjudged
        self.weights = {**WEIGHTS, **(weights or {})}

    @property
    def blind(self) -> bool:
        return self.mode == "blind"

    # -- building items ---------------------------------------------------------------------------

    def _reviews(self) -> dict[str, dict[str, AnnotationRecord]]:
        """trajectory -> annotator -> current label, for this taxonomy, from the annotation files."""
        out: dict[str, dict[str, AnnotationRecord]] = {}
        for r in self.store.records(effective=True):
            if r.taxonomy_id == self.taxonomy.id:
                out.setdefault(r.trajectory_id, {})[r.annotator] = r
        return out

    def _candidates(self) -> tuple[list[ReviewItem], dict[str, dict[str, AnnotationRecord]]]:
        tax = self.taxonomy
        wanted = (
            (pc.field("taxonomy_id") == tax.id)
            & (pc.field("taxonomy_version") == str(tax.version))
            & (pc.field("status") == "labeled")
        )
        jl = self.lab.read("judge_labels", filter=wanted)
        by_traj: dict[str, list[dict[str, Any]]] = {}
        for r in jl.to_pylist():
            by_traj.setdefault(r["trajectory_id"], []).append(r)
        cols = ["trajectory_id", "task", "outcome", "benchmark", "domain", "n_steps", "final_answer"]
        trajs = {r["trajectory_id"]: r for r in self.lab.read("trajectories", cols).to_pylist()}
        pl = self.lab.read("predicted_labels", ["trajectory_id", "taxonomy_id", "category", "uncertainty"])
        predicted = {r["trajectory_id"]: r for r in pl.to_pylist() if r["taxonomy_id"] == tax.id}
        reviews = self._reviews()
        reviewed_per_cat = Counter(
            r.category
            for labels in reviews.values()
            for r in labels.values()
            if r.category not in SPECIAL_CATEGORIES
        )
        ids = set(by_traj)
        if self.include_unjudged:
            ids |= {t for t, r in trajs.items() if r["outcome"] == "failure"}
        items = []
        for tid in ids:
            t = trajs.get(tid)
            if t is None:
                continue  # a judge label of a trajectory that is no longer in the lab
            main, rules = _pick_judges(by_traj.get(tid, []))
            pred = predicted.get(tid)
            signals: dict[str, float] = {}
            reasons: list[str] = []
            if main is None:
                signals["low_confidence"] = 1.0
                reasons.append("no judge label")
            else:
                conf = main.get("confidence")
                signals["low_confidence"] = 0.5 if conf is None or math.isnan(conf) else 1.0 - conf
                reasons.append("judge gave no confidence" if conf is None else f"judge confidence {conf:.2f}")
            if (
                main is not None
                and rules is not None
                and main is not rules
                and main["category"] != rules["category"]
            ):
                signals["disagreement"] = 1.0
                reasons.append(f"judge ({main['category']}) and rules judge ({rules['category']}) disagree")
            category = (main or {}).get("category") or (pred or {}).get("category")
            if category is not None:
                n = reviewed_per_cat.get(category, 0)
                signals["rare_category"] = 1.0 / (1.0 + n)
                reasons.append(f"{n} reviewed labels in {category}")
            if pred is not None and pred.get("uncertainty") is not None:
                signals["uncertainty"] = float(pred["uncertainty"])
                reasons.append(f"classifier uncertainty {pred['uncertainty']:.2f}")
            priority = sum(self.weights.get(k, 0.0) * v for k, v in signals.items())
            full = _view(main) if main is not None else None
            if self.blind:
                reasons = []  # they name the judge's category and confidence
            items.append(
                ReviewItem(
                    trajectory_id=tid,
                    priority=round(priority, 6),
                    signals={} if self.blind else signals,
                    reasons=reasons,
                    task=t.get("task"),
                    outcome=t.get("outcome") or "unknown",
                    benchmark=t.get("benchmark"),
                    domain=t.get("domain"),
                    n_steps=int(t.get("n_steps") or 0),
                    final_answer=t.get("final_answer"),
                    n_reviews=len(reviews.get(tid, {})),
                    judge=None if self.blind else full,
                    _label_id=main["label_id"] if main is not None else None,
                    _judge_full=full,
                )
            )
        items.sort(key=lambda it: (-it.priority, it.trajectory_id))
        return items, reviews

    def items(self) -> list[ReviewItem]:
        """Items this annotator may still review, highest priority first."""
        items, reviews = self._candidates()
        return [
            it
            for it in items
            if self.annotator not in reviews.get(it.trajectory_id, {})
            and len(reviews.get(it.trajectory_id, {})) < self.reviewers_per_item
        ]

    def next(self) -> ReviewItem | None:
        items = self.items()
        return items[0] if items else None

    def __len__(self) -> int:
        return len(self.items())

    # -- submitting -------------------------------------------------------------------------------

    def submit(
        self,
        item: ReviewItem | str,
        category: str | None = None,
        *,
        accept: bool = False,
        decisive_step_index: int | None = None,
        evidence_steps: Sequence[int] | None = None,
        note: str | None = None,
    ) -> AnnotationRecord:
        """Record this annotator's label for an item (appended and fsynced before returning).

        Normal mode: `accept=True` keeps the judge label (category, decisive step and evidence unless
        given); a category different from the judge's is an override. Blind mode: give a category.
        """
        tid = item if isinstance(item, str) else item.trajectory_id
        with self.store.lock():
            candidates, all_reviews = self._candidates()
            current = {it.trajectory_id: it for it in candidates}
            reviews = all_reviews.get(tid, {})
            if self.annotator in reviews:
                raise QueueError(f"{self.annotator} already reviewed {tid}")
            if len(reviews) >= self.reviewers_per_item:
                raise QueueError(
                    f"{tid} already has {len(reviews)} reviewer(s) ({', '.join(sorted(reviews))}); "
                    f"this queue asks for {self.reviewers_per_item}"
                )
            it = current.get(tid)
            if it is None:
                raise QueueError(f"{tid} is not in the review queue (no judge label and not a failure)")
            rec = self._record(it, category, accept, decisive_step_index, evidence_steps, note)
            self.store.append(rec)
        return rec

    def _record(
        self,
        it: ReviewItem,
        category: str | None,
        accept: bool,
        decisive: int | None,
        evidence: Sequence[int] | None,
        note: str | None,
    ) -> AnnotationRecord:
        judge = it._judge_full
        allowed = [*self.taxonomy.category_ids, *SPECIAL_CATEGORIES]
        if accept:
            if self.blind:
                raise QueueError("blind mode: there is no judge label to accept; choose a category")
            if judge is None or judge.category is None:
                raise QueueError(f"{it.trajectory_id} has no judge label to accept; choose a category")
            category = category or judge.category
        if category is None:
            raise QueueError("give a category (or accept the judge label)")
        if category not in allowed:
            raise QueueError(
                f"category {category!r} is not in taxonomy {self.taxonomy.id} v{self.taxonomy.version} "
                f"(allowed: {', '.join(allowed)})"
            )
        if judge is not None and not self.blind:
            if decisive is None and category == judge.category:
                decisive = judge.decisive_step_index
            if evidence is None and category == judge.category:
                evidence = judge.evidence_steps
        for s in ([decisive] if decisive is not None else []) + list(evidence or []):
            if not 0 <= s < max(it.n_steps, 1):
                raise QueueError(f"step {s} does not exist in {it.trajectory_id} ({it.n_steps} steps)")
        if self.blind:
            action = "blind" if it._label_id else None
        elif judge is None:
            action = None
        elif category == judge.category and decisive == judge.decisive_step_index:
            action = "accepted"
        else:
            action = "overridden"
        return AnnotationRecord(
            trajectory_id=it.trajectory_id,
            taxonomy_id=self.taxonomy.id,
            taxonomy_version=str(self.taxonomy.version),
            category=category,
            decisive_step_index=decisive,
            evidence_steps=list(evidence or []),
            note=note or None,
            annotator=self.annotator,
            created_at=datetime.now(timezone.utc),
            reviews_label_id=it._label_id if action is not None else None,
            review_action=action,  # type: ignore[arg-type]
        ).with_id()
