"""Characters that would make shown text lie about itself."""

from __future__ import annotations

import re

# Bidi embeddings, overrides and isolates reorder the text after them ("report_\u202efdp.exe" reads as
# "report_exe.pdf"): shown as a visible code point instead of obeyed. Marks (U+200E/F) are left alone.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def bidi_visible(s: str) -> str:
    """Bidi embeddings, overrides and isolates as visible `[U+202E]` markers."""
    return _BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", s)
