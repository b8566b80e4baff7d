"""Token estimates without a model-specific tokenizer (conservative for English, code and JSON)."""

from __future__ import annotations

CHARS_PER_TOKEN = 3.5
"""ASCII characters per token assumed by the estimate (real BPE tokenizers average 3.5-4.5)."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens: ASCII characters / 3.5, plus one token per non-ASCII character."""
    if not text:
        return 0
    n = len(text)
    ascii_n = len(text.encode("ascii", "ignore"))
    return int(ascii_n / CHARS_PER_TOKEN + 0.999) + (n - ascii_n)
