"""Pydantic models of a taxonomy file: the schema `trajlab taxonomy schema` prints and validation enforces."""

from __future__ import annotations

import hashlib
import json
import re
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TAXONOMY_FORMAT = 1
"""Version of the taxonomy *file format* (the taxonomy's own `version` is separate)."""

RESERVED_LABELS = ("not_a_failure", "unsure")
"""Labels humans may use on top of any taxonomy; a category may not take these ids."""

DETECTORS: dict[str, str] = {
    "command_not_found": "a program or shell command was not found / not installed (exit 127)",
    "missing_dependency": "an import or library is missing (ModuleNotFoundError, No module named ...)",
    "permission_denied": "the environment refused an operation (permission denied, read-only file system)",
    "timeout": "a call was cut off by a timeout or the run hit its time limit",
    "network_error": "a network or remote-service failure (DNS, refused connection, 5xx, rate limit)",
    "resource_exhausted": "the environment ran out of memory, disk or quota (OOM kill, No space left)",
    "asr_failed": "an audio step (ASR, audio decoding) ran and failed or produced an empty transcript",
    "asr_never_run": "an audio task where no audio step was ever run",
    "frames_failed": "a video step (frame extraction, video decoding) ran and failed or produced nothing",
    "frames_never_extracted": "a video task where no video step was ever run",
    "sparse_frames": "a video task where frames were extracted at a single point in time only",
    "image_never_viewed": "an image task where the image was never opened or analysed",
    "web_never_searched": "a task needing outside knowledge where no web or search step was run",
    "code_exception": "the agent's own code raised an unrecovered exception in a computation step",
    "repeated_step": "the same action or message repeated three or more times in a row (a loop)",
    "unsupported_claim": "a value or name of the final answer that no tool output, argument or input shows "
    "was first stated by a message (a claim from memory or a retold page)",
    "mental_arithmetic": "a number of the final answer that no tool output shows was worked out in a message "
    "(an arithmetic expression, or numbers from the evidence combined without running code)",
}
"""Step-signal detectors the offline rules judge implements. A taxonomy signal may name one with
`detector:`; the rules judge then labels a trajectory with the category whose signal fired."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Example(_Strict):
    """A short positive or negative example of a category."""

    text: str = Field(min_length=1, description="What happened in the trajectory (one or two sentences).")
    why: str | None = Field(None, description="Why this is (or is not) the category.")


class Signal(_Strict):
    """A step-level signal that points at the category."""

    description: str = Field(min_length=1, description="What to look for in the steps.")
    detector: str | None = Field(
        None,
        description="Name of a rules-judge detector that implements the signal "
        f"(one of: {', '.join(DETECTORS)}); omit for signals only an LLM or a human can judge.",
    )

    @field_validator("detector")
    @classmethod
    def _known_detector(cls, v: str | None) -> str | None:
        if v is not None and v not in DETECTORS:
            raise ValueError(f"unknown detector {v!r}; known detectors: {', '.join(DETECTORS)}")
        return v


class TieBreaker(_Strict):
    """How to decide between this category and a neighbouring one."""

    versus: str = Field(description="Id of the neighbouring category.")
    rule: str = Field(min_length=1, description="The deciding question or rule.")


def _coerce_text_items(v: Any, key: str) -> Any:
    """Let YAML authors write plain strings where an object with one main field is expected."""
    if isinstance(v, list):
        return [{key: x} if isinstance(x, str) else x for x in v]
    return v


class Category(_Strict):
    """One failure category."""

    id: str = Field(
        pattern=r"^[a-z][a-z0-9_]*$",
        description="Stable snake_case id stored in labels (never rename it; add a new category instead).",
    )
    name: str = Field(min_length=1, description="Human-readable name.")
    definition: str = Field(min_length=1, description="What the category covers.")
    decision_rules: list[str] = Field(
        min_length=1, description="Evidence that decides this category, in order of importance."
    )
    tie_breakers: list[TieBreaker] = Field(
        default_factory=list, description="How to break ties with neighbouring categories."
    )
    positive_examples: list[Example] = Field(
        min_length=1, description="Trajectories that belong to the category."
    )
    negative_examples: list[Example] = Field(
        default_factory=list, description="Near misses that belong elsewhere (say where in `why`)."
    )
    signals: list[Signal] = Field(default_factory=list, description="Step signals to look for.")

    @field_validator("positive_examples", "negative_examples", mode="before")
    @classmethod
    def _examples(cls, v: Any) -> Any:
        return _coerce_text_items(v, "text")

    @field_validator("signals", mode="before")
    @classmethod
    def _signals(cls, v: Any) -> Any:
        return _coerce_text_items(v, "description")

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if v in RESERVED_LABELS:
            raise ValueError(f"{v!r} is reserved for human labels ({', '.join(RESERVED_LABELS)})")
        return v


class Taxonomy(_Strict):
    """A versioned failure taxonomy: the categories a judge or a human may assign."""

    format: int = Field(TAXONOMY_FORMAT, description="Taxonomy file format version (currently 1).")
    id: str = Field(
        pattern=r"^[a-z][a-z0-9_-]*$", description="Taxonomy id, e.g. `omni-failure` (also its file name)."
    )
    version: str = Field(
        pattern=r"^\d+(\.\d+){0,2}$",
        description="Version of the taxonomy content (`MAJOR.MINOR.PATCH`); bump it whenever a definition "
        "or rule changes, since labels record the version they were made with.",
    )
    name: str = Field(min_length=1, description="Human-readable name.")
    description: str = Field(min_length=1, description="What the taxonomy is for and what it labels.")
    unit: str = Field(
        "trajectory", description="What one label describes, e.g. `trajectory` (one label per failed run)."
    )
    guidance: list[str] = Field(
        default_factory=list, description="General labelling guidance that applies to every category."
    )
    categories: list[Category] = Field(min_length=2, description="The categories, in display order.")

    @field_validator("format")
    @classmethod
    def _format(cls, v: int) -> int:
        if v != TAXONOMY_FORMAT:
            raise ValueError(f"unsupported taxonomy format {v}; this trajlab reads format {TAXONOMY_FORMAT}")
        return v

    @model_validator(mode="after")
    def _cross_refs(self) -> Taxonomy:
        problems = cross_ref_problems([c.model_dump() for c in self.categories])
        if problems:
            raise ValueError(problems[0][1])
        return self

    @property
    def category_ids(self) -> list[str]:
        return [c.id for c in self.categories]

    def get(self, category_id: str) -> Category:
        for c in self.categories:
            if c.id == category_id:
                return c
        raise KeyError(
            f"category {category_id!r} is not in taxonomy {self.id} v{self.version}; "
            f"known: {', '.join(self.category_ids)}"
        )

    def __contains__(self, category_id: object) -> bool:
        return any(c.id == category_id for c in self.categories)

    @cached_property
    def content_hash(self) -> str:
        """Hash of the whole content: changes whenever anything a judge sees changes."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def detector_map(self) -> dict[str, str]:
        """detector name -> category id, from the categories' signals (first category wins)."""
        out: dict[str, str] = {}
        for c in self.categories:
            for s in c.signals:
                if s.detector and s.detector not in out:
                    out[s.detector] = c.id
        return out


