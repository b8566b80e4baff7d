import gc

import pytest

from trajlab.gcutil import fewer_gc_passes


def test_thresholds_raised_inside_and_restored_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), fewer_gc_passes(50_000, 20, 100, freeze=True):
        assert gc.get_threshold() == (50_000, 20, 100)
        assert gc.get_freeze_count() > 0
        raise RuntimeError("boom")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_never_lowers_the_first_threshold() -> None:
    before = gc.get_threshold()
    gc.set_threshold(200_000, before[1], before[2])
    try:
        with fewer_gc_passes(100_000):
            assert gc.get_threshold() == (200_000, before[1], before[2])
    finally:
        gc.set_threshold(*before)
