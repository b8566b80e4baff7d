"""Calls of a program the shell could not find: an attempt to use the tool, not a use of it.

`whisper audio.wav` answered by `bash: line 1: whisper: command not found` (exit 127) ran no whisper;
counted as a whisper call it would make a missing tool look like a tool that failed runs use. Ingest
numbers such calls `tool_seq = 0`, and the tool-use analyses (`gaps`) leave them out.
"""

from __future__ import annotations

import re
from typing import Any

from ._resolve import program_name

NOT_FOUND_EXIT = 127
"""The exit status POSIX shells give a command they cannot find."""

_NOT_FOUND_RE = re.compile(
    # bash "bash: line 1: whisper: command not found", dash and busybox "sh: 1: whisper: not found",
    # sudo "sudo: whisper: command not found", zsh "zsh: command not found: whisper"
    r"(?:^|[\s:'\"])([\w.+/-]+): (?:command )?not found\b(?!:)|command not found: ([\w.+/-]+)",
    re.M,
)
_EDGE_CHARS = 4_000
"""Only the head and the tail of an output are searched: the shell's message comes first when the
program was the first command, last when it ended the command line (exit 127 is the last command's)."""


def program_not_found(tool: str | None, exit_code: Any, is_error: Any, *texts: Any) -> bool:
    """Whether a call named `tool` failed because the shell found no such program: exit 127 (or no exit
    code and an error), and the output or stderr says `<tool>: command not found` in one of the shells'
    words. Another program's message (`pip: command not found` in `pip install x && whisper a.wav`) or
    a program's own exit 127 without that message is not enough."""
    if tool is None or not (exit_code == NOT_FOUND_EXIT or (exit_code is None and is_error)):
        return False
    for text in texts:
        if type(text) is not str or "not found" not in text:
            continue
        edges = text if len(text) <= 2 * _EDGE_CHARS else text[:_EDGE_CHARS] + "\n" + text[-_EDGE_CHARS:]
        for m in _NOT_FOUND_RE.finditer(edges):
            if program_name(m.group(1) or m.group(2)) == tool:
                return True
    return False
