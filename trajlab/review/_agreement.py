"""`agreement(lab or labels)`: how far the judges and the human reviewers agree.

Raters are the judges (`judge:llm`, `judge:rules`, ...) and each human annotator. `unsure` and
missing categories are left out of the category statistics (and counted), but their decisive steps
still count for decisive-step agreement.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from itertools import combinations
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..errors import ConfigError
from ..schema import UNSURE as UNSURE_CATEGORY
from ._stats import cohen_kappa, confusion, fleiss_kappa, krippendorff_alpha_nominal, specific_agreement

if TYPE_CHECKING:
    from ..store import Lab

KINDS = ("human", "judge", "gold")


@dataclass(frozen=True)
class Rating:
    """One rater's label of one trajectory."""

    rater: str
    kind: str  # human | judge | gold
    trajectory_id: str
    category: str | None
    decisive_step_index: int | None = None


@dataclass
class PairStats:
    """Agreement of two raters over the trajectories both labeled."""

    rater_a: str
    rater_b: str
    kind: str  # human-human, judge-human, judge-judge
    items_a: int  # trajectories rater_a labeled
    items_b: int
    items_both: int  # labeled by both (the pair's coverage)
    n_items: int  # of those, with a category from both (unsure and none left out)
    observed: float | None
    kappa: float | None
    step_n: int
    step_exact: float | None
    step_within_k: float | None
    agent_n: int = 0
    agent_agree: float | None = None


