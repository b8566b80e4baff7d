"""`trajlab skills compare`: the same tasks without and with a skill (or two skill versions).

Runs are paired by task id: the k-th run of a task in A (by start time, then id) with the k-th run of
the same task in B; unpaired runs are left out and counted. Accuracy delta with McNemar's test on
the discordant pairs (exact two-sided binomial when there are fewer than 25 of them, else the
chi-square test with continuity correction), the change of failures per category (gold, human or
judge label), and the paired cost deltas in tokens, time and steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean, median
from typing import Any

import pyarrow.dataset as ds
from scipy.stats import binomtest, chi2

from ..errors import ConfigError
from ..store import Lab

EXACT_BELOW = 25


def mcnemar(b: int, c: int) -> tuple[float, str]:
    """(p-value, method) for b pairs right in A only and c pairs right in B only."""
    n = b + c
    if n == 0:
        return 1.0, "none (no discordant pairs)"
    if n < EXACT_BELOW:
        return float(binomtest(min(b, c), n, 0.5, alternative="two-sided").pvalue), "exact binomial"
    stat = (abs(b - c) - 1) ** 2 / n
    return float(chi2.sf(stat, 1)), "chi-square (continuity corrected)"


@dataclass
class Comparison:
    label_a: str
    label_b: str
    pairs: int
    tasks: int
    unpaired_a: int
    unpaired_b: int
    accuracy_a: float
    accuracy_b: float
    both_right: int
    only_a: int
    only_b: int
    both_wrong: int
    p_value: float
    method: str
    categories: list[dict[str, Any]] = field(default_factory=list)
    cost: list[dict[str, Any]] = field(default_factory=list)

    @property
    def delta(self) -> float:
        return self.accuracy_b - self.accuracy_a

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["delta"] = self.delta
        return d

    def format(self) -> str:
        lines = [
            f"A = {self.label_a}\nB = {self.label_b}",
            f"{self.pairs} paired runs over {self.tasks} tasks (unpaired: {self.unpaired_a} in A, {self.unpaired_b} in B)",
            f"accuracy A {self.accuracy_a:.3f}  B {self.accuracy_b:.3f}  delta {self.delta:+.3f}",
            f"McNemar: right only in A = {self.only_a}, right only in B = {self.only_b}, "
            f"p = {self.p_value:.4g} ({self.method})",
            "",
            "failures by category     A     B  change",
        ]
        for c in self.categories:
            lines.append(f"  {c['category']:<22} {c['a']:>3}   {c['b']:>3}  {c['b'] - c['a']:+d}")
        lines += ["", "cost (paired)              mean A      mean B   mean delta  median delta"]
        for c in self.cost:
            lines.append(
                f"  {c['metric']:<22} {_f(c['mean_a']):>10}  {_f(c['mean_b']):>10}  {_f(c['mean_delta']):>11}  {_f(c['median_delta']):>12}"
            )
        return "\n".join(lines)


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}"


COST = (
    ("total_tokens", "tokens"),
    ("duration_s", "seconds"),
    ("n_steps", "steps"),
    ("n_tool_calls", "tool calls"),
)


def _runs(lab: Lab, condition: str | None) -> dict[str, list[dict[str, Any]]]:
    flt = (ds.field("condition") == condition) if condition else None
    cols = ["trajectory_id", "task_id", "outcome", "started_at", *(c for c, _ in COST)]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in lab.read("trajectories", cols, filter=flt).to_pylist():
        if r["task_id"] and r["outcome"] in ("success", "failure"):
            by_task.setdefault(r["task_id"], []).append(r)
    for rows in by_task.values():
        rows.sort(key=lambda r: (r["started_at"] is None, r["started_at"] or 0, r["trajectory_id"]))
    return by_task


def _categories(lab: Lab, ids: set[str]) -> dict[str, str]:
    from ._features import _labels

    cats, _ = _labels(lab, ids)
    return cats


def compare(
    lab_a: str | Path,
    lab_b: str | Path,
    condition_a: str | None = None,
    condition_b: str | None = None,
) -> Comparison:
    """Paired comparison of runs in lab A against runs of the same tasks in lab B."""
    la, lb = Lab.open(lab_a), Lab.open(lab_b)
    ra, rb = _runs(la, condition_a), _runs(lb, condition_b)
    for side, lab, cond, runs in (("A", la, condition_a, ra), ("B", lb, condition_b, rb)):
        if not runs:
            what = f"no task appears in both sets of runs: LAB_{side} {lab.root} has no runs with a task id and a success/failure outcome"
            if cond:
                col = lab.read("trajectories", ["condition"]).column(0).to_pylist()
                known = ", ".join(sorted({c for c in col if c})) or "none"
                what += f" of --condition-{side.lower()} {cond!r} (conditions in that lab: {known})"
            raise ConfigError(what)
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    un_a = un_b = 0
    for task in sorted(set(ra) | set(rb)):
        xa, xb = ra.get(task, []), rb.get(task, [])
        k = min(len(xa), len(xb))
        pairs += list(zip(xa[:k], xb[:k]))
        un_a += len(xa) - k
        un_b += len(xb) - k
    if not pairs:
        raise ConfigError(
            "no task appears in both sets of runs (pairing needs task ids and success/failure outcomes; "
            "check --condition-a/--condition-b)"
        )
    ok = [(a["outcome"] == "success", b["outcome"] == "success") for a, b in pairs]
    both = sum(x and y for x, y in ok)
    only_a = sum(x and not y for x, y in ok)
    only_b = sum(y and not x for x, y in ok)
    neither = len(ok) - both - only_a - only_b
    p, method = mcnemar(only_a, only_b)
    cats_a = _categories(la, {a["trajectory_id"] for a, _ in pairs if a["outcome"] == "failure"})
    cats_b = _categories(lb, {b["trajectory_id"] for _, b in pairs if b["outcome"] == "failure"})
    fa = [cats_a.get(a["trajectory_id"], "unlabeled") for a, _ in pairs if a["outcome"] == "failure"]
    fb = [cats_b.get(b["trajectory_id"], "unlabeled") for _, b in pairs if b["outcome"] == "failure"]
    categories = [
        {"category": c, "a": fa.count(c), "b": fb.count(c)}
        for c in sorted(set(fa) | set(fb), key=lambda c: (-(fa.count(c) + fb.count(c)), c))
    ]
    cost = []
    for col, label in COST:
        both_vals = [(a[col], b[col]) for a, b in pairs if a[col] is not None and b[col] is not None]
        if not both_vals:
            cost.append(
                {
                    "metric": label,
                    "pairs": 0,
                    "mean_a": None,
                    "mean_b": None,
                    "mean_delta": None,
                    "median_delta": None,
                }
            )
            continue
        d = [float(y) - float(x) for x, y in both_vals]
        cost.append(
            {
                "metric": label,
                "pairs": len(both_vals),
                "mean_a": mean(float(x) for x, _ in both_vals),
                "mean_b": mean(float(y) for _, y in both_vals),
                "mean_delta": mean(d),
                "median_delta": median(d),
            }
        )
    label_a = f"{la.root}" + (f" [condition={condition_a}]" if condition_a else "")
    label_b = f"{lb.root}" + (f" [condition={condition_b}]" if condition_b else "")
    n = len(pairs)
    return Comparison(
        label_a,
        label_b,
        n,
        len({a["task_id"] for a, _ in pairs}),
        un_a,
        un_b,
        (both + only_a) / n,
        (both + only_b) / n,
        both,
        only_a,
        only_b,
        neither,
        p,
        method,
        categories,
        cost,
    )


def _is_nan(x: float) -> bool:
    return isinstance(x, float) and math.isnan(x)
