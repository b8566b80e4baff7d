"""Contamination guard: a skill must never carry what is unique to evaluation tasks.

The guard collects, from every eval/held-out run of the lab, the task ids, the gold answers
(`trajectories.expected_answer`) and the distinctive words of the task statements (words that look
specific -- file names, codes, long identifiers -- and never occur in a non-evaluation task). A
skill whose text contains any of them is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputFileError, TrajlabError
from ..store import Lab
from ._features import is_excluded

MIN_ANSWER_CHARS = 4
_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]{5,}[A-Za-z0-9]")


class ContaminationError(TrajlabError):
    """A skill would contain a gold answer, task id or other string unique to evaluation tasks."""

    def __init__(self, skill: str, hits: list[Hit]):
        self.skill = skill
        self.hits = hits
        shown = "; ".join(h.describe() for h in hits[:5])
        more = f" (+{len(hits) - 5} more)" if len(hits) > 5 else ""
        super().__init__(
            f"refusing to write skill {skill!r}: it contains evaluation-task content: {shown}{more}"
        )


@dataclass(frozen=True)
class Hit:
    kind: str  # task_id | answer | task_text
    value: str
    file: str
    task_id: str | None = None

    def describe(self) -> str:
        return f"{self.kind} {self.value!r} of eval task {self.task_id or '?'} in {self.file}"


def _specific(word: str) -> bool:
    return bool(re.search(r"\d", word)) or "_" in word or "." in word or len(word) >= 14


@dataclass
class EvalIndex:
    """Strings that must not appear in a skill, each with the eval task it belongs to."""

    task_ids: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    words: dict[str, str] = field(default_factory=dict)
    short_answers: int = 0

    @classmethod
    def from_lab(cls, lab: Lab, extra: Iterable[tuple[str | None, str | None, str | None]] = ()) -> EvalIndex:
        """Eval/held-out tasks of the lab, plus `extra` (task_id, statement, gold answer) known elsewhere."""
        t = lab.read("trajectories", ["task_id", "task", "expected_answer", "split", "tags"]).to_pylist()
        ev = [r for r in t if is_excluded(r["split"], r["tags"])]
        other = [r for r in t if not is_excluded(r["split"], r["tags"])]
        return cls.build(
            [*((r["task_id"], r["task"], r["expected_answer"]) for r in ev), *extra],
            [(r["task_id"], r["task"], r["expected_answer"]) for r in other],
        )

    @classmethod
    def build(
        cls,
        eval_tasks: Iterable[tuple[str | None, str | None, str | None]],
        other_tasks: Iterable[tuple[str | None, str | None, str | None]] = (),
    ) -> EvalIndex:
        idx = cls()
        allowed: set[str] = set()
        other_ids: set[str] = set()
        for tid, text, _ in other_tasks:
            if tid:
                other_ids.add(tid)
            allowed.update(w.lower() for w in _WORD_RE.findall(text or ""))
        for tid, text, answer in eval_tasks:
            label = tid or "?"
            if tid and tid not in other_ids:
                idx.task_ids[tid] = label
            if answer and answer.strip():
                a = answer.strip()
                if len(a) >= MIN_ANSWER_CHARS:
                    idx.answers[a] = label
                else:
                    idx.short_answers += 1
            for w in _WORD_RE.findall(text or ""):
                if _specific(w) and w.lower() not in allowed:
                    idx.words[w] = label
        return idx

    def __bool__(self) -> bool:
        return bool(self.task_ids or self.answers or self.words)

    def scan(self, files: dict[str, str]) -> list[Hit]:
        """Every forbidden string found in the given {file name: text}."""
        hits: list[Hit] = []
        for fname, text in sorted(files.items()):
            low = text.lower()
            for kind, table in (
                ("task_id", self.task_ids),
                ("answer", self.answers),
                ("task_text", self.words),
            ):
                for value, task in table.items():
                    v = value.lower()
                    if v not in low:
                        continue
                    # Whole-token match, so that an answer `1234` does not hit `12345`.
                    pat = r"(?<![A-Za-z0-9])" + re.escape(v) + r"(?![A-Za-z0-9])"
                    if re.search(pat, low):
                        hits.append(Hit(kind, value, fname, task))
        return hits


def read_eval_tasks(path: str | Path) -> list[tuple[str | None, str | None, str | None]]:
    """Evaluation tasks from a JSONL file: `task_id`, `task`/`question`, `expected_answer`/`answer`.

    Rows with a `split` field count only when it is an eval/held-out split (so the generator's
    tasks.jsonl can be given as is); rows without one always count.
    """
    p = Path(path)
    if not p.is_file():
        raise InputFileError(str(p), "no such file")
    out = []
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputFileError(str(p), f"not UTF-8 ({e.reason} at byte {e.start})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputFileError(str(p), f"not valid JSON: {e}", n) from None
        if not isinstance(row, dict):
            raise InputFileError(str(p), "expected a JSON object", n)
        if "split" in row and not is_excluded(row.get("split"), ()):
            continue
        out.append(
            (
                row.get("task_id") or row.get("id"),
                row.get("task") or row.get("question"),
                row.get("expected_answer") or row.get("answer"),
            )
        )
    return out
