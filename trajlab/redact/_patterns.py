"""The secret patterns. Each yields the span of the secret itself (the label around it is kept)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Pattern:
    kind: str
    """Kind reported in findings; empty = the name of the regex group that matched."""
    regex: re.Pattern[str]
    group: int | str = 0
    """Which group is the secret (0 = the whole match)."""
    needles: tuple[str, ...] = ()
    """Lower-case literals every match contains; the regex only runs near them (empty = everywhere)."""


_NOT_REDACTED = r"(?!\[REDACTED)"

# Key names that hold secrets when they appear as `NAME=value`, `name: value` or `"name": "value"`.
# A name matches when one of its `_ . -` separated words is a secret word, so `GITHUB_TOKEN`,
# `db.password` and `x-api-key` match but `max_tokens` and `input_tokens` do not.
_SECRET_WORDS = (
    r"password|passwd|passphrase|pwd|secret|token|apikey|api[_-]?key|access[_-]?key(?:[_-]?id)?"
    r"|secret[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth|authorization|session[_-]?key"
    r"|signing[_-]?key|encryption[_-]?key|connection[_-]?string|dsn|cookie"
)
_KEY = rf"(?<![A-Za-z0-9_.-])(?:[A-Za-z0-9]+[_.-])*(?:{_SECRET_WORDS})(?![A-Za-z0-9])(?:[_.-][A-Za-z0-9]+)*"

_KEY_NEEDLES = ("pass", "pwd", "secret", "token", "key", "credential", "auth", "dsn", "cookie")

_TOKENS = re.compile(
    r"\b(?:"
    r"(?P<anthropic_key>sk-ant-[A-Za-z0-9_-]{20,})"
    r"|"
    r"(?P<openai_key>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})"
    r"|"
    r"(?P<github_token>(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}))"
    r"|"
    r"(?P<gitlab_token>glpat-[A-Za-z0-9_-]{20,})"
    r"|"
    r"(?P<aws_access_key_id>(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b)"
    r"|"
    r"(?P<slack_token>xox[abposr]-[A-Za-z0-9-]{10,})"
    r"|"
    r"(?P<google_api_key>AIza[0-9A-Za-z_-]{35})"
    r"|"
    r"(?P<huggingface_token>hf_[A-Za-z0-9]{30,})"
    r"|"
    r"(?P<stripe_key>(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,})"
    r"|"
    r"(?P<npm_token>npm_[A-Za-z0-9]{36})"
    r"|"
    r"(?P<jwt>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
    r")"
)

PATTERNS: list[Pattern] = [
    Pattern(
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)"
        ),
        0,
        ("private key",),
    ),
    # Well-known token formats, recognisable anywhere: one alternation (the group name is the kind).
    Pattern(
        "",
        _TOKENS,
        0,
        (
            "sk-",
            "gh",
            "github_pat_",
            "glpat-",
            "akia",
            "asia",
            "agpa",
            "aida",
            "aroa",
            "xox",
            "aiza",
            "hf_",
            "_live_",
            "_test_",
            "npm_",
            "eyj",
        ),
    ),
    # Authorization headers and bearer tokens.
    Pattern(
        "bearer_token",
        re.compile(rf"(?i)\b(?:bearer|token|basic)\s+{_NOT_REDACTED}(?P<s>[A-Za-z0-9._~+/=-]{{12,}})"),
        "s",
        ("bearer", "token", "basic"),
    ),
    # user:password@host in URLs (database DSNs, git remotes, proxies).
    Pattern(
        "url_password",
        # the user may be empty: redis://:password@host
        re.compile(rf"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]*:{_NOT_REDACTED}(?P<s>[^\s/@]+)@"),
        "s",
        ("://",),
    ),
    # ?password=...&token=... in query strings.
    Pattern(
        "url_param",
        re.compile(
            rf"(?i)[?&](?:password|passwd|pwd|token|access_token|api_key|apikey|key|secret|sig|signature)"
            rf"={_NOT_REDACTED}(?P<s>[^&\s#\"']{{4,}})"
        ),
        "s",
        ("?", "&"),
    ),
    # "api_key": "value"  /  'password': 'value'  (JSON, Python dicts, YAML with quotes)
    Pattern(
        "secret_assignment",
        re.compile(
            rf"(?i)([\"']){_KEY}\1\s*[:=]\s*([\"']){_NOT_REDACTED}(?P<s>(?:(?!\2)[^\\\n]|\\.){{4,}}?)\2"
        ),
        "s",
        _KEY_NEEDLES,
    ),
    # The same inside a JSON string of JSON (a tool's `arguments` logged as text): {\"api_key\": \"v\"}
    Pattern(
        "secret_assignment",
        re.compile(rf'(?i)\\+"{_KEY}\\+"\s*:\s*\\+"{_NOT_REDACTED}(?P<s>[^\\"\n]{{4,}})\\+"'),
        "s",
        _KEY_NEEDLES,
    ),
    # curl -u user:password, wget --user=..., --proxy-user user:password
    Pattern(
        "basic_auth",
        re.compile(
            # up to 12 other words between the program and the flag, taken word by word (cheap)
            r"(?i)\b(?:curl|wget)(?:[ \t]+(?!-u|--user|--proxy-user)[^\s;|&]+){0,12}[ \t]+"
            r"(?:-u|--user|--proxy-user)(?:[ \t]+|=)?"
            rf"([\"']?)[^\s:\"'@]+:{_NOT_REDACTED}(?P<s>[^\s\"']{{3,}})\1"
        ),
        "s",
        ("curl", "wget"),
    ),
    # NAME=value, export NAME=value, name: value (env dumps, .env files, YAML, CLI flags)
    Pattern(
        "secret_assignment",
        re.compile(
            rf"(?i)(?<![A-Za-z0-9_.-]){_KEY}(?:\s*[:=]\s*|\s+(?=[\"']))([\"']?){_NOT_REDACTED}"
            rf"(?P<s>(?!(?:true|false|null|none|\d+)\b)(?!(?:bearer|basic|token)\s)[^\s\"',;&]{{4,}})"
        ),
        "s",
        _KEY_NEEDLES,
    ),
    # --password foo / --token=foo / -p style flags are covered above only for `=`; handle the space form.
    Pattern(
        "secret_flag",
        re.compile(
            rf"(?i)--(?:password|passwd|token|api-key|apikey|secret|access-key|auth-token)[ =]{_NOT_REDACTED}"
            r"(?P<s>[^\s\"']{4,})"
        ),
        "s",
        ("--",),
    ),
]
