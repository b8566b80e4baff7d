"""What an ingest run did, per runner, and the invariant records seen = ingested + quarantined."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..textsafe import utf8_text

SHOW_QUARANTINED = 20  # quarantined records listed in the printed summary (all are in the table)
KEEP_QUARANTINED = 1000  # kept in the report object


@dataclass
class RunnerSummary:
    files: int = 0
    trajectories: int = 0
    steps: int = 0
    tool_calls: int = 0
    records_seen: int = 0
    records_ingested: int = 0
    records_quarantined: int = 0
    duplicates: int = 0
    unchanged: int = 0


@dataclass
class Quarantined:
    """One quarantined record as reported: where it is and why."""

    path: str
    line: int | None
    offset: int | None
    reason: str

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f" line {self.line}"
        if self.offset is not None:
            where += f" (byte {self.offset})"
        # reasons start with their own "<file> line N (byte M): " for readers of the table; drop it here
        reason = _LOCATION.sub("", self.reason, count=1)
        return f"{where}: {_clip(reason)}"


_LOCATION = re.compile(r"^[^:\n]+?(?: line \d+)?(?: \(byte \d+\))?: ")


def _clip(s: str, n: int = 240) -> str:
    s = s.split("\n", 1)[0]
    return s if len(s) <= n else s[: n - 1] + "…"


@dataclass
class IngestReport:
    lab: Path
    runners: dict[str, RunnerSummary] = field(default_factory=lambda: defaultdict(RunnerSummary))
    unknown: list[tuple[str, str]] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (path, duplicate of)
    missing: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not read at all
    reparsed: dict[str, int] = field(default_factory=dict)  # why (adapter changed) -> units parsed again
    skipped: int = 0
    bytes: int = 0
    seconds: float = 0.0
    generation: int = 0
    commits: int = 0

    @property
    def records_seen(self) -> int:
        return sum(r.records_seen for r in self.runners.values())

    @property
    def records_ingested(self) -> int:
        return sum(r.records_ingested for r in self.runners.values())

    @property
    def records_quarantined(self) -> int:
        return sum(r.records_quarantined for r in self.runners.values())

    @property
    def unbalanced(self) -> list[str]:
        """Runners whose records seen != ingested + quarantined (each unit balances on its own, so each
        runner must: runners off in opposite directions must not hide each other in the totals)."""
        return sorted(
            n for n, r in self.runners.items() if r.records_seen != r.records_ingested + r.records_quarantined
        )

    @property
    def invariant_holds(self) -> bool:
        return not self.unbalanced

    @property
    def totals(self) -> RunnerSummary:
        t = RunnerSummary()
        for r in self.runners.values():
            for f in fields(t):
                setattr(t, f.name, getattr(t, f.name) + getattr(r, f.name))
        return t

    def note_quarantined(self, path: str, line: int | None, offset: int | None, reason: str) -> None:
        if len(self.quarantined) < KEEP_QUARANTINED:
            self.quarantined.append(Quarantined(path, line, offset, reason))

    def format(self) -> str:
        head = (
            f"{'runner':<16} {'files':>6} {'traj':>7} {'steps':>9} {'calls':>8} {'seen':>8} {'ingested':>9} "
            f"{'quarant.':>8} {'dup':>4} {'same':>5}"
        )
        lines = [head]

        def row(name: str, r: RunnerSummary) -> str:
            return (
                f"{name:<16} {r.files:>6} {r.trajectories:>7} {r.steps:>9} {r.tool_calls:>8} {r.records_seen:>8} "
                f"{r.records_ingested:>9} {r.records_quarantined:>8} {r.duplicates:>4} {r.unchanged:>5}"
            )

        for name in sorted(self.runners):
            lines.append(row(name, self.runners[name]))
        t = self.totals
        lines.append(row("total", t))
        ok = "holds" if self.invariant_holds else "VIOLATED by " + ", ".join(self.unbalanced)
        lines.append(
            f"records seen {t.records_seen} = ingested {t.records_ingested} + quarantined "
            f"{t.records_quarantined} ({ok})"
        )
        shown = self.quarantined[:SHOW_QUARANTINED]
        for q in shown:
            lines.append(f"quarantined: {q}")
        more = t.records_quarantined - len(shown) - min(len(self.unknown), SHOW_QUARANTINED)
        if more > 0:
            lines.append(f'... {more} more quarantined records: trajlab sql LAB "select * from quarantine"')
        for path, why in self.unknown[:SHOW_QUARANTINED]:
            lines.append(f"unknown format (quarantined): {path}: {_clip(_LOCATION.sub('', why, count=1))}")
        for path, other in self.duplicates[:SHOW_QUARANTINED]:
            lines.append(f"duplicate (not ingested again): {path} = {other}")
        for why, n in sorted(self.reparsed.items()):
            lines.append(f"parsed again, bytes unchanged: {n} unit{'s' * (n != 1)} {why}")
        for path in self.missing:
            lines.append(f"missing input: {path}")
        for path in self.vanished:
            lines.append(f"vanished before it could be read: {path}")
        for path, why in self.unreadable:
            lines.append(f"not read (nothing to keep): {path} is {why}")
        if self.seconds:
            mb = self.bytes / 1e6
            lines.append(
                f"{mb:.1f} MB parsed in {self.seconds:.2f}s ({mb / self.seconds:.1f} MB/s); "
                f"lab generation {self.generation}" + ("" if self.commits else " (nothing changed)")
            )
        return utf8_text("\n".join(lines))  # a name that is not UTF-8 prints as \xNN
