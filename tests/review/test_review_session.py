from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from review_synth import Tax, judge_row, make_lab, step_rows, traj_row

from trajlab.review import AnnotationStore, ReviewQueue, ReviewSession
from trajlab.store import Lab

ACTS = [
    ("whisper", "whisper a.wav", "hello \x1b]0;pwned\x07\x1b[31mRED", False),
    ("python", "python x.py", "42", False),
]


def build(tmp_path: Path) -> Lab:
    trajs = [(traj_row(t, 4), step_rows(t, ACTS)) for t in ("t_a", "t_b", "t_c", "t_d")]
    judges = [
        judge_row("t_a", "audio_perception", confidence=0.9),
        judge_row("t_b", "audio_perception", confidence=0.3),
        judge_row("t_c", "video_perception", confidence=0.9),
        judge_row("t_c", "tool_infrastructure", judge="rules", confidence=None, step=2),
    ]
    return make_lab(tmp_path / "lab", trajs, judges)


def run(lab: Lab, tmp_path: Path, keys: str, mode: str = "normal", **kw):
    store = AnnotationStore(tmp_path / "ann", "ds")
    q = ReviewQueue(lab, Tax(), "alice", mode=mode, store=store)
    out = io.StringIO()
    summary = ReviewSession(q, stdin=io.StringIO(keys), stdout=out, **kw).run()
    return summary, out.getvalue(), store


def test_keystrokes_make_labels(tmp_path: Path) -> None:
    lab = build(tmp_path)
    keys = (
        "a" + "looks right\n"  # t_c: accept the judge label
        "6" + "2\n" + "\n"  # t_b: tool_infrastructure (6th category), decisive step 2, no note
        "s"  # t_d: skip
        "x" + "n" + "-\n" + "not a failure\n"  # t_a: unknown key, then not_a_failure with no step
    )
    summary, out, store = run(lab, tmp_path, keys)
    assert summary.stopped_by == "done" and summary.skipped == ["t_d"]
    recs = store.records(annotator="alice")
    assert [(r.trajectory_id, r.category, r.decisive_step_index, r.review_action, r.note) for r in recs] == [
        ("t_c", "video_perception", 1, "accepted", "looks right"),
        ("t_b", "tool_infrastructure", 2, "overridden", None),
        ("t_a", "not_a_failure", None, "overridden", "not a failure"),
    ]
    assert summary.saved == [r.record_id for r in recs]
    assert "judge (llm/m, confidence 0.90): video_perception" in out
    assert "judge (video_perception) and rules judge (tool_infrastructure) disagree" in out
    assert "unknown key 'x'" in out
    assert ">> #1" in out  # the decisive step is shown
    assert "queue empty" in out and "3 label(s) saved" in out


def test_trajectory_text_cannot_drive_the_terminal(tmp_path: Path) -> None:
    lab = build(tmp_path)
    _, out, _ = run(lab, tmp_path, "q")
    assert "\x1b" not in out and "\x07" not in out
    assert "hello ]0;pwned[31mRED" in out  # the text stays visible, inert


def test_blind_session_shows_no_judge_label(tmp_path: Path) -> None:
    lab = build(tmp_path)
    summary, out, store = run(lab, tmp_path, "2" + "\n" + "blind note\n" + "q", mode="blind")
    assert "judge label hidden" in out
    assert "llm thinks" not in out and "confidence 0.9" not in out and "[a] accept" not in out
    (rec,) = store.records()
    assert (rec.trajectory_id, rec.category, rec.review_action, rec.decisive_step_index) == (
        "t_c",
        "video_perception",
        "blind",
        None,
    )
    assert summary.stopped_by == "quit"


def test_end_of_input_mid_label_saves_only_finished_labels(tmp_path: Path) -> None:
    lab = build(tmp_path)
    summary, _, store = run(lab, tmp_path, "a" + "done\n" + "3" + "1\n" + "half a no")
    assert summary.stopped_by == "eof"
    assert [r.trajectory_id for r in store.records()] == ["t_c"]


def test_limit_stops_the_session(tmp_path: Path) -> None:
    lab = build(tmp_path)
    summary, _, store = run(lab, tmp_path, "a\n" * 4, limit=2)
    assert summary.stopped_by == "limit" and len(store.records()) == 2


# -- the real command on a pseudo-terminal ---------------------------------------------------------


def _controlling_tty() -> None:
    """In the child: a new session whose controlling terminal is the pty (so Ctrl-C is SIGINT)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Pty:
    def __init__(self, args: list[str], cwd: Path):
        self.master, slave = pty.openpty()
        env = {**os.environ, "COLUMNS": "120", "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, preexec_fn=_controlling_tty
        )
        os.close(slave)
        self.buf = b""

    def expect(self, pattern: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern.encode())
        while not rx.search(self.buf):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"timed out waiting for {pattern!r}; got:\n{self.buf.decode(errors='replace')[-2000:]}"
                )
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError(
                        f"process ended before {pattern!r}:\n{self.buf.decode(errors='replace')[-2000:]}"
                    )
                self.buf += chunk
        self.buf = self.buf[rx.search(self.buf).end() :]  # type: ignore[union-attr]

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        os.close(self.master)


def review_cmd(tmp_path: Path, lab: Lab) -> list[str]:
    return [
        sys.executable,
        "-m",
        "trajlab",
        "review",
        str(lab.root),
        "--annotator",
        "alice",
        "--annotations",
        str(tmp_path / "ann"),
        "--dataset",
        "ds",
    ]


@pytest.mark.slow
def test_killing_the_review_loses_only_the_label_being_typed(tmp_path: Path) -> None:
    lab = build(tmp_path)
    p = Pty(review_cmd(tmp_path, lab), tmp_path)
    try:
        p.expect(r"\[q\] quit")
        p.send("a")  # one keystroke, no Enter: the terminal is in cbreak mode
        p.expect("note")
        p.send("first\n")
        p.expect("saved")
        p.expect(r"\[q\] quit")
        p.send("a")
        p.expect("note")
        p.send("second\n")
        p.expect("saved")
        p.expect(r"\[q\] quit")
        p.send("3")
        p.expect("decisive step")
        p.send("1\n")
        p.expect("note")
        p.send("this note is never fini")
        time.sleep(0.3)
        os.kill(p.proc.pid, signal.SIGKILL)
        assert p.proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        p.close()
    path = tmp_path / "ann" / "ds" / "alice.jsonl"
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    notes = [json.loads(x)["note"] for x in lines[:-1]]
    assert notes == ["first", "second"]
    assert AnnotationStore(tmp_path / "ann", "ds").validate(lab) == []


@pytest.mark.slow
def test_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    lab = build(tmp_path)
    p = Pty(review_cmd(tmp_path, lab), tmp_path)
    try:
        p.expect(r"\[q\] quit")
        p.send("a")
        p.expect("note")
        p.send("kept\n")
        p.expect("saved")
        p.expect(r"\[q\] quit")
        p.send("\x03")  # Ctrl-C at the key prompt
        p.expect("interrupted")
        p.expect(r"1 label\(s\) saved")
        assert p.proc.wait(timeout=30) == 0
    finally:
        p.close()
    recs = AnnotationStore(tmp_path / "ann", "ds").records()
    assert [r.note for r in recs] == ["kept"]
