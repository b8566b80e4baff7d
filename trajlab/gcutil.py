"""Fewer cyclic-GC passes during allocation-heavy loops (ingest parsing, DAG builds)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def fewer_gc_passes(
    gen0: int, gen1: int | None = None, gen2: int | None = None, *, freeze: bool = False
) -> Iterator[None]:
    """Raise the collector's thresholds for the duration (restored afterwards).

    Parsing JSON and building graphs allocate millions of short-lived dicts and lists, nearly all freed by
    reference counting; at the default first threshold (700) the collector runs thousands of times per
    batch and its older-generation passes walk every object the process holds. `freeze=True` also moves
    what exists now (pyarrow, schema models...) out of those passes. Cycles are still collected.
    """
    old = gc.get_threshold()
    if freeze:
        gc.freeze()
    gc.set_threshold(max(old[0], gen0), old[1] if gen1 is None else gen1, old[2] if gen2 is None else gen2)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if freeze:
            gc.unfreeze()
