"""Replace secrets in text with `[REDACTED:<kind>]` before the text leaves the machine."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ._patterns import PATTERNS, Pattern

_BEFORE = 256
"""Characters before a needle a match may start at (key names, URL schemes, PEM headers)."""
_AFTER = 2048
"""Characters after a needle searched at first; a match that reaches the window end is re-run unbounded."""


@dataclass(frozen=True)
class Finding:
    """One redacted secret: its kind and where it was in the *original* text (never the secret itself)."""

    kind: str
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def find_secrets(text: str) -> list[Finding]:
    """Non-overlapping secret spans, in text order (the earliest, then the longest, wins)."""
    spans: list[tuple[int, int, str]] = []
    lower = text.lower()
    if len(lower) != len(text):  # a few characters change length when lower-cased: scan everything
        lower = ""
    for p in PATTERNS:
        for m in _matches(p, text, lower):
            s, e = m.span(p.group)
            if e > s:
                spans.append((s, e, p.kind or m.lastgroup or "secret"))
    spans.sort(key=lambda x: (x[0], -(x[1] - x[0])))
    out: list[Finding] = []
    last_end = -1
    for s, e, kind in spans:
        if s >= last_end:
            out.append(Finding(kind, s, e))
            last_end = e
        elif e > last_end and out:
            # Overlaps the previous span and reaches further: extend it so nothing leaks.
            prev = out[-1]
            out[-1] = Finding(prev.kind, prev.start, e)
            last_end = e
    return out


def _windows(lower: str, needles: tuple[str, ...]) -> list[tuple[int, int]]:
    n = len(lower)
    hits: list[int] = []
    for needle in needles:
        i = lower.find(needle)
        while i >= 0:
            hits.append(i)
            i = lower.find(needle, i + 1)
    hits.sort()
    out: list[tuple[int, int]] = []
    for h in hits:
        s, e = max(0, h - _BEFORE), min(n, h + _AFTER)
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _matches(p: Pattern, text: str, lower: str) -> Iterator[re.Match[str]]:
    """Matches of a pattern, scanning only around its needles when it has some (fast on long text)."""
    if not p.needles or not lower:
        yield from p.regex.finditer(text)
        return
    if not any(needle in lower for needle in p.needles):  # the common case: nothing to look at
        return
    n = len(text)
    for ws, we in _windows(lower, p.needles):
        for m in p.regex.finditer(text, ws, we):
            if m.end() >= we and we < n:  # the window may have cut the match short
                full = p.regex.match(text, m.start())
                if full is not None:
                    m = full
            yield m


def redact_with_report(text: str) -> tuple[str, list[Finding]]:
    """The redacted text and what was redacted (kinds and original positions)."""
    if not text:
        return text, []
    findings = find_secrets(text)
    if not findings:
        return text, []
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos : f.start])
        parts.append(marker(f.kind))
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts), findings


def redact(text: str) -> str:
    """`text` with API keys, tokens, private keys, URL passwords and secret assignments replaced."""
    return redact_with_report(text)[0]
