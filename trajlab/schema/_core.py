"""The canonical tables every runner is normalized into.

Each model documents one table of a lab. The models are the single source of truth: the Arrow
schemas, `trajlab schema`, and the validation in tests are all derived from them. Ingest builds
plain dicts in its hot path (constructing a pydantic object per step would cost more than the
parsing itself) and these models describe what those dicts must look like.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 2
"""Version of the lab schema. Bumped when a table changes; old labs are upgraded on open.

v2 added `steps.tool_seq`; parts written by v1 read it as null (see `Step.tool_seq`)."""

Outcome = Literal["success", "failure", "unknown"]
StepKind = Literal["system", "user", "assistant", "reasoning", "tool_call", "tool_result", "compaction"]
Modality = Literal["audio", "video", "image", "document", "web", "file", "compute", "text"]

OUTCOMES: tuple[str, ...] = ("success", "failure", "unknown")
STEP_KINDS: tuple[str, ...] = (
    "system",
    "user",
    "assistant",
    "reasoning",
    "tool_call",
    "tool_result",
    "compaction",
)
CALL_MODALITIES: tuple[str, ...] = ("audio", "video", "image", "web", "file", "compute")
MODALITIES: tuple[str, ...] = ("audio", "video", "image", "document", "web", "file", "compute", "text")


class Table(BaseModel):
    """Base for table row models: rows are plain values, unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid")


class Trajectory(Table):
    """One agent run on one task: the `trajectories` table."""

    schema_version: int = Field(SCHEMA_VERSION, description="Lab schema version the row was written with.")
    trajectory_id: str = Field(
        description="Stable content-hash id: `t_` + 16 hex digits of xxh3-128 over runner, native key, "
        "source digest and locator. Re-ingesting identical content yields the same id."
    )
    runner: str = Field(
        description="Runner family, e.g. `codex`, `claude_code`, `atif`, `openhands`, `swe_agent`."
    )
    format: str = Field(
        description="Exact on-disk format the adapter read, e.g. `codex-rollout`, `claude-stream-json`."
    )
    runner_version: str | None = Field(
        None, description="Version of the runner that wrote the file, when recorded."
    )
    source_path: str = Field(
        description="Primary file the trajectory came from (absolute path at ingest time)."
    )
    source_files: list[str] = Field(
        default_factory=list,
        description="Every file that contributed (sub-agent files, result.json, continuations).",
    )
    source_digest: str = Field(description="`xxh3_128:<hex>` digest of the source unit's bytes.")
    source_locator: str | None = Field(
        None,
        description="Position inside the source when one file holds many runs, e.g. `sample=3;epoch=1`, `row=2`.",
    )
    native_id: str | None = Field(
        None, description="The runner's own id: session id, instance id, sample uuid."
    )
    parent_trajectory_id: str | None = Field(
        None,
        description="For a run ingested on its own but spawned by another (orphan sub-agent, continuation).",
    )
    task_id: str | None = Field(None, description="Benchmark task or instance id.")
    task: str | None = Field(None, description="The task statement / first real user prompt.")
    benchmark: str | None = Field(
        None, description="Benchmark or dataset name, e.g. `terminal-bench-core`, `omnigaia`."
    )
    split: str | None = Field(
        None,
        description="Dataset split: `train`, `calibration`, `eval`, `heldout`. Distillation never reads eval/heldout.",
    )
    condition: str | None = Field(
        None, description="Experimental condition, e.g. `no-skill`, `skill:log-distilled`."
    )
    tags: list[str] = Field(
        default_factory=list, description="Free tags given at ingest (`--tag`) or by the runner."
    )
    domain: str | None = Field(
        None, description="Task domain or primary modality, e.g. `video`, `audio`, `image`, `swe`."
    )
    difficulty: str | None = Field(None, description="Task difficulty level when the benchmark defines one.")
    model: str | None = Field(None, description="Main model that drove the agent.")
    harness: str | None = Field(
        None, description="Agent harness, e.g. `codex-cli`, `claude-code`, `terminus-2`."
    )
    reasoning_effort: str | None = Field(
        None, description="Reasoning effort setting when recorded (low/medium/high/...)."
    )
    outcome: Outcome = Field(
        "unknown", description="`success`, `failure`, or `unknown` when the runner records no signal."
    )
    reward: float | None = Field(
        None, description="Numeric reward or score behind the outcome, when there is one."
    )
    outcome_source: str | None = Field(
        None, description="Which field decided the outcome, e.g. `results.json:is_resolved`, `scores.match`."
    )
    expected_answer: str | None = Field(
        None,
        description="Gold answer when the source carries one (used by contamination guards, never shown to judges).",
    )
    final_answer: str | None = Field(None, description="The agent's final answer or last assistant message.")
    exit_status: str | None = Field(
        None,
        description="Runner-level termination reason, e.g. `submitted`, `agent_timeout`, `exit_cost`, `error`.",
    )
    error: str | None = Field(None, description="Runner-level error message, if the run crashed.")
    n_steps: int = Field(0, description="Rows in the steps table for this trajectory (sub-agents included).")
    n_tool_calls: int = Field(0, description="Steps of kind `tool_call`.")
    n_errors: int = Field(0, description="Steps flagged `is_error`.")
    n_subagents: int = Field(0, description="Distinct sub-agents inside this trajectory.")
    input_tokens: int | None = Field(
        None, description="Prompt tokens summed over model calls (deduplicated)."
    )
    output_tokens: int | None = Field(None, description="Completion tokens summed over model calls.")
    reasoning_tokens: int | None = Field(None, description="Reasoning tokens, when reported separately.")
    cached_tokens: int | None = Field(None, description="Prompt tokens served from cache (read).")
    total_tokens: int | None = Field(None, description="Total tokens as reported, else input + output.")
    cost_usd: float | None = Field(None, description="Cost in US dollars when the runner records it.")
    started_at: datetime | None = Field(None, description="First timestamp (UTC).")
    ended_at: datetime | None = Field(None, description="Last timestamp (UTC).")
    duration_s: float | None = Field(None, description="Wall-clock duration in seconds.")
    anomalies: list[str] = Field(
        default_factory=list,
        description="Recoverable problems found while parsing (orphan results, missing files...).",
    )
    metadata: str | None = Field(None, description="Runner-specific extras as a JSON object string.")
    ingested_at: datetime = Field(description="When this row was written (UTC).")


