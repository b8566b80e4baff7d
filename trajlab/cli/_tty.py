"""Text from the logs never drives the terminal: on a terminal, stdout shows control characters.

Commands print trajectory text (a judge prompt, a query cell, a file name, a distilled rule). An escape
sequence in it (`ESC ]0;title BEL`, `ESC ]52;c;...` writes the clipboard, `ESC [2J` clears the screen,
`\\r` or U+202E hide what follows) would act on the terminal that shows it. While stdout is a terminal,
`trajlab` writes through `TerminalSafe`, which shows such characters as `\\x1b`, `\\r`, `\\u202e`; newlines
and tabs pass. Piped or redirected output is left exact (CSV, JSON and patches are data for programs).
stderr is not wrapped: it carries trajlab's own progress bars, never log text (errors name files and
fields, which `terminal_text` cleans where they are formatted).
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    c = m.group()
    if c == "\r":
        return "\\r"
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def terminal_text(text: str) -> str:
    """`text` with control characters other than newline and tab, and bidi controls, made visible."""
    return text if text.isprintable() else _UNSAFE.sub(_visible, text)


class TerminalSafe:
    """A text stream in front of a terminal's stdout that makes control characters visible."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_text(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding, errors, ...
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """Wrap sys.stdout in TerminalSafe when it is a terminal (once)."""
    out = sys.stdout
    if out is not None and not isinstance(out, TerminalSafe) and out.isatty():
        sys.stdout = TerminalSafe(out)  # type: ignore[assignment]
