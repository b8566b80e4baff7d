"""Trajectory text as display data: secrets redacted, control characters removed, bidi overrides made
visible, length bounded.

Everything the dashboard shows from a trajectory goes through these helpers and is then passed to
Dash as a plain string child (React renders it as a text node), never as HTML or Markdown.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from ..redact import bidi_visible, redact

_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CTRL_LINE = re.compile(r"[\x00-\x1f\x7f]+")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")

_MARGIN = 2048
"""Characters before a cut head's end that are never shown (the redaction window after a needle)."""

MAX_BLOCK = 60_000
"""Characters of one output/argument block shown in the step inspector (the rest is cut, and says so)."""


def clean_block(text: Any, limit: int = MAX_BLOCK, secrets: bool = True) -> str:
    """Multi-line text for a <pre>: redacted, ANSI escapes and control characters (but newlines and
    tabs) removed, cut at `limit` characters with a note of how much was left out.

    Only a head of `4 * limit` characters is cleaned, so a 2 MB output costs what a 240 kB one does
    (redacting 2 MB of secret-looking words took ~2.5 s per view). When escapes shrink that head so
    much that its end would show, the last `_MARGIN` characters are held back: a secret cut in two
    by the head's end is never shown half-redacted.
    """
    if text is None:
        return ""
    raw = str(text)
    head = raw[: 4 * limit]
    rest = len(raw) - len(head)
    s = redact(head) if secrets else head
    s = bidi_visible(_CTRL.sub("", _ANSI.sub("", s)))
    if rest and len(s) < limit + _MARGIN:
        rest += min(len(s), _MARGIN)
        s = s[: len(s) - min(len(s), _MARGIN)]
    if len(s) > limit or rest:
        more = max(len(s) - limit, 0) + rest
        if len(raw) > limit:  # redaction markers can outgrow what they replace
            more = min(more, len(raw) - limit)
        s = s[:limit] + f"\n… [{more:,} more characters not shown]"
    return s


def clean_line(text: Any, limit: int = 160, secrets: bool = True) -> str:
    """One line of text (table cell, node label): redacted, whitespace runs collapsed, cut with an ellipsis.

    Only a bounded head of the text is redacted (`4 * limit` characters), so a huge output costs
    no more than a short one; a secret starting past that head is never shown anyway.
    """
    if text is None:
        return ""
    s = str(text)[: max(4 * limit, 400)]
    if secrets:
        s = redact(s)
    s = " ".join(bidi_visible(_CTRL_LINE.sub(" ", _ANSI.sub("", s))).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def pretty_json(text: Any, limit: int = MAX_BLOCK, secrets: bool = True) -> str:
    """A JSON arguments string indented for reading (as is when it is not JSON)."""
    if text is None:
        return ""
    s = str(text)
    with contextlib.suppress(ValueError, TypeError):
        s = json.dumps(json.loads(s), indent=2, ensure_ascii=False)
    return clean_block(s, limit, secrets)


def fmt_num(v: Any, digits: int = 2) -> str:
    """Numbers for tables: thousands separators, a few decimals, empty for null/NaN."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:  # NaN
            return ""
        return f"{v:,.{digits}f}"
    return str(v)


def fmt_seconds(v: float | None) -> str:
    if v is None or v != v:
        return ""
    if v < 1:
        return f"{v * 1000:.0f} ms"
    if v < 120:
        return f"{v:.1f} s"
    return f"{v / 60:.1f} min"
