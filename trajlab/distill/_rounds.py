"""Calibration tasks, per-task and per-round results, and the scores `iterate` compares."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputFileError
from ._skill import Skill


def read_tasks(path: str | Path) -> list[str]:
    """Task ids from a file: JSONL objects with `task_id` (or `id`), or one id per line (# comments)."""
    p = Path(path)
    if not p.is_file():
        raise InputFileError(str(p), "no such task file")
    out: list[str] = []
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputFileError(str(p), f"not UTF-8 ({e.reason} at byte {e.start})") from None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("{"):
            try:
                obj = json.loads(s)
            except json.JSONDecodeError as e:
                raise InputFileError(str(p), f"not valid JSON: {e}", n) from None
            tid = obj.get("task_id") or obj.get("id")
            if not isinstance(tid, str) or not tid:
                raise InputFileError(str(p), "object without a `task_id` string", n)
            out.append(tid)
        else:
            out.append(s)
    if not out:
        raise InputFileError(str(p), "no tasks in file")
    if len(set(out)) != len(out):
        raise InputFileError(str(p), "a task id is listed twice")
    bad = [t for t in out if "/" in t or t in (".", "..") or "\0" in t]
    if bad:
        raise InputFileError(str(p), f"task ids must not contain '/': {bad[0]!r}")
    return out


def empty_skill(name: str) -> Skill:
    sk = Skill(
        name=name,
        description=(
            "Guidance refined by calibration-set self-iteration: what worked on the calibration tasks. "
            "Use when solving tasks like the calibration set."
        ),
        title="Calibrated guidance",
        intro="Edited round by round; a version is kept only when the calibration score improved.",
        metadata={"origin": "calibration-iterated"},
    )
    sk.section("Do").numbered = True  # type: ignore[union-attr]
    return sk


@dataclass
class TaskResult:
    task: str
    split: str
    status: str  # correct | wrong | infra
    reason: str = ""
    trajectory_ids: list[str] = field(default_factory=list)


@dataclass
class RoundResult:
    round: int
    version: int
    calibration: dict[str, str]
    heldout: dict[str, str]
    cal_score: float | None
    heldout_score: float | None
    accepted: bool
    decision: str
    ops: list[dict[str, Any]] = field(default_factory=list)
    rejected_ops: list[dict[str, Any]] = field(default_factory=list)

    @property
    def infra(self) -> int:
        return sum(s == "infra" for s in [*self.calibration.values(), *self.heldout.values()])


@dataclass
class IterateResult:
    work: Path
    name: str
    rounds: list[RoundResult]
    chosen_version: int
    chosen_path: Path

    def curve(self) -> list[dict[str, Any]]:
        return [
            {
                "round": r.round,
                "version": r.version,
                "calibration": r.cal_score,
                "heldout": r.heldout_score,
                "accepted": r.accepted,
                "infra_failures": r.infra,
            }
            for r in self.rounds
        ]

    def format(self) -> str:
        lines = ["round  version  calibration  heldout  infra  decision"]
        for r in self.rounds:
            cs = "-" if r.cal_score is None else f"{r.cal_score:.3f}"
            hs = "-" if r.heldout_score is None else f"{r.heldout_score:.3f}"
            lines.append(f"{r.round:>5}  v{r.version:<7} {cs:>11}  {hs:>7}  {r.infra:>5}  {r.decision}")
        lines.append(f"chosen: {self.name} v{self.chosen_version} -> {self.chosen_path}")
        return "\n".join(lines)


def _score(results: dict[str, str], tasks: set[str] | None = None) -> float | None:
    vals = [s for t, s in results.items() if s != "infra" and (tasks is None or t in tasks)]
    return sum(s == "correct" for s in vals) / len(vals) if vals else None


def _paired(a: dict[str, str], b: dict[str, str]) -> tuple[float | None, float | None]:
    common = {t for t in a if a[t] != "infra" and b.get(t, "infra") != "infra"}
    return _score(a, common), _score(b, common)


def _fill(template: str, **values: str) -> str:
    out = template
    for k, v in values.items():
        out = out.replace("{" + k + "}", shlex.quote(v))
    return out
