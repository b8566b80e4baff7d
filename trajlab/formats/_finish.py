"""Complete what adapters leave out: ids, step indexes, tool normalization, counts and totals."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..normalize import normalize_call
from ..schema import SCHEMA_VERSION, STEP_KINDS, step_id, trajectory_id
from ._base import ParsedTrajectory, SourceUnit, json_str, parse_args, parse_ts

_TOKEN_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")


def finish_trajectory(
    pt: ParsedTrajectory,
    unit: SourceUnit,
    runner: str,
    fmt: str,
    now: datetime,
    defaults: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Turn an adapter's ParsedTrajectory into final trajectory and step rows (in place where possible)."""
    t = pt.trajectory
    steps = pt.steps
    assert unit.digest is not None
    tid = trajectory_id(runner, pt.native_key, unit.digest, pt.locator)
    anomalies: list[str] = list(t.get("anomalies") or [])
    n_calls = n_err = 0
    agents: set[str] = set()
    tok = dict.fromkeys(_TOKEN_FIELDS, 0)
    tok_seen = dict.fromkeys(_TOKEN_FIELDS, False)
    first_ts = last_ts = None
    index_of = {id(s): i for i, s in enumerate(steps)}
    for i, s in enumerate(steps):
        parent = s.pop("_parent", None)
        if parent is not None and s.get("parent_step_index") is None:
            s["parent_step_index"] = index_of.get(id(parent))
        s.pop("_has_result", None)
        s["trajectory_id"] = tid
        s["step_index"] = i
        s["step_id"] = step_id(tid, i)
        kind = s.get("kind")
        if kind not in STEP_KINDS:
            anomalies.append(f"step {i}: unknown kind {kind!r} stored as system")
            s["kind"] = kind = "system"
        agent = s.get("agent_id") or "main"
        s["agent_id"] = agent
        if agent != "main":
            agents.add(agent)
        if kind == "tool_call":
            n_calls += 1
            args = s.get("arguments")
            if s.get("tool") is None:
                info = normalize_call(s.get("tool_name"), parse_args(args))
                s["tool"] = info.tool
                if not s.get("programs"):
                    s["programs"] = list(info.programs)
                if s.get("modality") is None:
                    s["modality"] = info.modality
                if s.get("command") is None:
                    s["command"] = info.command
            if args is not None and not isinstance(args, str):
                s["arguments"] = json_str(args)
        if s.get("is_error"):
            n_err += 1
        if isinstance(s.get("metadata"), (dict, list)):
            s["metadata"] = json_str(s["metadata"])
        ts = s.get("timestamp")
        if ts is not None and not isinstance(ts, datetime):
            ts = s["timestamp"] = parse_ts(ts)
        if ts is not None:
            if first_ts is None or ts < first_ts:
                first_ts = ts
            if last_ts is None or ts > last_ts:
                last_ts = ts
        for f in _TOKEN_FIELDS:
            v = s.get(f)
            if v is not None:
                tok[f] += v
                tok_seen[f] = True
    if defaults:
        for k, v in defaults.items():
            if k == "tags":
                t["tags"] = sorted({*(t.get("tags") or []), *v})
            elif t.get(k) is None and v is not None:
                t[k] = v
    t["schema_version"] = SCHEMA_VERSION
    t["trajectory_id"] = tid
    t["runner"] = runner
    t["format"] = fmt
    t["source_path"] = str(unit.primary)
    t.setdefault("source_files", [str(p) for p in unit.files])
    t["source_digest"] = unit.digest
    t["source_locator"] = pt.locator
    t.setdefault("native_id", pt.native_key)
    t["n_steps"] = len(steps)
    t["n_tool_calls"] = n_calls
    t["n_errors"] = n_err
    t["n_subagents"] = len(agents)
    for f in _TOKEN_FIELDS:
        if t.get(f) is None and tok_seen[f]:
            t[f] = tok[f]
    if t.get("total_tokens") is None and (
        t.get("input_tokens") is not None or t.get("output_tokens") is not None
    ):
        t["total_tokens"] = (t.get("input_tokens") or 0) + (t.get("output_tokens") or 0)
    for k in ("started_at", "ended_at"):
        if t.get(k) is not None and not isinstance(t[k], datetime):
            t[k] = parse_ts(t[k])
    if t.get("started_at") is None:
        t["started_at"] = first_ts
    if t.get("ended_at") is None:
        t["ended_at"] = last_ts
    if t.get("duration_s") is None and t.get("started_at") and t.get("ended_at"):
        t["duration_s"] = max((t["ended_at"] - t["started_at"]).total_seconds(), 0.0)
    if t.get("outcome") not in ("success", "failure", "unknown"):
        t["outcome"] = "unknown"
    if isinstance(t.get("metadata"), (dict, list)):
        t["metadata"] = json_str(t["metadata"])
    t["anomalies"] = anomalies
    t["ingested_at"] = now
    return t, steps


def outcome_from_reward(reward: float | None, threshold: float = 1.0) -> str:
    """Binary outcome from a reward: success when reward >= threshold (1.0 for pass/fail rewards)."""
    if reward is None:
        return "unknown"
    return "success" if reward >= threshold else "failure"
