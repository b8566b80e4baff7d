"""The on-disk annotation records: one JSON object per line, keys always in the order declared here.

A record's id is a content hash of every other field, so an edited line no longer matches its id and
`supersedes` references stay valid forever (files are append-only, never rewritten).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..schema import NOT_A_FAILURE, UNSURE, short_id

SPECIAL_CATEGORIES: tuple[str, ...] = (NOT_A_FAILURE, UNSURE)
"""Categories a human may use besides the taxonomy's own."""

REVIEW_ACTIONS: tuple[str, ...] = ("accepted", "overridden", "blind")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""Annotator and dataset names: they become file and folder names."""

ReviewAction = Literal["accepted", "overridden", "blind"]


def check_name(kind: str, value: str) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise ValueError(
            f"{kind} name {value!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


def _utc(v: datetime) -> datetime:
    return v.replace(tzinfo=timezone.utc) if v.tzinfo is None else v.astimezone(timezone.utc)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ID_PREFIX: ClassVar[str] = "rec"

    @field_validator("created_at", check_fields=False)
    @classmethod
    def _tz(cls, v: datetime) -> datetime:
        return _utc(v)

    @field_validator("evidence_steps", check_fields=False)
    @classmethod
    def _evidence(cls, v: list[int]) -> list[int]:
        if any(i < 0 for i in v):
            raise ValueError("step indexes must be >= 0")
        return list(dict.fromkeys(v))  # drop repeats, keep the order given

    @field_validator("note", check_fields=False)
    @classmethod
    def _text(cls, v: str | None) -> str | None:
        # a lone UTF-16 surrogate (a cut emoji pasted into a form) cannot be written as UTF-8: U+FFFD
        if v is None or v.isascii():
            return v
        return v.encode("utf-16", "surrogatepass").decode("utf-16", "replace")

    @field_validator("decisive_step_index", check_fields=False)
    @classmethod
    def _decisive(cls, v: int | None) -> int | None:
        if v is not None and v < 0:
            raise ValueError("step index must be >= 0")
        return v

    def content_id(self) -> str:
        """The record id this content hashes to (every field except `record_id`)."""
        body = self.model_dump(mode="json", exclude={"record_id"})
        return short_id(self.ID_PREFIX, json.dumps(body, ensure_ascii=False, separators=(",", ":")))

    def with_id(self) -> Any:
        return self.model_copy(update={"record_id": self.content_id()})

    def to_line(self) -> str:
        """One JSON line, keys in declaration order (stable diffs), non-ASCII kept readable."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n"

    @property
    def label_key(self) -> tuple[str, int | None, tuple[int, ...]]:
        """What two records must share to count as the same label (notes and times may differ)."""
        return (self.category, self.decisive_step_index, tuple(sorted(self.evidence_steps)))  # type: ignore[attr-defined]


class AnnotationRecord(_Record):
    """One human label, a line of `annotations/<dataset>/<annotator>.jsonl`."""

    ID_PREFIX: ClassVar[str] = "hr"

    record_id: str | None = Field(
        default=None, description="Content hash (`hr_...`) of every other field; filled in when appended."
    )
    trajectory_id: str = Field(description="The reviewed trajectory (`t_...`).")
    taxonomy_id: str = Field(description="Taxonomy the category comes from, e.g. `omni-failure`.")
    taxonomy_version: str = Field(description="Version of that taxonomy.")
    category: str = Field(description="A category id of the taxonomy, `not_a_failure` or `unsure`.")
    decisive_step_index: int | None = Field(
        default=None,
        description="The step where the run went wrong (`step_index`), if the annotator chose one.",
    )
    evidence_steps: list[int] = Field(
        default_factory=list, description="Step indexes that support the label, in the order given."
    )
    note: str | None = Field(default=None, description="Free-text note.")
    annotator: str = Field(description="Who labeled it; equals the file name without `.jsonl`.")
    created_at: datetime = Field(description="When the record was written (UTC).")
    reviews_label_id: str | None = Field(
        default=None, description="The judge label (`judge_labels.label_id`) this record reviews, if any."
    )
    review_action: ReviewAction | None = Field(
        default=None,
        description="`accepted` (judge label kept), `overridden` (changed), `blind` (judge label hidden), "
        "or null when no judge label was reviewed.",
    )
    supersedes: str | None = Field(
        default=None,
        description="record_id of an earlier record of the same annotator that this one replaces.",
    )

    @field_validator("annotator")
    @classmethod
    def _annotator(cls, v: str) -> str:
        return check_name("annotator", v)

    @field_validator("trajectory_id", "taxonomy_id", "taxonomy_version", "category")
    @classmethod
    def _nonempty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v

    @model_validator(mode="after")
    def _action(self) -> AnnotationRecord:
        if self.review_action in ("accepted", "overridden") and not self.reviews_label_id:
            raise ValueError(f"review_action {self.review_action!r} needs reviews_label_id")
        return self


class AdjudicationRecord(_Record):
    """An adjudicator's decision for one trajectory, a line of `annotations/<dataset>/_adjudications.jsonl`."""

    ID_PREFIX: ClassVar[str] = "ad"

    record_id: str | None = Field(default=None, description="Content hash (`ad_...`) of every other field.")
    trajectory_id: str = Field(description="The trajectory decided.")
    taxonomy_id: str = Field(description="Taxonomy id.")
    taxonomy_version: str = Field(description="Taxonomy version.")
    category: str = Field(description="The gold category (a taxonomy id or `not_a_failure`).")
    decisive_step_index: int | None = Field(default=None, description="The gold decisive step.")
    evidence_steps: list[int] = Field(default_factory=list, description="Gold evidence steps.")
    decided_by: str = Field(description="The adjudicator.")
    reason: str = Field(description="Why this label was chosen over the reviewers' other labels.")
    created_at: datetime = Field(description="When it was decided (UTC).")

    @field_validator("decided_by")
    @classmethod
    def _by(cls, v: str) -> str:
        return check_name("adjudicator", v)

    @field_validator("reason")
    @classmethod
    def _reason(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("an adjudication needs a reason")
        return v

    @field_validator("category")
    @classmethod
    def _not_unsure(cls, v: str) -> str:
        if v == UNSURE:
            raise ValueError("a gold label cannot be `unsure`")
        return v


def field_docs(model: type[BaseModel]) -> list[tuple[str, str]]:
    """(field, description) pairs in declaration order, for docs and `trajlab annotations schema`."""
    return [(n, f.description or "") for n, f in model.model_fields.items()]
