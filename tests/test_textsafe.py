"""trajlab.textsafe: control and bidi characters of log text shown as escapes, except those kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trajlab.textsafe import show_controls

CONTROLS = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]] + list(
    "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


@given(st.text())
def test_nothing_unsafe_is_left_unless_kept(text: str) -> None:
    out = show_controls(text)
    assert not any(c in out for c in CONTROLS)
    kept = show_controls(text, "\n\t")
    assert not any(c in kept for c in CONTROLS if c not in "\n\t")
    assert kept.count("\n") == text.count("\n") and kept.count("\t") == text.count("\t")


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Zl", "Zp"))))
def test_printable_text_is_unchanged(text: str) -> None:
    assert show_controls(text) == text


def test_escapes() -> None:
    assert show_controls("\x1b]0;t\x07\r\n\t\x9b\u202e") == "\\x1b]0;t\\x07\\r\\n\\t\\x9b\\u202e"
    assert show_controls("a\r\nb", "\n") == "a\\r\nb"


def test_utf8_text_escapes_what_utf8_cannot_hold() -> None:
    import os

    from trajlab.textsafe import utf8_text

    assert utf8_text("plain é ✓") == "plain é ✓"
    assert utf8_text(os.fsdecode(b"run-\xff\xfe.jsonl")) == "run-\\xff\\xfe.jsonl"  # a file name's bad bytes
    assert utf8_text("cut \ud83d emoji") == "cut \ufffd emoji"  # a lone UTF-16 surrogate
    assert utf8_text("\ud83d" + os.fsdecode(b"\xfe")) == "\ufffd\\xfe"
    for s in ("a\udcffb", "\udfff", "\ud800\udc80"):
        utf8_text(s).encode("utf-8")  # always storable


@given(st.text(alphabet=st.characters(exclude_categories=())))
def test_utf8_text_is_always_storable_and_leaves_valid_text_alone(s: str) -> None:
    from trajlab.textsafe import utf8_text

    out = utf8_text(s)
    out.encode("utf-8")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return
    assert out == s