@dataclass
class AgreementReport:
    """Agreement statistics; `to_json()` for machines, `to_table()` for people."""

    taxonomy_id: str | None
    k: int
    raters: dict[str, str]
    n_items: int
    n_unsure: int
    pairs: list[PairStats] = field(default_factory=list)
    fleiss_kappa: float | None = None
    krippendorff_alpha: float | None = None
    n_multi_rated: int = 0
    per_category: list[dict[str, Any]] = field(default_factory=list)
    decisive: dict[str, dict[str, Any]] = field(default_factory=dict)
    confusion: dict[str, dict[str, Any]] = field(default_factory=dict)
    unpaired: list[dict[str, Any]] = field(default_factory=list)
    """Rater pairs with no row in `pairs`: nothing to compare (rater_a, rater_b, n_a, n_b, n_both)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def tables(self) -> dict[str, pa.Table]:
        """The report as Arrow tables: pairs, per_category, decisive, and one confusion table per judge."""
        out = {
            "pairs": pa.Table.from_pylist([asdict(p) for p in self.pairs]),
            "per_category": pa.Table.from_pylist(self.per_category),
            "decisive": pa.Table.from_pylist([{"pairs": k, **v} for k, v in self.decisive.items()]),
        }
        for judge, c in self.confusion.items():
            rows = [
                {"gold \\ judge": g, **{str(p): c["matrix"][i][j] for j, p in enumerate(c["labels"])}}
                for i, g in enumerate(c["labels"])
            ]
            out[f"confusion {judge}"] = pa.Table.from_pylist(rows)
        return out

    def _undefined_notes(self) -> list[str]:
        """Why a kappa shown as n/a is undefined (so an n/a is never mistaken for missing data)."""
        notes = []
        for p in self.pairs:
            if p.kappa is not None:
                continue
            if p.n_items == 0:
                why = "no trajectory has a category from both (only unsure or decisive steps)"
            else:
                why = (
                    f"both gave the same single category to all {p.n_items} shared trajectories, so chance "
                    "agreement is 1 and kappa is undefined (observed agreement is still shown)"
                )
            notes.append(f"kappa n/a for {p.rater_a} vs {p.rater_b}: {why}")
        for u in self.unpaired:
            why = (
                "no trajectory was labeled by both"
                if not u["n_both"]
                else f"none of their {u['n_both']} shared trajectories has a category or decisive step from both"
            )
            notes.append(
                f"no row for {u['rater_a']} vs {u['rater_b']}: {why} "
                f"({u['rater_a']}: {u['n_a']}, {u['rater_b']}: {u['n_b']} trajectories)"
            )
        if self.fleiss_kappa is None:
            why = (
                "no trajectory has labels from two or more human reviewers"
                if not self.n_multi_rated
                else "every human label is the same category, so chance agreement is 1"
            )
            notes.append(f"Fleiss' kappa and Krippendorff's alpha n/a: {why}")
        return ["", *notes] if notes else []

    def to_table(self) -> str:
        """A plain-text report: one section per table."""
        from ..tabular import render

        def f(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.3f}"

        if not self.raters:
            return (
                "no labels to compare: run `trajlab judge LAB` and load reviews with "
                "`trajlab annotations load LAB`"
            )
        lines = [
            f"taxonomy {self.taxonomy_id}: {self.n_items} trajectories, raters: "
            + ", ".join(f"{r} ({k})" for r, k in self.raters.items()),
            f"humans across all reviewers ({self.n_multi_rated} trajectories with 2+ human labels): "
            f"Fleiss' kappa {f(self.fleiss_kappa)}, Krippendorff's alpha (nominal) {f(self.krippendorff_alpha)}",
        ]
        if self.n_unsure:
            lines.append(f"{self.n_unsure} `unsure` labels left out of the category statistics")
        for name, t in self.tables().items():
            if t.num_rows == 0:
                continue
            title = name if not name.startswith("confusion") else f"{name} (rows: gold, columns: judge)"
            if name == "decisive":
                title = f"decisive step agreement (within +-{self.k})"
            # An undefined statistic is shown as n/a, never as an empty cell (or nan).
            rows = [{c: "n/a" if v is None else v for c, v in row.items()} for row in t.to_pylist()]
            lines += ["", f"== {title}", render(rows, max_width=40)]
        lines += self._undefined_notes()
        for judge, c in self.confusion.items():
            lines.append(
                f"{judge} vs gold: accuracy {f(c['accuracy'])} over {c['n']} trajectories "
                f"(the judge labeled {c['n']} of {c['n_gold']} gold trajectories)"
            )
        return "\n".join(lines)


def _ratings_from_lab(lab: Lab, taxonomy_id: str | None) -> tuple[list[Rating], str | None]:
    hl = lab.read("human_labels").to_pylist()
    jl = [r for r in lab.read("judge_labels").to_pylist() if r["status"] == "labeled"]
    gl = lab.read("gold_labels").to_pylist()
    if taxonomy_id is None:
        counts = Counter(r["taxonomy_id"] for r in hl) or Counter(r["taxonomy_id"] for r in jl)
        taxonomy_id = counts.most_common(1)[0][0] if counts else None
    out: list[Rating] = []
    epoch = datetime.min.replace(tzinfo=timezone.utc)
    # One label per (rater, trajectory): the newest.
    newest: dict[tuple[str, str], tuple[datetime, Rating]] = {}

    def put(r: Rating, at: datetime | None) -> None:
        key = (r.rater, r.trajectory_id)
        if key not in newest or (at or epoch) >= newest[key][0]:
            newest[key] = (at or epoch, r)

    models = defaultdict(set)
    for r in jl:
        models[r["judge"]].add(r.get("model"))
    for r in hl:
        if r["taxonomy_id"] == taxonomy_id:
            put(
                Rating(r["annotator"], "human", r["trajectory_id"], r["category"], r["decisive_step_index"]),
                r["created_at"],
            )
    for r in jl:
        if r["taxonomy_id"] == taxonomy_id:
            name = f"judge:{r['judge']}" + (f"/{r.get('model')}" if len(models[r["judge"]]) > 1 else "")
            put(
                Rating(name, "judge", r["trajectory_id"], r["category"], r["decisive_step_index"]),
                r["created_at"],
            )
    for r in gl:
        if r["taxonomy_id"] == taxonomy_id:
            put(
                Rating("gold", "gold", r["trajectory_id"], r["category"], r["decisive_step_index"]),
                r["created_at"],
            )
    out = [r for _, r in newest.values()]
    return out, taxonomy_id


def _ratings_from_rows(rows: Iterable[Mapping[str, Any] | Rating]) -> list[Rating]:
    out = []
    for i, r in enumerate(rows):
        if isinstance(r, Rating):
            out.append(r)
            continue
        rater = r.get("rater") or r.get("annotator") or (f"judge:{r['judge']}" if r.get("judge") else None)
        if not rater or not r.get("trajectory_id"):
            raise ConfigError(f"label {i}: needs a rater (or annotator/judge) and a trajectory_id")
        kind = r.get("kind") or (
            "judge" if str(rater).startswith("judge") else "gold" if rater == "gold" else "human"
        )
        if kind not in KINDS:
            raise ConfigError(f"label {i}: kind must be one of {', '.join(KINDS)}")
        out.append(
            Rating(str(rater), kind, r["trajectory_id"], r.get("category"), r.get("decisive_step_index"))
        )
    return out


def _agents(lab: Lab, ratings: list[Rating]) -> dict[tuple[str, int], str]:
    wanted = {(r.trajectory_id, r.decisive_step_index) for r in ratings if r.decisive_step_index is not None}
    if not wanted:
        return {}
    tids = sorted({t for t, _ in wanted})
    con = lab.connect()
    rows = con.execute(
        "SELECT trajectory_id, step_index, agent_id FROM steps WHERE list_contains(?, trajectory_id)", [tids]
    ).fetchall()
    return {(t, s): a for t, s, a in rows if (t, s) in wanted}


def agreement(
    source: Lab | Iterable[Mapping[str, Any] | Rating],
    k: int = 1,
    taxonomy_id: str | None = None,
) -> AgreementReport:
    """Agreement of every rater pair, across human reviewers, per category, on decisive steps, and
    of each judge against gold labels. `source` is a lab or label rows
    (`rater`/`annotator`/`judge`, `trajectory_id`, `category`, `decisive_step_index`, optional `kind`)."""
    if k < 0:
        raise ConfigError("k must be >= 0")
    agents: dict[tuple[str, int], str] = {}
    if hasattr(source, "read") and hasattr(source, "root"):
        ratings, taxonomy_id = _ratings_from_lab(source, taxonomy_id)  # type: ignore[arg-type]
        agents = _agents(source, ratings)  # type: ignore[arg-type]
    else:
        ratings = _ratings_from_rows(source)
    raters = {r.rater: r.kind for r in sorted(ratings, key=lambda r: (KINDS.index(r.kind), r.rater))}
    by_item: dict[str, dict[str, Rating]] = defaultdict(dict)
    for r in ratings:
        by_item[r.trajectory_id][r.rater] = r
    n_unsure = sum(1 for r in ratings if r.kind != "gold" and r.category == UNSURE_CATEGORY)

    def cat(r: Rating | None) -> str | None:
        return None if r is None or r.category in (None, UNSURE_CATEGORY) else r.category

    report = AgreementReport(taxonomy_id, k, raters, len(by_item), n_unsure)
    graders = [r for r, kind in raters.items() if kind == "judge"] + [
        r for r, kind in raters.items() if kind == "human"
    ]
    pooled_pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    pooled_steps: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for a, b in combinations(graders, 2):
        kind = "-".join(sorted((raters[a], raters[b]), key=lambda x: (x != "judge", x)))
        xs: list[str] = []
        ys: list[str] = []
        steps: list[tuple[int, int]] = []
        same_agent: list[bool] = []
        n_a = sum(1 for item in by_item.values() if a in item)
        n_b = sum(1 for item in by_item.values() if b in item)
        both = sum(1 for item in by_item.values() if a in item and b in item)
        for item in by_item.values():
            ra, rb = item.get(a), item.get(b)
            if ra is None or rb is None:
                continue
            ca, cb = cat(ra), cat(rb)
            if ca is not None and cb is not None:
                xs.append(ca)
                ys.append(cb)
            if ra.decisive_step_index is not None and rb.decisive_step_index is not None:
                steps.append((ra.decisive_step_index, rb.decisive_step_index))
                ga = agents.get((ra.trajectory_id, ra.decisive_step_index))
                gb = agents.get((rb.trajectory_id, rb.decisive_step_index))
                if ga is not None and gb is not None:
                    same_agent.append(ga == gb)
        if not xs and not steps:
            report.unpaired.append({"rater_a": a, "rater_b": b, "n_a": n_a, "n_b": n_b, "n_both": both})
            continue
        pooled_pairs[kind] += list(zip(xs, ys))
        pooled_steps[kind] += steps
        report.pairs.append(
            PairStats(
                a,
                b,
                kind,
                n_a,
                n_b,
                both,
                len(xs),
                sum(x == y for x, y in zip(xs, ys)) / len(xs) if xs else None,
                cohen_kappa(xs, ys),
                len(steps),
                _share(steps, 0),
                _share(steps, k),
                len(same_agent),
                sum(same_agent) / len(same_agent) if same_agent else None,
            )
        )
    humans = [r for r, kind in raters.items() if kind == "human"]
    units = {tid: [c for h in humans if (c := cat(item.get(h))) is not None] for tid, item in by_item.items()}
    report.n_multi_rated = sum(1 for v in units.values() if len(v) >= 2)
    report.fleiss_kappa = fleiss_kappa(units)
    report.krippendorff_alpha = krippendorff_alpha_nominal(units)
    categories = sorted({c for r in ratings if r.kind != "gold" and (c := cat(r)) is not None})
    for c in categories:
        report.per_category.append(
            {
                "category": c,
                "human_labels": sum(1 for r in ratings if r.kind == "human" and cat(r) == c),
                "judge_labels": sum(1 for r in ratings if r.kind == "judge" and cat(r) == c),
                "human_human_specific": specific_agreement(pooled_pairs["human-human"], c),
                "judge_human_specific": specific_agreement(pooled_pairs["judge-human"], c),
                "human_kappa": fleiss_kappa({t: [x == c for x in v] for t, v in units.items()}),
            }
        )
    for kind, steps in sorted(pooled_steps.items()):
        report.decisive[kind] = {
            "n": len(steps),
            "exact": _share(steps, 0),
            "within_k": _share(steps, k),
            "mean_abs_distance": sum(abs(x - y) for x, y in steps) / len(steps) if steps else None,
        }
    if "gold" in raters:
        for j in (r for r, kind in raters.items() if kind == "judge"):
            pairs = [
                (cat(item["gold"]), cat(item[j]) or "(none)")
                for item in by_item.values()
                if "gold" in item and j in item and cat(item["gold"]) is not None
            ]
            if not pairs:
                continue
            gold, pred = zip(*pairs)
            labels, matrix = confusion(list(gold), list(pred))
            n_gold = sum(1 for item in by_item.values() if "gold" in item and cat(item["gold"]) is not None)
            report.confusion[j] = {
                "labels": labels,
                "matrix": matrix,
                "n": len(pairs),
                "n_gold": n_gold,
                "coverage": len(pairs) / n_gold,
                "accuracy": sum(g == p for g, p in pairs) / len(pairs),
            }
    return report


def _share(steps: list[tuple[int, int]], k: int) -> float | None:
    return sum(abs(x - y) <= k for x, y in steps) / len(steps) if steps else None
