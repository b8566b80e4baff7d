"""Control characters of text from the logs, made visible (`\\x1b`, `\\r`, `\\u202e`); text that is
not valid UTF-8 made storable.

Trajectory text is data: an escape sequence in a step's output must not recolor, retitle or write the
clipboard of the terminal that shows it, and a bidi override (U+202E) must not reorder what follows.
`show_controls` writes C0/C1 control characters and the bidi controls as visible escapes; `keep`
names the ones that pass (a terminal stream keeps newlines and tabs; a table cell keeps none).
"""

from __future__ import annotations

import re
from functools import lru_cache

_CONTROLS = "\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


@lru_cache(maxsize=8)
def _pattern(keep: str) -> re.Pattern[str]:
    if not keep:
        return re.compile(f"[{_CONTROLS}]")
    return re.compile(f"(?![{re.escape(keep)}])[{_CONTROLS}]")


def _visible(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def show_controls(text: str, keep: str = "") -> str:
    """`text` with control and bidi characters other than those in `keep` written as escapes."""
    if text.isprintable():
        return text
    return _pattern(keep).sub(_visible, text)


def utf8_text(s: str) -> str:
    """`s` as valid UTF-8 text. Python holds the bytes of a file name that are not UTF-8 as lone
    surrogates U+DC80-U+DCFF, which Arrow, Parquet and a UTF-8 terminal refuse: they become `\\xNN`.
    Other lone surrogates (a `\\ud83d` escape of a cut emoji) become U+FFFD. Valid text is returned as is."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return s
    if any(0xD800 <= ord(c) < 0xDC80 or 0xDD00 <= ord(c) < 0xE000 for c in s):
        s = "".join("\ufffd" if 0xD800 <= ord(c) < 0xDC80 or 0xDD00 <= ord(c) < 0xE000 else c for c in s)
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
