"""consecutive_groups: order kept, nothing lost, each group as small as the limit allows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trajlab.batching import consecutive_groups


@given(st.lists(st.integers(min_value=0, max_value=50), max_size=40), st.integers(min_value=1, max_value=120))
def test_groups_cover_the_items_in_order_and_are_cut_at_the_limit(weights, limit):
    groups = list(consecutive_groups(weights, lambda w: w, limit))
    assert [w for g in groups for w in g] == weights
    assert all(g for g in groups)
    for g in groups[:-1]:
        assert sum(g) >= limit > sum(g[:-1])  # cut as soon as the limit is reached
    if groups:
        assert sum(groups[-1][:-1]) < limit
