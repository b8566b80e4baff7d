"""The terminal review loop behind `trajlab review`: show an item, take one keystroke, then a note.

Each label is appended (and fsynced) the moment its note is entered, so a crash or Ctrl-C loses at
most the label being typed. Input and output are injectable streams, so tests drive the loop without
a terminal; on a real terminal keys are read one at a time (cbreak mode, Ctrl-C still interrupts).
Trajectory text is data: control characters are stripped before anything reaches the terminal.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import IO, Any

from ..errors import TrajlabError
from ..schema import NOT_A_FAILURE, UNSURE
from ._queue import QueueError, ReviewItem, ReviewQueue
from ._taxo import category_name

RESERVED = {"a": "accept", "n": NOT_A_FAILURE, "u": UNSURE, "s": "skip", "q": "quit", "?": "help"}
_LETTERS = [c for c in "bcdefghijklmoprtvwxyz" if c not in RESERVED]
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: Any, limit: int | None = None) -> str:
    """Trajectory text made safe for a terminal: no escape sequences or control characters."""
    s = _CONTROL.sub("", "" if text is None else str(text))
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def category_keys(category_ids: list[str]) -> dict[str, str]:
    """key -> category: digits 1-9, then letters not used by the fixed commands."""
    keys = [*"123456789", *_LETTERS]
    if len(category_ids) > len(keys):
        raise TrajlabError(f"a taxonomy with {len(category_ids)} categories has too many for one-key review")
    out = dict(zip(keys, category_ids))
    out["n"] = NOT_A_FAILURE
    out["u"] = UNSURE
    return out


@dataclass
class SessionSummary:
    saved: list[str] = field(default_factory=list)  # record ids, in order
    skipped: list[str] = field(default_factory=list)
    stopped_by: str = "done"  # done | quit | interrupt | eof | limit


class ReviewSession:
    """Runs the review loop of a `ReviewQueue` over an input and an output stream."""

    def __init__(
        self,
        queue: ReviewQueue,
        stdin: IO[str] | None = None,
        stdout: IO[str] | None = None,
        limit: int | None = None,
        dag_lines: int = 30,
    ):
        self.queue = queue
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        self.limit = limit
        self.dag_lines = dag_lines
        self.keys = category_keys(list(queue.taxonomy.category_ids))
        try:
            self._tty = self.stdin.isatty()
        except (AttributeError, ValueError):
            self._tty = False
        self._saved_attrs: Any = None

    # -- io ----------------------------------------------------------------------------------------

    def _say(self, text: str = "") -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def _cbreak(self) -> None:
        """On a terminal: keys arrive one at a time, unechoed (Ctrl-C still interrupts)."""
        if self._tty and self._saved_attrs is not None:
            import tty

            tty.setcbreak(self.stdin.fileno())

    def _restore(self) -> None:
        if self._tty and self._saved_attrs is not None:
            import termios

            termios.tcsetattr(self.stdin.fileno(), termios.TCSADRAIN, self._saved_attrs)

    def _read_key(self) -> str:
        while True:
            if self._tty:
                raw = os.read(self.stdin.fileno(), 1)
                ch = raw.decode("utf-8", "replace")
            else:
                ch = self.stdin.read(1)
            if ch == "":
                raise EOFError
            if ch not in " \r\n\t":
                return ch.lower()

    def _read_line(self, prompt: str) -> str:
        """A whole line (typed with echo and editing); a line cut off by end of input is not one."""
        self._restore()
        try:
            self.stdout.write(prompt)
            self.stdout.flush()
            if self._tty:
                line = _read_tty_line(self.stdin.fileno())
            else:
                line = self.stdin.readline()
        finally:
            self._cbreak()
        if not line.endswith("\n"):
            raise EOFError
        return clean(line.rstrip("\r\n")).strip()

    # -- rendering ---------------------------------------------------------------------------------

    def _steps(self, tid: str) -> list[dict[str, Any]]:
        return self.queue.lab.read_trajectory_steps(tid).to_pylist()

    def _dag_text(self, tid: str, steps: list[dict[str, Any]]) -> str:
        try:
            from ..dag import load_dag, render_text

            return render_text(load_dag(self.queue.lab, tid), steps)
        except (ImportError, TrajlabError):
            return "\n".join(_step_line(s) for s in steps)

    def render(self, item: ReviewItem) -> str:
        steps = self._steps(item.trajectory_id)
        by_index = {s["step_index"]: s for s in steps}
        lines = [
            "=" * 78,
            f"{item.trajectory_id}  priority {item.priority:.2f}  reviews {item.n_reviews}/"
            f"{self.queue.reviewers_per_item}" + (f"  ({'; '.join(item.reasons)})" if item.reasons else ""),
            f"task: {clean(item.task, 600)}",
            f"outcome: {item.outcome}   benchmark: {item.benchmark or '-'}   domain: {item.domain or '-'}   "
            f"steps: {item.n_steps}",
            f"final answer: {clean(item.final_answer, 200)}",
        ]
        j = item.judge
        if j is not None:
            name = category_name(self.queue.taxonomy, j.category) if j.category else "-"
            conf = "-" if j.confidence is None else f"{j.confidence:.2f}"
            lines += [
                f"judge ({j.judge}{'/' + j.model if j.model else ''}, confidence {conf}): "
                f"{j.category} ({name}), decisive step {j.decisive_step_index}, evidence {j.evidence_steps}",
                f"  rationale: {clean(j.rationale, 400)}",
            ]
        elif self.queue.blind:
            lines.append("judge label hidden (blind review)")
        dag = clean_lines(self._dag_text(item.trajectory_id, steps))
        shown = dag[: self.dag_lines]
        lines += ["-- DAG " + "-" * 71, *shown]
        if len(dag) > len(shown):
            lines.append(
                f"... {len(dag) - len(shown)} more lines (trajlab dag show LAB {item.trajectory_id})"
            )
        if j is not None and j.decisive_step_index is not None:
            lines.append("-- decisive step and evidence " + "-" * 48)
            for k in [j.decisive_step_index, *[e for e in j.evidence_steps if e != j.decisive_step_index]]:
                s = by_index.get(k)
                if s is not None:
                    mark = ">>" if k == j.decisive_step_index else " *"
                    lines.append(f"{mark} {_step_line(s, output=300)}")
        return "\n".join(lines)

    def _help(self, item: ReviewItem) -> str:
        cats = "  ".join(f"[{k}] {c}" for k, c in self.keys.items() if c not in (NOT_A_FAILURE, UNSURE))
        accept = "[a] accept judge label  " if item.judge is not None else ""
        return f"{cats}\n{accept}[n] not a failure  [u] unsure  [s] skip  [q] quit  [?] help"

    # -- loop --------------------------------------------------------------------------------------

    def run(self) -> SessionSummary:
        summary = SessionSummary()
        if self._tty:
            import termios

            self._saved_attrs = termios.tcgetattr(self.stdin.fileno())
            self._cbreak()  # before the first prompt, so no early keystroke is line-buffered
        try:
            while True:
                if self.limit is not None and len(summary.saved) >= self.limit:
                    summary.stopped_by = "limit"
                    break
                item = next((i for i in self.queue.items() if i.trajectory_id not in summary.skipped), None)
                if item is None:
                    summary.stopped_by = "done"
                    self._say("queue empty: nothing left for you to review")
                    break
                self._say(self.render(item))
                self._say(self._help(item))
                outcome = self._one(item)
                if outcome == "quit":
                    summary.stopped_by = "quit"
                    break
                if outcome == "skip":
                    summary.skipped.append(item.trajectory_id)
                    continue
                summary.saved.append(outcome)
        except KeyboardInterrupt:
            summary.stopped_by = "interrupt"
            self._say("\ninterrupted: the label being typed was not saved")
        except EOFError:
            summary.stopped_by = "eof"
        finally:
            self._restore()
        path = self.queue.store.path_for(self.queue.annotator)
        self._say(f"{len(summary.saved)} label(s) saved to {path}")
        return summary

    def _one(self, item: ReviewItem) -> str:
        """Returns "quit", "skip", or the saved record id."""
        while True:
            key = self._read_key()
            action = RESERVED.get(key)
            if action == "quit":
                return "quit"
            if action == "skip":
                return "skip"
            if action == "help":
                self._say(self._help(item))
                continue
            if action == "accept":
                if item.judge is None or item.judge.category is None:
                    self._say("no judge label to accept here: pick a category")
                    continue
                category, accept = item.judge.category, True
            elif key in self.keys:
                category, accept = self.keys[key], False
            else:
                self._say(f"unknown key {key!r}; [?] for help")
                continue
            decisive = None
            if not accept and category != UNSURE:
                decisive = self._ask_step(item)
            note = self._read_line("note (enter to skip): ")
            try:
                rec = self.queue.submit(
                    item, category, accept=accept, decisive_step_index=decisive, note=note or None
                )
            except QueueError as e:
                self._say(f"not saved: {e}")
                return "skip"
            self._say(f"saved {rec.category} ({rec.review_action or 'new'}) as {rec.record_id}")
            return str(rec.record_id)

    def _ask_step(self, item: ReviewItem) -> int | None:
        default = item.judge.decisive_step_index if item.judge is not None else None
        shown = "none" if default is None else str(default)
        while True:
            text = self._read_line(
                f"decisive step (0-{max(item.n_steps - 1, 0)}, enter = {shown}, - = none): "
            )
            if text == "":
                return default
            if text == "-":
                return None
            if text.isdigit() and int(text) < max(item.n_steps, 1):
                return int(text)
            self._say(f"not a step of this trajectory: {text!r}")


def _read_tty_line(fd: int) -> str:
    """Read a canonical-mode line from a terminal fd byte by byte (no buffering past the newline)."""
    data = b""
    while not data.endswith(b"\n"):
        b = os.read(fd, 1024)
        if not b:
            break
        data += b
    return data.decode("utf-8", "replace")


def clean_lines(text: str) -> list[str]:
    return [clean(line) for line in text.splitlines()]


def _step_line(s: dict[str, Any], output: int = 80) -> str:
    status = "ERROR" if s.get("is_error") else "timeout" if s.get("timed_out") else "ok"
    what = s.get("command") or s.get("text") or s.get("arguments") or ""
    tool = s.get("tool") or s.get("tool_name") or ""
    line = f"#{s['step_index']:<3} {s['kind']:<10} {tool:<10} {clean(what, 90)}"
    if s["kind"] == "tool_call":
        line += f"  [{status}] -> {clean(s.get('output'), output)}"
    return line.replace("\n", " ")
