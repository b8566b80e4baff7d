"""Text from the logs never drives the terminal: on a terminal, stdout shows control characters.

Commands print trajectory text (a judge prompt, a query cell, a file name, a distilled rule). An escape
sequence in it (`ESC ]0;title BEL`, `ESC ]52;c;...` writes the clipboard, `ESC [2J` clears the screen,
`\\r` or U+202E hide what follows) would act on the terminal that shows it. While stdout is a terminal,
`trajlab` writes through `TerminalSafe`, which shows such characters as `\\x1b`, `\\r`, `\\u202e`; newlines
and tabs pass. Piped or redirected output is left exact (CSV, JSON and patches are data for programs).
stderr is wrapped the same way when it is a terminal (errors and warnings name files and fields, which
come from the logs), except that `\r` passes: the progress bars redraw their line with it.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ..textsafe import show_controls


def terminal_text(text: str, keep_cr: bool = False) -> str:
    """`text` with control characters other than newline and tab (and `\r` with `keep_cr`), and bidi
    controls, made visible."""
    return show_controls(text, "\n\t\r" if keep_cr else "\n\t")


class TerminalSafe:
    """A text stream in front of a terminal's stdout that makes control characters visible."""

    def __init__(self, stream: TextIO, keep_cr: bool = False) -> None:
        self._stream = stream
        self._keep_cr = keep_cr

    def write(self, text: str) -> int:
        self._stream.write(terminal_text(text, self._keep_cr))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding, errors, ...
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """Wrap sys.stdout and sys.stderr in TerminalSafe where they are a terminal (once)."""
    out, err = sys.stdout, sys.stderr
    if out is not None and not isinstance(out, TerminalSafe) and out.isatty():
        sys.stdout = TerminalSafe(out)
    if err is not None and not isinstance(err, TerminalSafe) and err.isatty():
        sys.stderr = TerminalSafe(err, keep_cr=True)
