"""parse_shell's fast-path test: the split checks decide exactly as the single regex they replace."""

from __future__ import annotations

import re

import pytest

from trajlab.normalize import _shell

ORIGINAL = re.compile(r"[\"\\$`#()<>{}]|[^\S \t]|\[\[|\bcase\b")
ORIGINAL_CHARS = re.compile(r"[\"\\$`#()<>{}]|[^\S \t]")


def test_character_class_matches_the_same_code_points() -> None:
    differ = [
        hex(i)
        for i in range(0x110000)
        if (ORIGINAL_CHARS.search(chr(i)) is None) != (_shell._COMPLEX_CHAR.search(chr(i)) is None)
    ]
    assert differ == []


def _split_checks(s: str) -> bool:
    return (
        _shell._COMPLEX_CHAR.search(s) is None
        and "[[" not in s
        and ("case" not in s or _shell._CASE_WORD.search(s) is None)
    )


@pytest.mark.parametrize(
    "s",
    [
        "ls -la",
        "grep -rn foo src | head -5",
        "echo $HOME",
        "a\u00a0b",
        "a\u2003b",
        "x\ty",
        "line1\nline2",
        "[[ -f x ]] && cat x",
        "[ -f x ]",
        "case x in a) echo;; esac",
        "showcase run",
        "lowercase_x",
        "my-case",
        "case",
        "caseload",
        "é case é",
        "{ a; }",
        "cat 'a b'",
    ],
)
def test_same_decision_as_the_single_regex(s: str) -> None:
    assert _split_checks(s) == (ORIGINAL.search(s) is None)
