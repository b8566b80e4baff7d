"""`adjudicate`: turn reviewers' labels into gold labels.

Per trajectory, over the human labels of one taxonomy (`unsure` counts as an abstention):

1. an adjudicator's decision (an `AdjudicationRecord`, newest wins) -> `adjudicated`, with who and why;
2. fewer than `min_reviewers` votes -> pending (no gold label yet);
3. every vote the same category -> `unanimous`;
4. with policy `majority`, one category with more than half of the votes -> `majority`;
5. otherwise -> unresolved: listed with the votes, waiting for an adjudicator.

The gold decisive step is the most common step among the winning votes (ties: the earliest step);
gold evidence is the steps cited by at least half of the winning votes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..schema import UNSURE
from ._records import AdjudicationRecord
from ._taxo import resolve_taxonomy

if TYPE_CHECKING:
    from ..store import Lab

POLICIES = ("majority", "unanimous")


@dataclass
class Unresolved:
    trajectory_id: str
    votes: dict[str, str]  # annotator -> category
    reason: str


@dataclass
class AdjudicationReport:
    taxonomy_id: str
    gold: list[dict[str, Any]] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    written: bool = False

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(g["method"] for g in self.gold))

    def format(self) -> str:
        c = self.counts
        lines = [
            f"gold labels ({self.taxonomy_id}): {len(self.gold)} "
            f"(unanimous {c.get('unanimous', 0)}, majority {c.get('majority', 0)}, "
            f"adjudicated {c.get('adjudicated', 0)})" + ("" if self.written else " [not written]"),
            f"pending (too few reviewers): {len(self.pending)}",
            f"unresolved (need an adjudicator): {len(self.unresolved)}",
        ]
        for u in self.unresolved:
            votes = ", ".join(f"{a}={c}" for a, c in sorted(u.votes.items()))
            lines.append(f"  {u.trajectory_id}: {votes} ({u.reason})")
        if self.unresolved:
            lines.append(
                "decide one with: trajlab adjudicate LAB --decide TRAJECTORY CATEGORY --by NAME --reason TEXT"
            )
        return "\n".join(lines)


def _winner_steps(votes: list[dict[str, Any]]) -> tuple[int | None, list[int]]:
    steps = Counter(v["decisive_step_index"] for v in votes if v["decisive_step_index"] is not None)
    decisive = min(steps, key=lambda s: (-steps[s], s)) if steps else None
    cited = Counter(s for v in votes for s in dict.fromkeys(v["evidence_steps"] or []))
    need = (len(votes) + 1) // 2
    evidence = sorted(s for s, n in cited.items() if n >= need)
    return decisive, evidence


def adjudicate(
    lab: Lab,
    taxonomy: Any = None,
    decisions: Iterable[AdjudicationRecord] = (),
    policy: str = "majority",
    min_reviewers: int = 1,
    dataset: str | None = None,
    write: bool = True,
) -> AdjudicationReport:
    """Resolve the lab's human labels (one dataset, or all) into `gold_labels`.

    The gold rows of every resolved trajectory (this taxonomy) are replaced in one transaction.
    """
    if policy not in POLICIES:
        raise ConfigError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
    if min_reviewers < 1:
        raise ConfigError("min_reviewers must be at least 1")
    tax = resolve_taxonomy(taxonomy)
    rows = [
        r
        for r in lab.read("human_labels").to_pylist()
        if r["taxonomy_id"] == tax.id and (dataset is None or r["dataset"] == dataset)
    ]
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["created_at"]):
        newest[(r["trajectory_id"], r["annotator"])] = r  # one vote per annotator (newest across datasets)
    by_traj: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (tid, _), r in sorted(newest.items()):
        by_traj[tid].append(r)
    decided: dict[str, AdjudicationRecord] = {}
    for dec in sorted(decisions, key=lambda d: d.created_at):
        if dec.taxonomy_id != tax.id:
            continue
        if dec.category not in [*tax.category_ids, "not_a_failure"]:
            raise ConfigError(
                f"adjudication of {dec.trajectory_id}: category {dec.category!r} not in {tax.id}"
            )
        decided[dec.trajectory_id] = dec
    now = datetime.now(timezone.utc)
    report = AdjudicationReport(tax.id)
    for tid in sorted(set(by_traj) | set(decided)):
        labels = by_traj.get(tid, [])
        votes = [r for r in labels if r["category"] != UNSURE]
        annotators = sorted(r["annotator"] for r in labels)
        base = {
            "trajectory_id": tid,
            "taxonomy_id": tax.id,
            "taxonomy_version": str(tax.version),
            "annotators": annotators,
            "created_at": now,
        }
        d = decided.get(tid)
        if d is not None:
            report.gold.append(
                {
                    **base,
                    "category": d.category,
                    "decisive_step_index": d.decisive_step_index,
                    "evidence_steps": list(d.evidence_steps),
                    "method": "adjudicated",
                    "decided_by": d.decided_by,
                    "reason": d.reason,
                }
            )
            continue
        if len(votes) < min_reviewers:
            report.pending.append(tid)
            continue
        counts = Counter(r["category"] for r in votes)
        top, n_top = counts.most_common(1)[0]
        if len(counts) == 1:
            method = "unanimous"
        elif policy == "majority" and n_top * 2 > len(votes) and list(counts.values()).count(n_top) == 1:
            method = "majority"
        else:
            report.unresolved.append(
                Unresolved(
                    tid,
                    {r["annotator"]: r["category"] for r in labels},
                    "no majority" if policy == "majority" else "not unanimous",
                )
            )
            continue
        winners = [r for r in votes if r["category"] == top]
        decisive, evidence = _winner_steps(winners)
        report.gold.append(
            {
                **base,
                "category": top,
                "decisive_step_index": decisive,
                "evidence_steps": evidence,
                "method": method,
                "decided_by": None,
                "reason": None if method == "unanimous" else f"{n_top} of {len(votes)} votes",
            }
        )
    if write:
        _write_gold(lab, tax.id, report.gold)
        report.written = True
    return report


def _write_gold(lab: Lab, taxonomy_id: str, gold: list[dict[str, Any]]) -> None:
    tids = {g["trajectory_id"] for g in gold}
    old = lab.read("gold_labels").to_pylist()
    keep = [r for r in old if r["trajectory_id"] in tids and r["taxonomy_id"] != taxonomy_id]
    with lab.write("adjudicate") as txn:
        txn.delete("gold_labels", "trajectory_id", tids)
        txn.append("gold_labels", keep + gold)
        txn.summary["gold_labels"] = len(gold)
