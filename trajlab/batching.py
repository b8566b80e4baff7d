"""Cutting a sequence into consecutive groups by weight (bytes per ingest transaction, steps per DAG
transaction)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def consecutive_groups(items: Iterable[T], weight: Callable[[T], int], limit: int) -> Iterator[list[T]]:
    """The items in order, in groups that weigh at least `limit` (only the last one may weigh less)."""
    cur: list[T] = []
    total = 0
    for item in items:
        cur.append(item)
        total += weight(item)
        if total >= limit:
            yield cur
            cur, total = [], 0
    if cur:
        yield cur
