"""Label tables: judge proposals, human reviews, adjudicated gold labels and classifier predictions.

They stay separate so that a predicted label can never be mistaken for a human or judge label.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from ._core import Table

NOT_A_FAILURE = "not_a_failure"
UNSURE = "unsure"

JudgeStatus = Literal["labeled", "error", "unjudgeable"]


class JudgeLabel(Table):
    """A judge's label for one trajectory: the `judge_labels` table."""

    label_id: str = Field(
        description="Content hash of judge, model, prompt hash and trajectory id (`jl_...`)."
    )
    trajectory_id: str = Field(description="Judged trajectory.")
    judge: str = Field(description="`llm` or `rules`.")
    model: str | None = Field(
        None, description="Model name for LLM judges; the rules version for the rules judge."
    )
    prompt_hash: str | None = Field(None, description="Hash of the prompt template and settings.")
    taxonomy_id: str = Field(description="Taxonomy used.")
    taxonomy_version: str = Field(description="Taxonomy version used.")
    status: JudgeStatus = Field(description="labeled, error (with reason) or unjudgeable (with reason).")
    status_reason: str | None = Field(
        None, description="Why the trajectory is error/unjudgeable, e.g. `too long`."
    )
    category: str | None = Field(None, description="Primary category id.")
    secondary_categories: list[str] = Field(
        default_factory=list, description="Optional secondary category ids."
    )
    decisive_step_index: int | None = Field(None, description="The step where the run went wrong.")
    evidence_steps: list[int] = Field(default_factory=list, description="Evidence step indexes.")
    evidence_quotes: list[str] = Field(
        default_factory=list, description="Short quote per evidence step (same order)."
    )
    evidence_verified: list[bool] = Field(
        default_factory=list,
        description="Per evidence quote (same order): whether it was found in that step's text (LLM judge).",
    )
    rationale: str | None = Field(None, description="The judge's explanation.")
    confidence: float | None = Field(None, description="Self-reported confidence in [0, 1].")
    coverage: str | None = Field(
        None, description="For the rules judge: which rule decided, or why it abstained."
    )
    n_requests: int = Field(0, description="Requests sent to the endpoint for this label (0 when cached).")
    prompt_tokens: int = Field(0, description="Prompt tokens sent.")
    completion_tokens: int = Field(0, description="Completion tokens received.")
    run_id: str | None = Field(None, description="Judge run that produced the label.")
    created_at: datetime = Field(description="When the label was produced (UTC).")


class HumanLabel(Table):
    """A human annotation loaded from `annotations/<dataset>/<annotator>.jsonl`: the `human_labels` table."""

    record_id: str = Field(description="Content hash of the annotation record.")
    trajectory_id: str = Field(description="Reviewed trajectory.")
    annotator: str = Field(description="Who labeled it.")
    dataset: str = Field(
        "default", description="Annotation dataset (folder under `annotations/`) the record was loaded from."
    )
    taxonomy_id: str = Field(description="Taxonomy id.")
    taxonomy_version: str = Field(description="Taxonomy version.")
    category: str = Field(description="Category id, `not_a_failure` or `unsure`.")
    decisive_step_index: int | None = Field(None, description="Decisive step chosen by the annotator.")
    evidence_steps: list[int] = Field(default_factory=list, description="Evidence step indexes.")
    note: str | None = Field(None, description="Free-text note.")
    reviews_label_id: str | None = Field(None, description="Judge label this record reviews, if any.")
    review_action: str | None = Field(
        None, description="`accepted`, `overridden`, or `blind` (judge label hidden)."
    )
    created_at: datetime = Field(description="When the annotation was written (UTC).")
    source_file: str = Field(description="Annotation file it was loaded from.")
    source_line: int = Field(description="1-based line in that file.")


class GoldLabel(Table):
    """An adjudicated label: the `gold_labels` table."""

    trajectory_id: str = Field(description="Trajectory.")
    taxonomy_id: str = Field(description="Taxonomy id.")
    taxonomy_version: str = Field(description="Taxonomy version.")
    category: str = Field(description="Gold category id.")
    decisive_step_index: int | None = Field(None, description="Gold decisive step.")
    evidence_steps: list[int] = Field(default_factory=list, description="Gold evidence steps.")
    method: str = Field(description="`unanimous`, `majority`, or `adjudicated`.")
    decided_by: str | None = Field(None, description="Adjudicator, for adjudicated labels.")
    reason: str | None = Field(None, description="Why, for adjudicated labels.")
    annotators: list[str] = Field(default_factory=list, description="Annotators whose labels were combined.")
    created_at: datetime = Field(description="When it was decided (UTC).")


class PredictedLabel(Table):
    """A classifier prediction for an unreviewed failure: the `predicted_labels` table."""

    trajectory_id: str = Field(description="Trajectory.")
    model_id: str = Field(description="Hash of the classifier and its training labels.")
    taxonomy_id: str = Field(description="Taxonomy id.")
    taxonomy_version: str = Field(description="Taxonomy version.")
    category: str = Field(description="Most probable category.")
    probability: float = Field(description="Calibrated probability of that category.")
    probabilities: str = Field(description="JSON object of category -> calibrated probability.")
    uncertainty: float = Field(
        description="1 - max probability (or entropy-based score) used for active learning."
    )
    created_at: datetime = Field(description="When it was predicted (UTC).")
