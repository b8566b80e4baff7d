"""Tables written by the DAG stage (`trajlab dag`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from ._core import Table

EdgeType = Literal["sequence", "data", "retry", "spawn", "return", "summary", "answer"]
NodeStatus = Literal["ok", "error", "timeout", "no-output"]
EDGE_TYPES: tuple[str, ...] = ("sequence", "data", "retry", "spawn", "return", "summary", "answer")
NODE_STATUSES: tuple[str, ...] = ("ok", "error", "timeout", "no-output")


class DagNode(Table):
    """One node of a trajectory's step DAG: the `dag_nodes` table."""

    trajectory_id: str = Field(description="Owning trajectory.")
    node_id: int = Field(description="Node id, equal to the step_index of the step it represents.")
    step_index: int = Field(
        description="Step this node represents (a tool call with its result is one node)."
    )
    agent_id: str = Field(
        "main", description="Agent that produced the step; sub-agents form nested subgraphs."
    )
    kind: str = Field(description="action, reasoning, text, input, compaction, or result (orphan result).")
    label: str | None = Field(None, description="Short display label, e.g. `ffmpeg -i a.mp4 ...`.")
    tool: str | None = Field(None, description="Normalized tool for action nodes.")
    modality: str = Field(description="audio, video, image, document, web, file, compute or text.")
    status: NodeStatus = Field(description="ok, error, timeout or no-output.")
    layer: int = Field(0, description="Longest-path layer from the roots (for top-to-bottom layouts).")
    branch: str | None = Field(None, description="Modality branch this node belongs to, e.g. `audio#1`.")
    on_answer_path: bool = Field(
        False, description="The node's output reaches the final answer through data/answer edges."
    )
    is_dead_end: bool = Field(False, description="An action whose output no later step used.")
    retry_of: int | None = Field(None, description="Node this one retries, if any.")
    produces: list[str] = Field(
        default_factory=list, description="Artifacts (paths, URLs, ids, values) the step produced."
    )
    consumes: list[str] = Field(default_factory=list, description="Artifacts the step used.")
    depth: int = Field(0, description="Sub-agent nesting depth of the step (0 = main agent).")
    parallel_batch: int | None = Field(
        None,
        description="For tool calls issued together in one model response: node id of the batch's first call.",
    )


class DagEdge(Table):
    """One typed edge of a step DAG: the `dag_edges` table."""

    trajectory_id: str = Field(description="Owning trajectory.")
    src: int = Field(description="Source node id (step_index).")
    dst: int = Field(
        description="Destination node id (step_index); always greater than src except spawn/return."
    )
    type: EdgeType = Field(description="sequence, data, retry, spawn, return, summary or answer.")
    artifact: str | None = Field(None, description="What flowed along a data edge (path, URL, value).")
    rule: str | None = Field(None, description="Name of the documented rule that created the edge.")


class DagMetrics(Table):
    """Per-trajectory graph metrics and failure-localization signals: the `dag_metrics` table."""

    trajectory_id: str = Field(description="Trajectory.")
    n_nodes: int = Field(description="Nodes in the DAG.")
    n_edges: int = Field(description="Edges in the DAG.")
    depth: int = Field(description="Number of layers (longest path in nodes over all edge types).")
    width: int = Field(description="Largest number of nodes in one layer.")
    longest_path: int = Field(description="Nodes on the longest data-dependency path.")
    n_branches: int = Field(description="Modality branches detected.")
    n_merges: int = Field(description="Nodes where two or more branches merge.")
    branches: list[str] = Field(default_factory=list, description="Branch ids, e.g. `audio#1`, `video#1`.")
    modalities: list[str] = Field(default_factory=list, description="Modalities of all action nodes.")
    answer_branches: list[str] = Field(default_factory=list, description="Branches that fed the answer.")
    merge_nodes: list[int] = Field(default_factory=list, description="Node ids where branches merge.")
    n_retries: int = Field(0, description="Retry edges.")
    n_recoveries: int = Field(
        0, description="Error-then-recovery pairs (an error followed by a successful retry)."
    )
    n_errors: int = Field(0, description="Nodes with status error or timeout.")
    n_unrecovered_errors: int = Field(0, description="Errors never followed by a successful retry.")
    n_dead_ends: int = Field(0, description="Action nodes whose output was never used.")
    answer_path_share: float | None = Field(None, description="Share of action nodes on the answer path.")
    first_error_step: int | None = Field(None, description="step_index of the first error, if any.")
    decisive_candidates: str = Field(
        "[]",
        description="JSON list of ranked candidate decisive steps: "
        '[{"step_index": int|null, "reason": str, "signal": str, "score": float}] (null step = missing branch; '
        '`unevidenced_origin` adds "term", the answer value it traces).',
    )
    anomalies: list[str] = Field(
        default_factory=list, description="Graph anomalies (duplicate call ids, orphan results...)."
    )
    answer_step: int | None = Field(
        None,
        description="Node id holding the final answer (last main-agent message or submit call); null if none.",
    )
    required_modalities: list[str] = Field(
        default_factory=list,
        description="Modalities the task calls for (from trajectories.domain and the task's media files).",
    )
    built_at: datetime = Field(description="When the DAG was built (UTC).")
    dag_version: int = Field(1, description="Version of the DAG rules that built it.")
