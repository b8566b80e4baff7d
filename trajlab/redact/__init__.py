"""Secret redaction (layer 0): used by the judge, distillation and the dashboard before text leaves.

`redact(text)` replaces API keys, bearer tokens, private keys, passwords in URLs and secret
assignments (env dumps, JSON, YAML, CLI flags) with `[REDACTED:<kind>]`; `redact_with_report(text)`
also returns the findings (kind and original span, never the secret). Redaction is idempotent.
`bidi_visible(text)` shows bidi overrides as `[U+202E]` markers instead of letting them reorder what
is shown (the dashboard and figure labels apply it after redaction).
"""

from ._display import bidi_visible
from ._patterns import PATTERNS, Pattern
from ._redact import Finding, find_secrets, marker, redact, redact_with_report

__all__ = [
    "PATTERNS",
    "Finding",
    "Pattern",
    "bidi_visible",
    "find_secrets",
    "marker",
    "redact",
    "redact_with_report",
]
