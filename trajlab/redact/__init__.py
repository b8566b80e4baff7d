"""Secret redaction (layer 0): used by the judge, distillation and the dashboard before text leaves.

`redact(text)` replaces API keys, bearer tokens, private keys, passwords in URLs and secret
assignments (env dumps, JSON, YAML, CLI flags) with `[REDACTED:<kind>]`; `redact_with_report(text)`
also returns the findings (kind and original span, never the secret). Redaction is idempotent.
"""

from ._patterns import PATTERNS, Pattern
from ._redact import Finding, find_secrets, marker, redact, redact_with_report

__all__ = ["PATTERNS", "Finding", "Pattern", "find_secrets", "marker", "redact", "redact_with_report"]
