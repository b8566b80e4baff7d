"""How many planted patterns did the miner recover? Precision and recall of rules against ground truth.

Ground truth (from `trajlab examples`) lists, per run, the planted patterns it shows. A rule matches
pattern P when, among the runs of the rule's scope that have the rule's feature, at least
`min_precision` show P, those runs cover at least `min_coverage` of the scope's runs with P, and
the rule's direction agrees with P's polarity (P is a success pattern when runs with it succeed
more often than runs without it). Rule precision = matched rules / rules; pattern recall =
recovered patterns / patterns present in the distilled runs. With `causes`, each planted failure
variant of the ground truth (`cause:misheard`, `cause:web`, ...) is also a pattern to match (an
`avoid` one); `precision` still counts only the listed patterns, `precision_with_causes` both.

With the patterns' descriptions (`patterns.json` of the example set), a rule must also name what the
pattern is about: a word of its feature (`ffprobe` of `seq:ffprobe>ffmpeg`, `fps` of a frame-sampling
flag, `cv2` of `import:cv2`) is a word of the pattern's name or description. Sharing runs alone let
"Run ls" recover "sample frames across the whole video" (the runs that sampled densely also listed the
folder), which made a pattern recall of 1.00 claim more than the skills say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..store import Lab
from ._features import Corpus, Run
from ._mine import Rule


@dataclass
class RecoveryReport:
    rules: list[dict[str, Any]] = field(default_factory=list)
    patterns: list[dict[str, Any]] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        """Share of rules that match a listed pattern (patterns.json); planted causes not counted."""
        hits = [r for r in self.rules if r["pattern"] and not r["pattern"].startswith("cause:")]
        return len(hits) / len(self.rules) if self.rules else None

    @property
    def precision_with_causes(self) -> float | None:
        """Share of rules that match a listed pattern or a planted failure cause."""
        return sum(bool(r["pattern"]) for r in self.rules) / len(self.rules) if self.rules else None

    def _recall(self, causes: bool) -> float | None:
        present = [p for p in self.patterns if p["runs"] and p["pattern"].startswith("cause:") == causes]
        return sum(bool(p["recovered_by"]) for p in present) / len(present) if present else None

    @property
    def recall(self) -> float | None:
        """Share of the listed patterns present in the distilled runs that some rule recovered."""
        return self._recall(False)

    @property
    def cause_recall(self) -> float | None:
        return self._recall(True)

    def format(self) -> str:
        lines = ["pattern                 polarity  runs  succ.with  succ.without  recovered by"]
        for p in self.patterns:
            sw = "-" if p["success_with"] is None else f"{p['success_with']:.2f}"
            so = "-" if p["success_without"] is None else f"{p['success_without']:.2f}"
            lines.append(
                f"{p['pattern']:<23} {p['polarity']:<8} {p['runs']:>5}  {sw:>9}  {so:>12}  "
                + (", ".join(p["recovered_by"]) or "-")
            )
        lines += ["", "rule                                              matches"]
        for r in self.rules:
            lines.append(f"{r['rule']:<50} {r['pattern'] or '(no planted pattern)'}")

        def f(x: float | None) -> str:
            return "-" if x is None else f"{x:.2f}"

        n_pat = sum(bool(r["pattern"]) and not r["pattern"].startswith("cause:") for r in self.rules)
        n_any = sum(bool(r["pattern"]) for r in self.rules)
        lines.append(
            f"\nrule precision {f(self.precision)} ({n_pat}/{len(self.rules)} match a listed pattern; "
            f"{f(self.precision_with_causes)} = {n_any}/{len(self.rules)} counting planted failure causes), "
            f"pattern recall {f(self.recall)}, failure-cause recall {f(self.cause_recall)}"
        )
        return "\n".join(lines)


def _in_scope(run: Run, scope: str) -> bool:
    if scope == "all":
        return True
    col, _, val = scope.partition("=")
    return str(getattr(run, col, None)) == val


_WORD = re.compile(r"[a-z0-9]+")
_FEATURE_KINDS = frozenset(["tool", "seq", "flag", "import", "arg", "cmd", "run", "then", "before", "after"])


def _terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 2 and w not in _FEATURE_KINDS}


def _names_pattern(feature: str, pattern: str, descriptions: dict[str, str] | None) -> bool:
    """Does the rule's feature name something the pattern is about? Always, without descriptions, and
    for the planted causes (`cause:...`), which have none."""
    if descriptions is None or pattern.startswith("cause:") or pattern not in descriptions:
        return True
    return bool(_terms(feature) & _terms(pattern.replace("_", " ") + " " + descriptions[pattern]))


def pattern_recovery(
    lab: Lab,
    corpus: Corpus,
    rules: list[Rule],
    truth: list[dict[str, Any]],
    min_precision: float = 0.8,
    min_coverage: float = 0.5,
    causes: bool = True,
    descriptions: dict[str, str] | None = None,
) -> RecoveryReport:
    """Match mined rules to the planted patterns of a generated run set (see the module docstring).
    `descriptions`: the patterns' descriptions (patterns.json); with them a rule must name its pattern."""
    nat = dict(
        zip(
            *[
                lab.read("trajectories", ["trajectory_id", "native_id"]).column(c).to_pylist()
                for c in ("trajectory_id", "native_id")
            ]
        )
    )
    by_native = {str(t.get("native_id")): t for t in truth}
    pats: dict[str, set[str]] = {}
    for run in corpus.runs:
        row = by_native.get(str(nat.get(run.trajectory_id))) or {}
        for p in row.get("patterns", []) or []:
            pats.setdefault(p, set()).add(run.trajectory_id)
        if causes and row.get("outcome") == "failure" and row.get("variant"):
            pats.setdefault(f"cause:{row['variant']}", set()).add(run.trajectory_id)
    names = sorted({p for t in truth for p in t.get("patterns") or []})
    if causes:
        names += sorted(
            {f"cause:{t['variant']}" for t in truth if t.get("outcome") == "failure" and t.get("variant")}
        )
    outcome = {r.trajectory_id: r.outcome == "success" for r in corpus.runs}
    polarity: dict[str, str] = {}
    rep = RecoveryReport()
    for p in names:
        with_p = pats.get(p, set())
        without = set(outcome) - with_p
        sw = sum(outcome[t] for t in with_p) / len(with_p) if with_p else None
        so = sum(outcome[t] for t in without) / len(without) if without else None
        polarity[p] = "avoid" if p.startswith("cause:") or (sw or 0.0) < (so or 0.0) else "do"
        rep.patterns.append(
            {
                "pattern": p,
                "polarity": polarity[p],
                "runs": len(with_p),
                "success_with": sw,
                "success_without": so,
                "recovered_by": [],
            }
        )
    by_name = {x["pattern"]: x for x in rep.patterns}
    for rule in rules:
        scope_runs = {r.trajectory_id for r in corpus.runs if _in_scope(r, rule.scope)}
        feat = {
            r.trajectory_id
            for r in corpus.runs
            if r.trajectory_id in scope_runs and rule.feature in r.features
        }
        best: tuple[float, str] | None = None
        for p in names:
            if polarity[p] != rule.direction or not feat or not _names_pattern(rule.feature, p, descriptions):
                continue
            p_runs = pats.get(p, set()) & scope_runs
            if not p_runs:
                continue
            inter = len(feat & p_runs)
            prec, cov = inter / len(feat), inter / len(p_runs)
            if prec >= min_precision and cov >= min_coverage:
                f1 = 2 * prec * cov / (prec + cov)
                if best is None or f1 > best[0]:
                    best = (f1, p)
        rep.rules.append({"rule": rule.key, "pattern": best[1] if best else None})
        if best:
            by_name[best[1]]["recovered_by"].append(rule.key)
    return rep
