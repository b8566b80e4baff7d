"""Building one long trajectory's DAG costs about the same per step at any length (no quadratic lookups)."""

from __future__ import annotations

import sys

import pytest
from dagfix import Run

import trajlab.dag._build as build
from trajlab.compiled import is_compiled


def _run(n: int, kind: str) -> Run:
    r = Run()
    r.user("process the files")
    for i in range(n):
        if kind == "patterns":  # every ffmpeg call writes a pattern of its own
            cmd = [f"echo {i} > out_{i}.txt", f"cat out_{i - 1}.txt", f"ffmpeg -i v.mp4 frames_{i}/%03d.png"]
        else:  # the same glob read again and again while files keep being written
            cmd = [f"echo {i} > out_{i}.txt", f"cat out_{i - 1}.txt", "cat out_*.txt"]
        r.bash(cmd[i % 3], "ok")
    r.say("done")
    return r


def _lines_run(r: Run) -> int:
    """Lines of the builder module executed while building (a count, not a clock: the machine is shared)."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        if frame.f_code.co_filename != build.__file__:
            return None
        if event == "line":
            count += 1
        return trace

    before = sys.gettrace()  # a coverage tracer, say
    sys.settrace(trace)
    try:
        r.dag()
    finally:
        sys.settrace(before)
    return count


@pytest.mark.skipif(
    is_compiled("trajlab.dag._build"),
    reason="counts the builder's Python lines, which the compiled build has none of; CI runs it as plain Python",
)
@pytest.mark.parametrize("kind", ["patterns", "globs"])
def test_work_grows_linearly_with_steps(kind: str) -> None:
    # before: every lookup scanned every output pattern, and every glob read every file written so far
    small, large = _lines_run(_run(300, kind)), _lines_run(_run(600, kind))
    assert large / small < 2.3, (small, large)
