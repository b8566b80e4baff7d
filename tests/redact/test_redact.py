"""Secret redaction: every kind the judge must never send, no false positives on ordinary text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajlab.redact import find_secrets, redact, redact_with_report

OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x9\nq1w2e3r4t5y6\n-----END RSA PRIVATE KEY-----"

CASES = [
    # (text, secret that must disappear, kind, text that must remain)
    (f"export OPENAI_API_KEY={OPENAI}", OPENAI, "openai_key", "export OPENAI_API_KEY="),
    (
        "ANTHROPIC_API_KEY=sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2",
        "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2",
        "anthropic_key",
        "ANTHROPIC_API_KEY=",
    ),
    (f"token: {GITHUB}", GITHUB, "github_token", "token: "),
    (f"aws_access_key_id = {AWS_ID}", AWS_ID, "aws_access_key_id", "aws_access_key_id = "),
    (
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "secret_assignment",
        "aws_secret_access_key=",
    ),
    (
        "curl -H 'Authorization: Bearer q8w7e6r5t4y3u2i1o0p9' https://x",
        "q8w7e6r5t4y3u2i1o0p9",
        "bearer_token",
        "Authorization: Bearer ",
    ),
    (
        "git clone https://alice:s3cr3tP4ss@github.com/org/r.git",
        "s3cr3tP4ss",
        "url_password",
        "https://alice:",
    ),
    ("DATABASE_URL=postgres://admin:hunter22@db:5432/prod", "hunter22", "url_password", "@db:5432/prod"),
    (
        '{"api_key": "AbC123xyz987", "max_tokens": 100}',
        "AbC123xyz987",
        "secret_assignment",
        '"max_tokens": 100',
    ),
    ("DB_PASSWORD=hunter2\nHOME=/root", "hunter2", "secret_assignment", "HOME=/root"),
    (f"key file:\n{PEM}\ndone", "MIIEowIBAAKCAQEA7x9", "private_key", "done"),
    (
        "https://h/cb?x=1&access_token=abcd1234efgh",
        "abcd1234efgh",
        "url_param",
        "https://h/cb?x=1&access_token=",
    ),
    ("mysql --password secretpw -u root", "secretpw", "secret_flag", "-u root"),
    # found leaking into judge requests: basic auth on the command line, a DSN without user name, and
    # a secret inside a JSON string of JSON (a tool's arguments logged as text)
    ("curl -u admin:Passw0rd123 https://x", "Passw0rd123", "basic_auth", "curl -u admin:"),
    ("curl -s --user 'bob:s3cr3t!!' https://x", "s3cr3t!!", "basic_auth", "'bob:"),
    ("wget --proxy-user=me:hunter22 http://x", "hunter22", "basic_auth", "--proxy-user=me:"),
    ("REDIS_URL=redis://:pass1234@cache:6379/0", "pass1234", "url_password", "@cache:6379/0"),
    (
        r'{"cmd": "run", "env": "{\"api_key\": \"AbC123xyz987\"}"}',
        "AbC123xyz987",
        "secret_assignment",
        r"{\"api_key\": \"",
    ),
    (f"Cookie header had {JWT} in it", JWT, "jwt", "in it"),
    ("SLACK_BOT=xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij", "slack_token", "SLACK_BOT="),
    (
        "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789",
        "hf_abcdefghijklmnopqrstuvwxyz0123456789",
        "huggingface_token",
        "HF_TOKEN=",
    ),
]


@pytest.mark.parametrize(("text", "secret", "kind", "kept"), CASES)
def test_each_secret_kind_is_redacted(text: str, secret: str, kind: str, kept: str) -> None:
    out, findings = redact_with_report(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert kept in out
    assert kind in [f.kind for f in findings]
    # Findings point at the secret in the original text, and never carry it.
    f = next(f for f in findings if f.kind == kind)
    assert secret in text[f.start : f.end] or text[f.start : f.end] in secret
    assert not hasattr(f, "text")


def test_env_dump_keeps_ordinary_variables() -> None:
    env = "\n".join(
        [
            "HOME=/home/agent",
            "PATH=/usr/local/bin:/usr/bin",
            f"OPENAI_API_KEY={OPENAI}",
            "GITHUB_TOKEN=" + GITHUB,
            "AWS_SECRET_ACCESS_KEY=abcdEFGHijklMNOPqrstUVWXyz0123456789abcd",
            "SMTP_PASSWORD=correct-horse",
            "LANG=C.UTF-8",
            "TOKEN_LIMIT=4096",
            "MAX_TOKENS=100",
        ]
    )
    out = redact(env)
    assert out.splitlines() == [
        "HOME=/home/agent",
        "PATH=/usr/local/bin:/usr/bin",
        "OPENAI_API_KEY=[REDACTED:openai_key]",
        "GITHUB_TOKEN=[REDACTED:github_token]",
        "AWS_SECRET_ACCESS_KEY=[REDACTED:secret_assignment]",
        "SMTP_PASSWORD=[REDACTED:secret_assignment]",
        "LANG=C.UTF-8",
        "TOKEN_LIMIT=4096",
        "MAX_TOKENS=100",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "ffmpeg -i input.mp4 -vf fps=1 frames/%03d.png",
        "The password field was empty and the token budget is 500 tokens.",
        '{"input_tokens": 1234, "output_tokens": 56, "cached_tokens": 0}',
        "whisper audio.wav --model base --language en --output_dir out",
        "https://example.com/path?q=search+terms&page=2",
        "Traceback (most recent call last):\n  File \"a.py\", line 3\nKeyError: 'secret_sauce'",
        "password: ''",
        "sk-short",
        "sort -u a:b c:d && uniq -u x:y",  # -u of other programs, not curl's user:password
        "curl -u admin https://x",  # curl asks for the password: nothing to hide
        "http://host:8080/path@x",
        "curl https://example.com:443/a -o out.json",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text
    assert find_secrets(text) == []


def test_unterminated_private_key_is_redacted_to_the_end() -> None:
    text = "cat id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU"
    out = redact(text)
    assert out == "cat id_rsa\n[REDACTED:private_key]"


def test_empty_and_none_like_inputs() -> None:
    assert redact("") == ""
    assert redact_with_report("") == ("", [])


_filler = st.text(
    alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd", "Zs"), whitelist_characters="\n.,:/-"),
    max_size=80,
)
_secret = st.sampled_from([OPENAI, GITHUB, AWS_ID, JWT, "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"])


@settings(max_examples=200, deadline=None)
@given(_filler, _secret, _filler)
def test_known_tokens_never_survive_in_any_context(before: str, secret: str, after: str) -> None:
    text = f"{before} {secret} {after}"
    out = redact(text)
    assert secret not in out
    assert redact(out) == out  # idempotent


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_redaction_is_idempotent_on_arbitrary_text(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


def test_secrets_longer_than_the_search_window_are_redacted_whole() -> None:
    # The regexes run in windows around cheap needles; a match cut by a window is re-run unbounded.
    long_token = "z" * 5000
    text = "A" * 3000 + " Authorization: Bearer " + long_token + " tail"
    out = redact(text)
    assert out.endswith("Authorization: Bearer [REDACTED:bearer_token] tail")
    pem = (
        "junk " * 10
        + "-----BEGIN RSA PRIVATE KEY-----\n"
        + "Q" * 6000
        + "\n-----END RSA PRIVATE KEY-----\nok"
    )
    assert redact(pem) == "junk " * 10 + "[REDACTED:private_key]\nok"


def test_text_whose_lowercase_changes_length_is_still_scanned() -> None:
    text = "İstanbul DB_PASSWORD=hunter2 İ"
    assert redact(text) == "İstanbul DB_PASSWORD=[REDACTED:secret_assignment] İ"


def test_bidi_overrides_are_shown_not_obeyed() -> None:
    from trajlab.redact import bidi_visible

    assert bidi_visible("report_\u202efdp.exe") == "report_[U+202E]fdp.exe"
    assert bidi_visible("a\u2066b\u2069c\u202a") == "a[U+2066]b[U+2069]c[U+202A]"
    # marks, Hebrew text and emoji joiners are ordinary text
    plain = "\u200fשלום\u200e 👩\u200d💻"
    assert bidi_visible(plain) == plain


def test_figure_labels_are_redacted_inert_and_show_bidi_overrides() -> None:
    from trajlab.figures._style import safe_text

    label = safe_text('<a href="https://x.invalid">m</a>\u202e sk-proj-' + "A" * 40, limit=200)
    assert "<" not in label and ">" not in label
    assert "[U+202E]" in label and "\u202e" not in label
    assert "sk-proj-AAAA" not in label and "[REDACTED:" in label
