"""Agreement statistics for nominal labels, written out so each number can be checked by hand.

Missing ratings are allowed everywhere: Cohen's kappa uses the items both raters labeled; Fleiss'
kappa uses items with at least two ratings (with a varying number of raters per item it is the usual
generalisation: P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)), p_j pooled over all ratings);
Krippendorff's alpha is defined for missing data by construction.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

Units = Mapping[Any, Sequence[Hashable]]
"""item -> the labels it received (one per rater who labeled it); any key type (only the values are read)."""


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two aligned label sequences; None when undefined (chance agreement is 1)."""
    if len(a) != len(b):
        raise ValueError("cohen_kappa needs two sequences of the same length")
    n = len(a)
    if n == 0:
        return None
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1.0 - pe)


def fleiss_kappa(units: Units) -> float | None:
    """Fleiss' kappa over units with at least two ratings; None when undefined."""
    rated = [list(v) for v in units.values() if len(v) >= 2]
    if not rated:
        return None
    totals: Counter[Hashable] = Counter()
    p_items = []
    n_ratings = 0
    for labels in rated:
        counts = Counter(labels)
        m = len(labels)
        p_items.append(sum(c * (c - 1) for c in counts.values()) / (m * (m - 1)))
        totals.update(counts)
        n_ratings += m
    p_bar = sum(p_items) / len(p_items)
    pe = sum((c / n_ratings) ** 2 for c in totals.values())
    if pe >= 1.0:
        return None
    return (p_bar - pe) / (1.0 - pe)


def krippendorff_alpha_nominal(units: Units) -> float | None:
    """Krippendorff's alpha for nominal data (coincidence-matrix form); None when undefined.

    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k, over units with >= 2 ratings,
    where o_ck counts ordered pairs of values within a unit, each unit weighted 1 / (m_u - 1).
    """
    o: defaultdict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for labels in units.values():
        m = len(labels)
        if m < 2:
            continue
        counts = Counter(labels)
        for c, nc in counts.items():
            for k, nk in counts.items():
                pairs = nc * (nc - 1) if c == k else nc * nk
                o[(c, k)] += pairs / (m - 1)
    n_c: defaultdict[Hashable, float] = defaultdict(float)
    for (c, _k), v in o.items():
        n_c[c] += v
    n = sum(n_c.values())
    if n <= 1:
        return None
    observed = sum(v for (c, k), v in o.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    if expected == 0:
        return None
    return 1.0 - (n - 1) * observed / expected


def specific_agreement(pairs: Sequence[tuple[Hashable, Hashable]], category: Hashable) -> float | None:
    """Proportion of specific agreement for one category over rating pairs: 2 * both / (a + b)."""
    both = sum(1 for x, y in pairs if x == category and y == category)
    either = sum((x == category) + (y == category) for x, y in pairs)
    return None if either == 0 else 2.0 * both / either


def confusion(
    truth: Sequence[Hashable], pred: Sequence[Hashable], labels: Sequence[Hashable] | None = None
) -> tuple[list[Hashable], list[list[int]]]:
    """Confusion matrix: rows are truth labels, columns predicted labels."""
    labels = list(labels) if labels is not None else sorted(set(truth) | set(pred), key=str)
    index = {c: i for i, c in enumerate(labels)}
    m = [[0] * len(labels) for _ in labels]
    for t, p in zip(truth, pred):
        if t in index and p in index:
            m[index[t]][index[p]] += 1
    return labels, m