class Step(Table):
    """One event of a trajectory: the `steps` table.

    A tool call and its result are one row of kind `tool_call` (the result columns filled in when the
    result was found); a `tool_result` row exists only for a result whose call is missing.
    """

    trajectory_id: str = Field(description="Owning trajectory.")
    step_index: int = Field(
        description="0-based position in the trajectory, in the order the events happened."
    )
    step_id: str = Field(description="`<trajectory_id>:<step_index>`; unique across the lab.")
    agent_id: str = Field("main", description="`main` for the top-level agent, else the sub-agent's id.")
    parent_step_index: int | None = Field(
        None, description="For sub-agent steps: the step that spawned the sub-agent (its Task/spawn call)."
    )
    depth: int = Field(0, description="Sub-agent nesting depth (0 = main agent).")
    kind: StepKind = Field(
        description="system, user, assistant, reasoning, tool_call, tool_result, or compaction."
    )
    role: str | None = Field(None, description="Role string as written by the runner.")
    text: str | None = Field(None, description="Message, reasoning or compaction-summary text.")
    tool_name: str | None = Field(
        None, description="The runner's tool name (`Bash`, `exec_command`, `str_replace_editor`)."
    )
    tool: str | None = Field(
        None,
        description="Normalized real tool behind the call: `ffmpeg`, `whisper`, `python`, `grep`, `apply_patch`...",
    )
    tool_seq: int | None = Field(
        None,
        description="For a tool call: its 1-based number among the trajectory's calls of the same tool "
        "(`tool`, else `tool_name`, else `(unknown)`), in step order, so 1 marks the first use; 0 for "
        "other steps, for calls of a program the shell did not find (exit 127, `whisper: command not "
        "found`: an attempt, not a use) and for the harness's setup calls (`metadata.phase` setup); null in "
        "parts written before schema v2 (analyses then count from the other columns).",
    )
    programs: list[str] = Field(
        default_factory=list,
        description="Every program a shell command runs, in order (pipelines, `&&`, wrappers).",
    )
    command: str | None = Field(None, description="Normalized command line for shell-like calls.")
    arguments: str | None = Field(None, description="Raw call arguments as a JSON string.")
    output: str | None = Field(
        None, description="Tool output as the agent saw it (stdout, or aggregated output)."
    )
    stderr: str | None = Field(None, description="Separate stderr when the runner records it.")
    exit_code: int | None = Field(None, description="Process exit code when known.")
    is_error: bool = Field(False, description="The runner or the exit code marked this step as failed.")
    timed_out: bool = Field(False, description="The call was cut off by a timeout or interrupt.")
    duration_s: float | None = Field(
        None, description="Execution time of the call, or model latency for assistant steps."
    )
    input_tokens: int | None = Field(
        None, description="Prompt tokens of the model call that produced this step."
    )
    output_tokens: int | None = Field(
        None, description="Completion tokens of that model call (counted once per call)."
    )
    reasoning_tokens: int | None = Field(None, description="Reasoning tokens of that model call.")
    cached_tokens: int | None = Field(None, description="Cached prompt tokens of that model call.")
    timestamp: datetime | None = Field(None, description="When the event happened (UTC).")
    call_id: str | None = Field(None, description="The runner's id linking a call to its result.")
    modality: str | None = Field(
        None, description="For tool calls: audio, video, image, web, file or compute."
    )
    model: str | None = Field(None, description="Model of this step when it differs per step.")
    source_line: int | None = Field(
        None, description="1-based line (JSONL) or element index (JSON) it came from."
    )
    metadata: str | None = Field(None, description="Runner-specific extras as a JSON object string.")