def cross_ref_problems(categories: list[Any]) -> list[tuple[tuple[Any, ...], str]]:
    """Duplicate ids and tie-breakers naming unknown categories, as (location, message) pairs."""
    out: list[tuple[tuple[Any, ...], str]] = []
    ids: set[str] = set()
    for i, c in enumerate(categories):
        cid = c.get("id") if isinstance(c, dict) else None
        if isinstance(cid, str):
            if cid in ids:
                out.append((("categories", i, "id"), f"duplicate category id {cid!r}"))
            ids.add(cid)
    for i, c in enumerate(categories):
        if not isinstance(c, dict):
            continue
        for j, tb in enumerate(c.get("tie_breakers") or []):
            versus = tb.get("versus") if isinstance(tb, dict) else None
            if not isinstance(versus, str):
                continue
            loc = ("categories", i, "tie_breakers", j, "versus")
            if versus == c.get("id"):
                out.append((loc, "a tie-breaker cannot be versus its own category"))
            elif versus not in ids:
                out.append((loc, f"unknown category {versus!r}; known: {', '.join(sorted(ids))}"))
        # free-text rules name the category a case goes to as `-> category_id`: a misspelt id there
        # would send the judge to a category that does not exist
        texts: list[tuple[tuple[Any, ...], Any]] = [
            (("categories", i, "decision_rules", k), r) for k, r in enumerate(c.get("decision_rules") or [])
        ]
        texts += [
            (("categories", i, "tie_breakers", j, "rule"), tb.get("rule"))
            for j, tb in enumerate(c.get("tie_breakers") or [])
            if isinstance(tb, dict)
        ]
        for loc, text in texts:
            if not isinstance(text, str):
                continue
            for name in _ARROW_TARGET.findall(text):
                if "_" in name and name not in ids and name not in RESERVED_LABELS:
                    out.append((loc, f"rule sends cases to unknown category {name!r} (`-> {name}`)"))
    return out


_ARROW_TARGET = re.compile(r"->\s*([a-z][a-z0-9_-]*)")


def taxonomy_json_schema() -> dict[str, Any]:
    return Taxonomy.model_json_schema()
