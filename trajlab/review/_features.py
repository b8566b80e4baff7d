"""Per-trajectory features for label propagation, computed with DuckDB aggregations (bounded memory).

Structured features (a dict per trajectory): step-kind counts, tool usage (`tool=ffmpeg`), tool-call
modalities (`modality=audio`), error signals (error/timeout/non-zero exit counts and regex families
over tool outputs: not-found, permission, timeout, network, missing module, traceback), the task
domain, and the DAG metrics of `dag_metrics` when the DAG stage ran. Text: the decisive step (its tool,
command, message and the head of its output), where the decisive step is the reviewed judge label's,
else the top DAG candidate, else the first error, else the last step — the same rule for training and
prediction, so cross-validated accuracy is what predictions will see.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Lab

ERROR_PATTERNS: dict[str, str] = {
    "not_found": r"command not found|no such file|not recognized|executable file not found",
    "permission": r"permission denied|operation not permitted|eacces",
    "timeout": r"timed? ?out|deadline exceeded",
    "network": r"connection (refused|reset)|could not resolve|name resolution|network is unreachable|http(error)? ?[45]\d\d",
    "missing_module": r"modulenotfounderror|importerror|no module named",
    "traceback": r"traceback \(most recent call last\)",
}
DAG_NUMERIC = (
    "n_nodes",
    "depth",
    "width",
    "longest_path",
    "n_branches",
    "n_merges",
    "n_retries",
    "n_recoveries",
    "n_errors",
    "n_unrecovered_errors",
    "n_dead_ends",
    "answer_path_share",
)
TEXT_HEAD = 2000


def _log(n: float) -> float:
    return math.log1p(max(float(n), 0.0))


def _ids_clause(con: Any, ids: list[str]) -> str:
    con.register("_wanted_ids", _ids_table(ids))
    return "trajectory_id IN (SELECT trajectory_id FROM _wanted_ids)"


def _ids_table(ids: list[str]) -> Any:
    import pyarrow as pa

    return pa.table({"trajectory_id": pa.array(ids, pa.string())})


def structured_features(lab: Lab, ids: list[str]) -> dict[str, dict[str, float]]:
    con = lab.connect()
    where = _ids_clause(con, ids)
    feats: dict[str, dict[str, float]] = defaultdict(dict)
    for tid, kind, n, errs, tos, nz in con.execute(
        f"""SELECT trajectory_id, kind, count(*), sum(is_error::INT), sum(timed_out::INT),
                   sum((exit_code IS NOT NULL AND exit_code <> 0)::INT)
            FROM steps WHERE {where} GROUP BY ALL"""
    ).fetchall():
        f = feats[tid]
        f[f"kind={kind}"] = _log(n)
        f["steps"] = f.get("steps", 0.0) + n
        f["errors"] = f.get("errors", 0.0) + (errs or 0)
        f["timeouts"] = f.get("timeouts", 0.0) + (tos or 0)
        f["nonzero_exit"] = f.get("nonzero_exit", 0.0) + (nz or 0)
    for f in feats.values():
        for key in ("steps", "errors", "timeouts", "nonzero_exit"):
            f[key] = _log(f[key])
    for tid, tool, n, errs in con.execute(
        f"""SELECT trajectory_id, coalesce(tool, tool_name, 'unknown'), count(*), sum(is_error::INT)
            FROM steps WHERE kind = 'tool_call' AND {where} GROUP BY ALL"""
    ).fetchall():
        feats[tid][f"tool={tool}"] = _log(n)
        if errs:
            feats[tid][f"tool_error={tool}"] = _log(errs)
    for tid, modality, n in con.execute(
        f"""SELECT trajectory_id, modality, count(*) FROM steps
            WHERE kind = 'tool_call' AND modality IS NOT NULL AND {where} GROUP BY ALL"""
    ).fetchall():
        feats[tid][f"modality={modality}"] = _log(n)
    sums = ", ".join(
        f"sum(regexp_matches(lower(coalesce(output, '') || ' ' || coalesce(stderr, '')), '{p}')::INT)"
        for p in ERROR_PATTERNS.values()
    )
    for row in con.execute(
        f"SELECT trajectory_id, {sums} FROM steps WHERE kind IN ('tool_call', 'tool_result') AND {where} GROUP BY ALL"
    ).fetchall():
        for name, n in zip(ERROR_PATTERNS, row[1:]):
            if n:
                feats[row[0]][f"signal={name}"] = _log(n)
    for tid, domain, n_sub in con.execute(
        f"SELECT trajectory_id, domain, n_subagents FROM trajectories WHERE {where}"
    ).fetchall():
        feats[tid][f"domain={domain or 'unknown'}"] = 1.0
        feats[tid]["subagents"] = _log(n_sub or 0)
    cols = ", ".join(DAG_NUMERIC)
    for row in con.execute(
        f"SELECT trajectory_id, {cols}, modalities, answer_branches FROM dag_metrics WHERE {where}"
    ).fetchall():
        f = feats[row[0]]
        for name, v in zip(DAG_NUMERIC, row[1 : 1 + len(DAG_NUMERIC)]):
            if v is not None:
                f[f"dag.{name}"] = float(v) if name == "answer_path_share" else _log(v)
        for m in set(row[-2] or []):
            f[f"dag.modality={m}"] = 1.0
        for b in set(row[-1] or []):
            f[f"dag.answer_branch={b.split('#')[0]}"] = 1.0
    return {tid: dict(feats.get(tid, {})) for tid in ids}


def default_decisive_steps(lab: Lab, ids: list[str]) -> dict[str, int | None]:
    """judge label's decisive step, else top DAG candidate, else first error, else the last step."""
    con = lab.connect()
    where = _ids_clause(con, ids)
    out: dict[str, int | None] = {}
    fallback: dict[str, int | None] = {}
    for tid, first_err, n_steps in con.execute(
        f"""SELECT trajectory_id, min(step_index) FILTER (WHERE is_error OR timed_out), max(step_index)
            FROM steps WHERE {where} GROUP BY ALL"""
    ).fetchall():
        fallback[tid] = first_err if first_err is not None else n_steps
    for tid, cands in con.execute(
        f"SELECT trajectory_id, decisive_candidates FROM dag_metrics WHERE {where}"
    ).fetchall():
        try:
            ranked = json.loads(cands or "[]")
        except json.JSONDecodeError:
            ranked = []
        step = next((c.get("step_index") for c in ranked if c.get("step_index") is not None), None)
        if step is not None:
            fallback[tid] = int(step)
    for tid, step in con.execute(
        f"""SELECT trajectory_id, arg_max(decisive_step_index, created_at)
            FROM judge_labels WHERE status = 'labeled' AND decisive_step_index IS NOT NULL AND {where}
            GROUP BY ALL"""
    ).fetchall():
        out[tid] = step
    return {tid: out.get(tid, fallback.get(tid)) for tid in ids}


def step_texts(lab: Lab, steps: dict[str, int | None]) -> dict[str, str]:
    """The text of each trajectory's chosen step: tool, command, message and output head."""
    wanted = [f"{tid}:{s}" for tid, s in steps.items() if s is not None]
    if not wanted:
        return {tid: "" for tid in steps}
    con = lab.connect()
    import pyarrow as pa

    con.register("_wanted_steps", pa.table({"step_id": pa.array(wanted, pa.string())}))
    out = {tid: "" for tid in steps}
    for tid, tool, command, text, output, stderr in con.execute(
        """SELECT trajectory_id, coalesce(tool, tool_name), command, text, output, stderr FROM steps
           WHERE step_id IN (SELECT step_id FROM _wanted_steps)"""
    ).fetchall():
        parts: Iterable[str | None] = (tool, command, text, (output or "")[:TEXT_HEAD], (stderr or "")[:500])
        out[tid] = "\n".join(p for p in parts if p)
    return out
