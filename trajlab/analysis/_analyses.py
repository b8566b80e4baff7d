"""The SQL-only analyses behind a Python API that checks first what the lab is missing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ConfigError
from ._catalog import get_analysis, normalize_by
from ._result import AnalysisResult
from ._run import LABEL_TABLES, LabFacts, LabLike, execute, lab_facts

FAILURE_SOURCES = tuple(LABEL_TABLES)


def _run(
    lab: LabLike,
    name: str,
    by: str | Iterable[str] | None,
    params: dict[str, Any],
    missing: Callable[[LabFacts], list[str]],
    notes: Callable[[LabFacts], list[str]] | None = None,
    skip_if: Callable[[list[str]], bool] = bool,
) -> AnalysisResult:
    """Run a shipped analysis and say what the lab lacks; when `skip_if(lacks)`, return no rows."""
    info = get_analysis(name)
    cols = normalize_by(info.default_by if by is None else by)
    facts = lab_facts(lab)
    lacks = missing(facts)
    extra = notes(facts) if notes else []
    table, sql, values, _ = execute(lab, name, params=params, by=cols)
    if skip_if(lacks):
        # keep the real columns but no rows: zeros and NULL ratios would read as findings
        table = table.slice(0, 0)
    return AnalysisResult(name, table, sql, values, lacks, extra)


def capability_usage(lab: LabLike, by: str | Iterable[str] = ("model",)) -> AnalysisResult:
    """Share of tool calls and of trajectories using each meta-capability, per group.

    Capabilities (external, file, compute, other) come from the rules in `step_capability.sql`; one row
    per group and capability with n_traj, avg_turns (tool calls per trajectory), n_calls, call_share,
    usage_rate, calls_per_traj and traj_share_when_used.
    """
    return _run(lab, "capability", by, {}, lambda f: f.missing_basics())


def token_efficiency(
    lab: LabLike, by: str | Iterable[str] = ("model", "harness", "reasoning_effort")
) -> AnalysisResult:
    """Tokens per trajectory and per solved task, accuracy, and the Pareto frontier per group.

    Without token counts or outcomes the table still has its groups, with those columns NULL and
    `pareto` false, and `missing` says which of the two is absent.
    """

    def missing(f: LabFacts) -> list[str]:
        if f.n_trajectories == 0:
            return ["no trajectories"]
        out = [] if f.n_with_tokens else ["no token counts"]
        if f.n_success + f.n_failure == 0:
            out.append("no outcomes")
        return out

    return _run(lab, "tokens", by, {}, missing, skip_if=lambda m: m == ["no trajectories"])


def media_strategy(
    lab: LabLike, by: str | Iterable[str] = ("domain",), raw_tools: str = "image_read"
) -> AnalysisResult:
    """Raw media vs tool orchestration: per group, runs that fed media to the model, ran extraction
    tools on it, both or neither, with accuracy and tokens (prompt tokens per model call, and relative to
    the tools-only runs of the group). `raw_tools` lists the tools that put media into the context."""
    if not raw_tools or not all(t.strip() for t in raw_tools.split(",")):
        raise ConfigError(f"raw_tools must be a comma-separated list of tool names, not {raw_tools!r}")

    def missing(f: LabFacts) -> list[str]:
        if f.n_trajectories == 0:
            return ["no trajectories"]
        out = [] if f.n_media_calls else ["no media tool calls"]
        return out + ([] if f.n_with_tokens else ["no token counts"])

    return _run(
        lab, "media", by, {"raw_tools": raw_tools}, missing, skip_if=lambda m: m == ["no trajectories"]
    )


def failure_distribution(
    lab: LabLike,
    source: str = "judge",
    by: str | Iterable[str] = ("model", "benchmark"),
    judge: str | None = None,
) -> AnalysisResult:
    """Failure category counts and shares per group from judge, human, gold or predicted labels.

    `judge` picks the judge kind for source="judge" (`llm` or `rules`; default: LLM labels where there
    are any, else rules labels). See failures.sql for how one label per trajectory is chosen.
    """
    if source not in FAILURE_SOURCES:
        raise ConfigError(f"source must be one of {', '.join(FAILURE_SOURCES)}, not {source!r}")
    if judge is not None and source != "judge":
        raise ConfigError("`judge` only applies to source='judge'")

    def missing(f: LabFacts) -> list[str]:
        if f.n_trajectories == 0:
            return ["no trajectories"]
        return [] if f.labels.get(source) else [f"no {source} labels"]

    def notes(f: LabFacts) -> list[str]:
        return [] if f.n_failure else ["no trajectory has outcome `failure`: coverage is undefined"]

    res = _run(lab, "failures", by, {"source": source, "judge": judge or ""}, missing, notes)
    if not res.missing and res.num_rows == 0:
        # labels exist but none gives a category: all unjudgeable or errors, or none from that judge
        which = f" of the `{judge}` judge" if judge else ""
        hint = "; `trajlab judge show LAB` lists their statuses" if source == "judge" else ""
        res.missing.append(f"no {source} label{which} gives a category{hint}")
    return res


def step_funnel(lab: LabLike, by: str | Iterable[str] = (), bins: int = 10) -> AnalysisResult:
    """Where the first tool error happens (relative position bins), with per-tool recovery in `extras`.

    `result.extras["recovery"]` holds `error_recovery(lab, by)`: per tool, how often an error is followed
    by a later successful call of the same tool or the same command.
    """
    if not isinstance(bins, int) or bins < 1:
        raise ConfigError(f"bins must be a positive integer, not {bins!r}")

    def missing(f: LabFacts) -> list[str]:
        return f.missing_basics() or ([] if f.n_tool_errors else ["no tool errors"])

    res = _run(
        lab, "funnel", by, {"bins": bins}, missing, skip_if=lambda m: bool(m) and m != ["no tool errors"]
    )
    res.extras["recovery"] = error_recovery(lab, by)
    return res


def error_recovery(lab: LabLike, by: str | Iterable[str] = ()) -> AnalysisResult:
    """Per tool: errors, and the share recovered by a later successful call of the same tool / command."""

    def missing(f: LabFacts) -> list[str]:
        return f.missing_basics() or ([] if f.n_tool_errors else ["no tool errors"])

    return _run(lab, "recovery", by, {}, missing)
