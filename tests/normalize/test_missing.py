"""program_not_found: a call the shell answered with `<tool>: command not found` ran no tool."""

from __future__ import annotations

import pytest

from trajlab.normalize import program_not_found

BASH = "Exit code 127\nbash: line 1: whisper: command not found"


@pytest.mark.parametrize(
    ("tool", "exit_code", "is_error", "text"),
    [
        ("whisper", 127, True, BASH),
        ("whisper", 127, True, "/bin/sh: 1: whisper: not found"),  # dash, busybox
        ("whisper", 127, True, "zsh: command not found: whisper"),
        ("python", 127, True, "bash: python3: command not found"),  # the program's name, normalized
        ("tesseract", 127, True, "sudo: /usr/bin/tesseract: command not found"),
        ("whisper", None, True, BASH),  # runners that record no exit code but the error
        ("whisper", 127, True, "x" * 20_000 + "\nbash: whisper: command not found"),  # at the end
    ],
)
def test_the_shells_words_for_a_missing_program(tool, exit_code, is_error, text) -> None:
    assert program_not_found(tool, exit_code, is_error, text)
    assert program_not_found(tool, exit_code, is_error, None, text)  # output empty, stderr says it


@pytest.mark.parametrize(
    ("tool", "exit_code", "is_error", "text"),
    [
        ("whisper", 127, True, "bash: pip: command not found"),  # `pip install x && whisper a.wav`
        ("whisper", 1, True, "bash: whisper: command not found"),  # not the shell's status
        ("whisper", None, False, "bash: whisper: command not found"),  # it did not fail
        ("grep", 127, True, "grep: pattern not found"),
        ("grep", 1, True, "grep: foo: not found"),
        ("whisper", 127, True, "x" * 5_000 + " whisper: command not found " + "y" * 5_000),  # buried
        (None, 127, True, BASH),
        ("whisper", 127, True, None),
        ("whisper", 127, True, {"output": BASH}),  # damaged input is no text
    ],
)
def test_other_failures_are_uses(tool, exit_code, is_error, text) -> None:
    assert not program_not_found(tool, exit_code, is_error, text)
