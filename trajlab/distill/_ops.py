"""Small edits to a skill: add, edit or remove one guidance item, within a size budget.

Both the LLM editor and the offline rule miner propose edits in this form. An edit that would make
SKILL.md exceed the budget is rejected (and reported), never truncated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..errors import InputFileError
from ._skill import Budget, Item, Skill

KINDS = ("add", "edit", "remove")


@dataclass
class Op:
    kind: str  # add | edit | remove
    section: str = ""
    text: str = ""
    item_id: str = ""
    rule: str | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", None)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Op:
        if not isinstance(d, dict):
            raise InputFileError("operation", f"expected an object, got {type(d).__name__}")
        kind = str(d.get("kind") or d.get("op") or "").lower()
        if kind not in KINDS:
            raise InputFileError("operation", f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        return cls(
            kind=kind,
            section=str(d.get("section") or ""),
            text=str(d.get("text") or "").strip(),
            item_id=str(d.get("item_id") or d.get("id") or ""),
            rule=d.get("rule"),
            reason=str(d.get("reason") or ""),
        )


@dataclass
class EditResult:
    skill: Skill
    applied: list[Op]
    rejected: list[tuple[Op, str]]


def _apply_one(sk: Skill, op: Op) -> str | None:
    """Apply in place; None on success, else why the op does not apply."""
    if op.kind == "add":
        if not op.text:
            return "add without text"
        if any(it.text.strip() == op.text for _, it in sk.items()):
            return "duplicate of an existing item"
        if op.rule and op.rule in sk.rule_keys():
            return f"rule {op.rule} is already in the skill"
        sec = sk.section(op.section or "Do")
        assert sec is not None
        sec.items.append(Item(op.text, op.rule))
        return None
    found = sk.find(op.item_id)
    if found is None:
        return f"no item with id {op.item_id!r}"
    sec, item = found
    if op.kind == "remove":
        sec.items.remove(item)
        return None
    if not op.text:
        return "edit without text"
    item.text = op.text
    if op.rule:
        item.rule = op.rule
    return None


def apply_ops(skill: Skill, ops: list[Op], budget: Budget | None = None) -> EditResult:
    """Apply edits one by one; an edit that fails or breaks the budget is rejected and undone."""
    budget = budget or Budget()
    cur = skill.copy()
    applied: list[Op] = []
    rejected: list[tuple[Op, str]] = []
    for op in ops:
        trial = cur.copy()
        why = _apply_one(trial, op)
        if why is None:
            over = budget.violations(trial)
            grows = len(trial.render().encode()) > len(cur.render().encode())
            if over and (grows or op.kind == "add"):
                why = "over the size budget: " + "; ".join(over)
        if why is not None:
            rejected.append((op, why))
            continue
        cur = trial
        applied.append(op)
    return EditResult(cur, applied, rejected)
