"""Holm and Benjamini-Hochberg adjusted p-values against references, on random p-value vectors with
ties, exact 0s and 1s, values near 1 (where an uncapped adjustment exceeds 1) and NaNs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from trajlab.analysis import adjust_pvalues

P = st.one_of(
    st.sampled_from([0.0, 1e-4, 0.01, 0.02, 0.04, 0.3, 0.6, 0.9, 1.0]),  # ties
    st.floats(0.0, 1.0),
    st.just(float("nan")),
)
VECTORS = st.lists(P, min_size=0, max_size=40).map(lambda v: np.array(v, dtype=np.float64))


def holm_reference(p: np.ndarray) -> np.ndarray:
    """Holm by its definition: adj_i = min(1, max over p_j <= p_i of p_j * #{l: p_l >= p_j})."""
    return np.array([min(1.0, max(pj * np.sum(p >= pj) for pj in p if pj <= pi)) for pi in p])


@settings(max_examples=300, deadline=None)
@given(VECTORS)
def test_holm_and_bh_match_references_and_are_monotone(p: np.ndarray) -> None:
    ok = ~np.isnan(p)
    q = p[ok]
    holm, bh, bonf = (adjust_pvalues(p, m) for m in ("holm", "bh", "bonferroni"))
    for adj in (holm, bh, bonf):
        assert adj.shape == p.shape
        assert np.array_equal(np.isnan(adj), ~ok)  # NaN stays NaN and is not in the family
    if not q.size:
        return
    h, b = holm[ok], bh[ok]
    assert b == pytest.approx(stats.false_discovery_control(q, method="bh"), rel=1e-12, abs=1e-15)
    assert h == pytest.approx(holm_reference(q), rel=1e-12, abs=1e-15)
    order = np.argsort(q, kind="stable")
    for adj in (h, b):
        assert np.all((adj >= q - 1e-15) & (adj <= 1.0))  # never below the raw p, never above 1
        assert np.all(np.diff(adj[order]) >= -1e-15)  # a smaller p never gets a larger adjusted p
        for v in np.unique(q):  # tied p-values get one adjusted value
            assert np.ptp(adj[q == v]) <= 1e-15
    assert np.all(b <= h + 1e-15) and np.all(h <= bonf[ok] + 1e-15)  # BH <= Holm <= Bonferroni


def test_a_non_monotone_raw_adjustment_is_corrected() -> None:
    """Cases where the raw step values are out of order or above 1 (the step-up / step-down pass and
    the cap at 1 change the result)."""
    p = np.array([0.01, 0.011, 0.9, 0.95])  # BH raw: 0.04, 0.022, 1.2, 0.95 -> 0.022, 0.022, 0.95, 0.95
    assert adjust_pvalues(p, "bh") == pytest.approx([0.022, 0.022, 0.95, 0.95])
    p = np.array([0.02, 0.03, 0.6, 0.9])  # Holm raw: 0.08, 0.09, 1.2, 0.9 -> 0.08, 0.09, 1.0, 1.0
    assert adjust_pvalues(p, "holm") == pytest.approx([0.08, 0.09, 1.0, 1.0])
    assert adjust_pvalues(np.array([0.6, 0.7]), "bonferroni") == pytest.approx([1.0, 1.0])
