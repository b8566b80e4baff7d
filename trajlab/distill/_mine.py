"""Contrast successful and failed runs: candidate rules with support, confidence, lift and evidence.

A `do` rule says runs with a feature succeed more often than runs in the same scope overall; an
`avoid` rule says they fail more often. Each rule keeps the ids of the runs that support it (runs
with the feature and the rule's outcome) and contradict it (runs with the feature and the other
outcome), a one-sided Fisher exact p-value, and a few example steps.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from scipy.stats import fisher_exact

from ._features import Corpus, Example, Run

FAMILY_PRIORITY = {"use": 0, "recover": 1, "order": 2, "import": 3, "flag": 4, "error": 5}
MAX_IDS = 500


@dataclass(frozen=True)
class MineParams:
    min_support: int = 4
    min_lift: float = 1.2
    min_confidence: float = 0.5
    max_p: float = 0.05
    min_scope_runs: int = 8
    dedupe_jaccard: float = 0.8
    group_by: str | None = "domain"  # trajectory column that defines scopes, or None for one scope


@dataclass
class Rule:
    feature: str
    direction: str  # do | avoid
    scope: str  # "all" or "<column>=<value>"
    n_scope: int
    n_scope_success: int
    n_with: int
    n_with_success: int
    confidence: float
    lift: float
    p_value: float
    supporting: list[str] = field(default_factory=list)
    contradicting: list[str] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)
    counter_examples: list[Example] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    also_scopes: list[str] = field(default_factory=list)
    stale: bool = False
    position: float = 0.5  # median relative step position of the feature in supporting runs

    @property
    def key(self) -> str:
        return f"{self.direction}|{self.scope}|{self.feature}"

    @property
    def family(self) -> str:
        return self.feature.split(":", 1)[0]

    @property
    def value(self) -> str:
        return self.feature.split(":", 1)[1]

    @property
    def base_rate(self) -> float:
        s = self.n_scope_success / self.n_scope if self.n_scope else 0.0
        return s if self.direction == "do" else 1.0 - s

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["key"] = self.key
        d["base_rate"] = round(self.base_rate, 4)
        d["confidence"] = round(self.confidence, 4)
        d["lift"] = round(self.lift, 4)
        d["p_value"] = float(f"{self.p_value:.4g}")
        d["n_supporting"] = len(self.supporting)
        d["n_contradicting"] = len(self.contradicting)
        d["supporting"] = self.supporting[:MAX_IDS]
        d["contradicting"] = self.contradicting[:MAX_IDS]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Rule:
        keep = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        keep["examples"] = [Example(**e) for e in d.get("examples", [])]
        keep["counter_examples"] = [Example(**e) for e in d.get("counter_examples", [])]
        return cls(**keep)


def scopes_of(corpus: Corpus, params: MineParams) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {"all": list(corpus.runs)}
    if params.group_by:
        groups: dict[str, list[Run]] = {}
        for r in corpus.runs:
            v = getattr(r, params.group_by, None)
            if v:
                groups.setdefault(f"{params.group_by}={v}", []).append(r)
        for k in sorted(groups):
            runs = groups[k]
            outcomes = {r.outcome for r in runs}
            if len(runs) >= params.min_scope_runs and len(outcomes) == 2 and len(groups) > 1:
                out[k] = runs
    return out


def _rule(feature: str, direction: str, scope: str, runs: list[Run]) -> Rule:
    n = len(runs)
    n_s = sum(r.outcome == "success" for r in runs)
    with_f = [r for r in runs if feature in r.features]
    w = len(with_f)
    w_s = sum(r.outcome == "success" for r in with_f)
    good = "success" if direction == "do" else "failure"
    hits = w_s if direction == "do" else w - w_s
    base_hits = n_s if direction == "do" else n - n_s
    conf = hits / w if w else 0.0
    base = base_hits / n if n else 0.0
    lift = conf / base if base else 0.0
    # one-sided Fisher test: is the rule's outcome more frequent with the feature than without it?
    table = [[hits, w - hits], [base_hits - hits, (n - w) - (base_hits - hits)]]
    p = float(fisher_exact(table, alternative="greater")[1]) if w and n - w else 1.0
    sup = [r for r in with_f if r.outcome == good]
    con = [r for r in with_f if r.outcome != good]
    pos = sorted(r.features[feature].step_index / max(r.n_steps, 1) for r in sup)
    position = pos[len(pos) // 2] if pos else 0.5
    return Rule(
        feature=feature,
        direction=direction,
        scope=scope,
        n_scope=n,
        n_scope_success=n_s,
        n_with=w,
        n_with_success=w_s,
        confidence=conf,
        lift=lift,
        p_value=p,
        supporting=[r.trajectory_id for r in sup],
        contradicting=[r.trajectory_id for r in con],
        examples=[r.features[feature] for r in sup[:3]],
        counter_examples=[r.features[feature] for r in con[:2]],
        position=round(position, 4),
    )


def feature_rule(corpus: Corpus, feature: str, direction: str, scope: str, params: MineParams) -> Rule | None:
    """Current statistics of one (feature, direction, scope), or None when the scope is absent."""
    runs = scopes_of(corpus, params).get(scope)
    return _rule(feature, direction, scope, runs) if runs else None


def _passes(r: Rule, p: MineParams) -> bool:
    return (
        r.n_with >= p.min_support
        and r.lift >= p.min_lift
        and r.confidence >= p.min_confidence
        and r.p_value <= p.max_p
    )


def _rank_key(r: Rule) -> tuple[Any, ...]:
    return (r.p_value, -r.lift, -r.n_with, r.key)


def _dedupe(rules: list[Rule], runs_with: dict[str, set[str]], params: MineParams) -> list[Rule]:
    """Cluster rules of one scope/direction whose run sets nearly coincide; keep one per cluster."""
    clusters: list[list[Rule]] = []
    for r in sorted(rules, key=_rank_key):
        s = runs_with[r.feature]
        for c in clusters:
            t = runs_with[c[0].feature]
            if len(s & t) / max(len(s | t), 1) >= params.dedupe_jaccard:
                c.append(r)
                break
        else:
            clusters.append([r])
    kept = []
    for c in clusters:
        best = min(c, key=lambda r: (FAMILY_PRIORITY.get(r.family, 9), r.p_value, r.key))
        best.merged = sorted(x.feature for x in c if x is not best)
        kept.append(best)
    # `flag:P X` and its specialisation `flag:P X v` say the same thing: keep the better supported one.
    by_feature = {r.feature: r for r in kept}
    drop: set[str] = set()
    for r in kept:
        if r.family != "flag" or r.value.count(" ") < 2:
            continue
        parent = by_feature.get("flag:" + r.value.rsplit(" ", 1)[0])
        if parent is None or parent.feature in drop or r.feature in drop:
            continue
        loser, winner = (parent, r) if _rank_key(r) < _rank_key(parent) else (r, parent)
        drop.add(loser.feature)
        winner.merged = sorted({*winner.merged, loser.feature, *loser.merged})
    return sorted((r for r in kept if r.feature not in drop), key=_rank_key)


def mine_rules(corpus: Corpus, params: MineParams | None = None) -> list[Rule]:
    """Candidate rules over every scope, deduplicated within and across scopes, best first."""
    params = params or MineParams()
    scopes = scopes_of(corpus, params)
    by_scope: dict[str, list[Rule]] = {}
    for scope, runs in scopes.items():
        counts: Counter[str] = Counter(f for r in runs for f in r.features)
        runs_with: dict[str, set[str]] = {}
        cands: dict[str, list[Rule]] = {"do": [], "avoid": []}
        for feature, cnt in sorted(counts.items()):
            if cnt < params.min_support or cnt >= len(runs):
                continue
            if feature.startswith("order:"):
                a, b = feature[6:].split("<", 1)
                if f"order:{b}<{a}" not in counts:
                    continue  # the order never varies here: it says no more than `use:`
            for direction in ("do", "avoid"):
                r = _rule(feature, direction, scope, runs)
                if _passes(r, params):
                    runs_with[feature] = {x.trajectory_id for x in runs if feature in x.features}
                    cands[direction].append(r)
        by_scope[scope] = [r for d in ("do", "avoid") for r in _dedupe(cands[d], runs_with, params)]
    return _dedupe_scopes(by_scope)


def _dedupe_scopes(by_scope: dict[str, list[Rule]]) -> list[Rule]:
    """A feature found in one sub-scope stays there; found in two or more, the `all` rule covers it."""
    local: dict[tuple[str, str], list[Rule]] = {}
    for scope, rules in by_scope.items():
        if scope != "all":
            for r in rules:
                local.setdefault((r.direction, r.feature), []).append(r)
    out: list[Rule] = []
    for r in by_scope.get("all", []):
        subs = local.get((r.direction, r.feature), [])
        if len(subs) == 1:
            continue  # the specific rule wins
        r.also_scopes = sorted(s.scope for s in subs)
        out.append(r)
    covered = {(r.direction, r.feature) for r in out}
    for scope in sorted(by_scope):
        if scope == "all":
            continue
        out += [r for r in by_scope[scope] if (r.direction, r.feature) not in covered]
    return sorted(out, key=_rank_key)


def merge_rules(
    previous: Iterable[Rule], current: list[Rule], corpus: Corpus, params: MineParams
) -> list[Rule]:
    """Merge rules of an earlier distillation with the current ones (same key: current stats, ids unioned).

    An earlier rule the current runs do not re-find is kept (marked stale) unless the current runs
    contradict it (enough support and a lift below 1 in its scope), in which case it is dropped.
    """
    cur = {r.key: r for r in current}
    out = list(current)
    for old in previous:
        if old.key in cur:
            new = cur[old.key]
            new.supporting = list(dict.fromkeys([*new.supporting, *old.supporting]))
            new.contradicting = list(dict.fromkeys([*new.contradicting, *old.contradicting]))
            continue
        now = feature_rule(corpus, old.feature, old.direction, old.scope, params)
        if now is not None and now.n_with >= params.min_support and now.lift < 1.0:
            continue
        old.stale = True
        out.append(old)
    return sorted(out, key=_rank_key)


def category_summary(corpus: Corpus, scope_runs: list[Run], top: int = 2) -> list[dict[str, Any]]:
    """Failure categories (from labels) in a scope, each with the features most tied to it."""
    fails = [r for r in scope_runs if r.outcome == "failure" and r.category]
    succ = [r for r in scope_runs if r.outcome == "success"]
    out = []
    for cat, n in sorted(Counter(r.category for r in fails).items(), key=lambda kv: (-kv[1], kv[0])):
        in_cat = [r for r in fails if r.category == cat]
        fc = Counter(f for r in in_cat for f in r.features)
        marks = []
        for f, k in fc.items():
            rate = k / len(in_cat)
            rate_s = sum(f in r.features for r in succ) / len(succ) if succ else 0.0
            if k >= 2 and rate >= 0.5 and rate > 2 * rate_s:
                marks.append((round(rate - rate_s, 4), f, k, rate_s))
        marks.sort(key=lambda m: (-m[0], m[1]))
        out.append(
            {
                "category": cat,
                "failures": n,
                "share": round(n / len(fails), 4),
                "marks": [
                    {"feature": f, "in_category": k, "success_rate_with": round(rs, 4)}
                    for _, f, k, rs in marks[:top]
                ],
                "trajectory_ids": [r.trajectory_id for r in in_cat][:MAX_IDS],
            }
        )
    return out


def rule_strength(r: Rule) -> float:
    """A single number for display: log-lift weighted by support."""
    return math.log(max(r.lift, 1e-9)) * math.log1p(r.n_with)
