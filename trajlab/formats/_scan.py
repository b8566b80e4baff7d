"""Bounds for the regexes adapters run over message text, which is untrusted and may be huge.

A lazy `OPEN(.*?)CLOSE` pattern that meets many OPENs with no CLOSE after them tries each one and scans
to the end of the text every time: quadratic (20,000 unclosed `<think>` took seconds, a megabyte
minutes). No match can end after the last CLOSE, so searching only up to it is the same search, and
linear.
"""

from __future__ import annotations


def through_last(text: str, closer: str) -> int:
    """The end of the part of `text` a match ending in `closer` can lie in: just after its last
    occurrence, 0 when there is none."""
    k = text.rfind(closer)
    return 0 if k < 0 else k + len(closer)