class Source(Table):
    """One ingested source unit (a file plus its companions): the `sources` table, used for incremental ingest."""

    source_path: str = Field(description="Primary file of the unit (absolute).")
    files: list[str] = Field(default_factory=list, description="All member files of the unit.")
    sizes: list[int] = Field(default_factory=list, description="Byte size of each member file.")
    mtimes_ns: list[int] = Field(
        default_factory=list, description="Modification time of each member file (ns)."
    )
    digest: str | None = Field(
        None,
        description="`xxh3_128:<hex>` of the unit's content (primary file bytes, then each companion's "
        "path relative to the primary's folder and bytes); equal digests mean duplicate units.",
    )
    meta_digest: str | None = Field(
        None,
        description="Digest of the trajlab-meta sidecar entries applied to the unit's runs (None when "
        "none applied); a change re-ingests the unit.",
    )
    runner: str | None = Field(None, description="Runner of the adapter that claimed the unit.")
    format: str | None = Field(None, description="Format name of the adapter.")
    adapter_version: int | None = Field(
        None,
        description="Version of that adapter (`Adapter.version`); a unit recorded with another version, "
        "or by another adapter, is parsed again. Null in labs written before this column existed (read "
        "as version 1) and for files no adapter recognised.",
    )
    rows_version: int | None = Field(
        None,
        description="Version of the row finishing shared by all adapters (tool normalization, ids; "
        "`trajlab.formats.ROWS_VERSION`) that made the unit's rows; another version re-parses the unit. "
        "Null in labs written before this column existed (read as 1).",
    )
    status: Literal["ingested", "partial", "quarantined", "duplicate", "unknown"] = Field(
        description="ingested, partial (some records quarantined), quarantined, duplicate (same bytes as "
        "another unit) or unknown (no adapter recognised it)."
    )
    duplicate_of: str | None = Field(None, description="For duplicates: the unit whose bytes it repeats.")
    records_seen: int = Field(
        0, description="Records read: lines, events, samples, or 1 for an unreadable file."
    )
    records_ingested: int = Field(
        0, description="Records parsed and used (including ones that carry no step)."
    )
    records_quarantined: int = Field(0, description="Records sent to the quarantine table.")
    trajectory_ids: list[str] = Field(default_factory=list, description="Trajectories produced by the unit.")
    n_steps: int = Field(0, description="Steps produced.")
    n_tool_calls: int = Field(0, description="Tool-call steps produced.")
    error: str | None = Field(None, description="Why the unit failed, for quarantined/unknown units.")
    ingested_at: datetime = Field(description="When the unit was last ingested (UTC).")


class Quarantine(Table):
    """A record that could not be ingested, kept verbatim: the `quarantine` table."""

    source_path: str = Field(description="File the record came from.")
    line: int | None = Field(
        None, description="1-based line number (JSONL) or element index (JSON list), if any."
    )
    byte_offset: int | None = Field(None, description="Byte offset of the record in the file.")
    runner: str | None = Field(None, description="Adapter that was reading the file, if one claimed it.")
    reason: str = Field(description="Human-readable reason naming what was wrong.")
    error_type: str = Field(
        description="Short class: `json`, `utf8`, `schema`, `truncated`, `empty`, `unknown_format`, `binary`, `io`."
    )
    raw: bytes | None = Field(None, description="The record's raw bytes, unchanged.")
    raw_size: int = Field(0, description="Size of the raw record in bytes.")
    ingested_at: datetime = Field(description="When it was quarantined (UTC).")
    unit_path: str | None = Field(
        None,
        description="Primary file of the source unit whose ingest quarantined it (a companion shared by "
        "several units, such as a run-level results.json, is read, and its bad records quarantined, "
        "once per unit). Null in labs written before this column existed.",
    )
