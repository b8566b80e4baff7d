"""On a terminal, text from the logs cannot send escape sequences; piped output stays exact
(trajlab/cli/_tty.py). Runs the real `trajlab` process with its stdout on a pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from trajlab.cli._tty import TerminalSafe, terminal_text
from trajlab.store import Lab

HOSTILE_SQL = (
    "SELECT 'a' || chr(27) || ']52;c;ZXZpbA==' || chr(7) || 'b' || chr(13) || 'hidden'"
    " || chr(8238) || 'rtl' || chr(27) || '[2J' AS x"
)


def _on_a_terminal(args: list[str], stderr_too: bool = False) -> bytes:
    master, slave = pty.openpty()
    # a terminal of 120 columns (a new pty has 0, and tqdm draws no bar in 0 columns)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    p = subprocess.Popen(
        [sys.executable, "-m", "trajlab", *args],
        stdout=slave,
        stderr=slave if stderr_too else subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    assert p.wait(timeout=60) == 0, p.stderr.read() if p.stderr else ""
    os.close(master)
    return out


@pytest.fixture()
def lab(tmp_path: Path) -> str:
    return str(Lab.create(tmp_path / "lab").root)


@pytest.mark.parametrize("fmt", ["csv", "table", "json"])
def test_a_terminal_sees_escapes_as_text(lab: str, fmt: str) -> None:
    out = _on_a_terminal(["sql", lab, HOSTILE_SQL, "--format", fmt])
    assert b"\x1b" not in out and b"\x07" not in out and "\u202e".encode() not in out
    assert b"\\x1b]52;c;ZXZpbA==" in out or b"\\u001b]52" in out  # JSON escapes by itself
    assert b"\r" not in out.replace(b"\r\n", b"\n")  # the pty turns \n into \r\n; no bare \r


def test_piped_output_is_exact(lab: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "trajlab", "sql", lab, HOSTILE_SQL, "--format", "csv"],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "\x1b]52;c;ZXZpbA==\x07b\rhidden\u202ertl\x1b[2J".encode() in r.stdout


def test_terminal_text_keeps_newlines_tabs_and_unicode() -> None:
    assert terminal_text("a\tb\nc é 中 😀") == "a\tb\nc é 中 😀"
    assert terminal_text("\x1b[31m\r\x00\x7f\x9b\u200f") == "\\x1b[31m\\r\\x00\\x7f\\x9b\\u200f"


def test_the_wrapper_passes_the_stream_through() -> None:
    import io

    buf = io.StringIO()
    s = TerminalSafe(buf)  # type: ignore[arg-type]
    assert s.write("x\x1by") == 3
    s.writelines(["\x07", "z"])
    s.flush()
    assert buf.getvalue() == "x\\x1by\\x07z"


def test_file_names_from_the_corpus_reach_stderr_as_text(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "bad\x1b]0;pwned\x07name.jsonl").write_text("junk\n")
    out = _on_a_terminal(["ingest", str(runs), "--out", str(tmp_path / "lab")], stderr_too=True)
    assert b"\x1b]0" not in out and b"\x07" not in out
    assert b"bad\\x1b]0;pwned\\x07name.jsonl" in out  # the quarantine message names the file, visibly
    assert b"records seen 1 = ingested 0 + quarantined 1 (holds)" in out


def test_progress_bars_still_redraw_through_the_guard(tmp_path: Path) -> None:
    # stderr keeps \r (tqdm redraws its line with it) and tqdm's own output passes unchanged
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
    lab = tmp_path / "lab"
    _on_a_terminal(["ingest", str(fixtures), "--out", str(lab), "-q"])
    out = _on_a_terminal(["dag", str(lab)], stderr_too=True)
    assert b"\rdag:" in out and b"step/s]" in out
    assert b"\\r" not in out and b"\\x1b" not in out
