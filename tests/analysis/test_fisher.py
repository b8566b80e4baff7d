"""The two-sided Fisher exact test of `trajlab gaps` (`trajlab.analysis._stats.fisher_two_sided`, numpy
instead of `scipy.stats`, which takes a second to import): against exact fractions and against scipy."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from trajlab.analysis._stats import fisher_pvalues, fisher_two_sided


def exact(a: int, n1: int, c: int, n2: int) -> Fraction:
    """The definition in exact arithmetic: the tables with these margins no more likely than this one."""
    m = a + c
    total = comb(n1 + n2, m)
    pmf = {k: Fraction(comb(n1, k) * comb(n2, m - k), total) for k in range(max(0, m - n2), min(n1, m) + 1)}
    return sum((p for p in pmf.values() if p <= pmf[a]), Fraction(0))


@st.composite
def tables(draw: st.DrawFn) -> tuple[int, int, int, int]:
    n1, n2 = draw(st.integers(1, 60)), draw(st.integers(1, 60))
    return draw(st.integers(0, n1)), n1, draw(st.integers(0, n2)), n2


@settings(max_examples=300, deadline=None)
@given(tables())
def test_equals_the_exact_definition(t: tuple[int, int, int, int]) -> None:
    assert fisher_two_sided(*t) == pytest.approx(float(exact(*t)), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(
    "t",
    [
        (2, 2, 1, 3),  # the hand-built gaps lab's table
        (3, 5, 3, 5),  # symmetric: every table is tied with its mirror image
        (0, 7, 7, 7),
        (10, 10, 0, 10),
        (0, 100_000, 5, 100_000),  # large margins: the pmf is computed by ratios, never by factorials
        (50_000, 100_000, 50_500, 100_000),
        (1, 3, 400, 20_000),
    ],
)
def test_agrees_with_scipy(t: tuple[int, int, int, int]) -> None:
    a, n1, c, n2 = t
    want = stats.fisher_exact([[a, n1 - a], [c, n2 - c]], alternative="two-sided").pvalue
    assert fisher_two_sided(*t) == pytest.approx(want, rel=1e-8)


def test_per_tool_and_degenerate_groups() -> None:
    got = fisher_pvalues(np.array([2, 0, 5]), 5, np.array([1, 0, 3]), 3)
    want = [stats.fisher_exact([[a, 5 - a], [c, 3 - c]]).pvalue for a, c in [(2, 1), (0, 0), (5, 3)]]
    assert got == pytest.approx(want, rel=1e-9)
    assert np.isnan(fisher_pvalues(np.array([1]), 0, np.array([1]), 4)).all()  # no successes: no test
    with pytest.raises(ValueError, match="not a 2x2 table"):
        fisher_two_sided(4, 3, 0, 2)
