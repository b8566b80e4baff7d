"""Harbor trial folders: the outcome of a run from `result.json` and `verifier/reward.txt`.

A trial is `jobs/<job>/<trial>/{result.json, agent/trajectory.json, verifier/reward.txt}`. The ATIF
trajectory (`atif.py`) holds the steps; the trial's `result.json` (a Harbor TrialResult) holds the
reward (`verifier_result.rewards.reward`, or the only reward when there is one), the exception, the
task, the agent and its token and cost totals; `verifier/reward.txt` is the fallback for the reward.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._base import ParseContext, ParsedTrajectory, SourceUnit, load_json
from ._finish import outcome_from_reward
from ._safe import as_dict, as_id, as_int, as_num, as_str, raw_of_obj
from ._scan import through_last

_TERMINUS_TASK_RE = re.compile(r"Task Description:\s*\n(.*?)\n\s*\n\s*Current terminal state:", re.DOTALL)


def terminus_task(text: str) -> str:
    """The task of a Terminus prompt (`Task Description:` up to `Current terminal state:`), else the text:
    the first user message of a Terminus run is its whole system prompt with the task inside."""
    m = _TERMINUS_TASK_RE.search(text, 0, through_last(text, "Current terminal state:"))
    return m.group(1).strip() if m else text


def trial_dir(traj: Path) -> Path | None:
    """The Harbor trial folder of an `agent/trajectory.json`, when the layout is a trial's."""
    if traj.parent.name == "agent" and (traj.parent.parent / "result.json").is_file():
        return traj.parent.parent
    return None


def read_trial(
    trial: Path,
    unit: SourceUnit,
    ctx: ParseContext,
    t: dict[str, Any],
    meta: dict[str, Any],
    anomalies: list[str],
) -> None:
    """Outcome, reward, timing, tokens and cost of the run from its trial folder."""
    result_path = trial / "result.json"
    res = load_json(result_path, ctx)
    if isinstance(res, dict):
        ctx.seen_ok()
        apply_result(res, t, meta)
    elif res is not None:
        ctx.quarantine(result_path, "result.json is not an object", "schema", raw_of_obj(res))
    if t.get("reward") is None:
        apply_reward_txt(trial / "verifier" / "reward.txt", t, anomalies)
    if t.get("reward") is None and not (trial / "verifier" / "reward.txt").is_file():
        anomalies.append("no verifier reward (result.json without rewards, no verifier/reward.txt)")
    native = [p.name for p in unit.companions if p.name.endswith(".trajectory.json") or p.suffix == ".jsonl"]
    if native:
        meta["native_logs"] = native


def result_only(unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
    """A trial folder whose agent wrote no ATIF trajectory: one trajectory with the outcome and no steps."""
    res = load_json(unit.primary, ctx)
    if res is None:
        return
    if not isinstance(res, dict):
        ctx.quarantine(unit.primary, "result.json is not an object", "schema", raw_of_obj(res))
        return
    ctx.seen_ok()
    t: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    anomalies = ["Harbor trial without agent/trajectory.json: outcome only, no steps"]
    apply_result(res, t, meta)
    if t.get("reward") is None:
        apply_reward_txt(unit.primary.parent / "verifier" / "reward.txt", t, anomalies)
    info = as_dict(res.get("agent_info"))
    t["harness"] = as_str(info.get("name"))
    t["runner_version"] = as_str(info.get("version"))
    t["metadata"] = meta
    t["anomalies"] = anomalies
    yield ParsedTrajectory(t, [], native_key=as_id(res.get("id")) or as_id(res.get("trial_name")))


def apply_result(res: dict[str, Any], t: dict[str, Any], meta: dict[str, Any]) -> None:
    """Map a Harbor TrialResult onto the trajectory row."""
    rewards = as_dict(as_dict(res.get("verifier_result")).get("rewards"))
    reward = rewards.get("reward")
    key = "reward"
    if reward is None and len(rewards) == 1:
        key, reward = next(iter(rewards.items()))
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        t["reward"] = float(reward)
        t["outcome"] = outcome_from_reward(float(reward))
        t["outcome_source"] = f"result.json:verifier_result.rewards.{key}"
    if len(rewards) > 1:
        meta["rewards"] = rewards
    exc = res.get("exception_info")
    if isinstance(exc, dict) and (exc.get("exception_type") or exc.get("exception_message")):
        t["exit_status"] = as_str(exc.get("exception_type")) or "error"
        t["error"] = as_str(exc.get("exception_message")) or as_str(exc.get("exception_type"))
    t["task_id"] = as_str(res.get("task_name")) or t.get("task_id")
    if not t.get("model"):  # a trajectory without agent.model_name or step models: the trial's agent
        t["model"] = as_str(as_dict(as_dict(res.get("agent_info")).get("model_info")).get("name"))
    src = res.get("source")
    if isinstance(src, str) and src:
        t["benchmark"] = src
    t["started_at"] = res.get("started_at")
    t["ended_at"] = res.get("finished_at")
    ar = as_dict(res.get("agent_result"))
    for tk, rk in (
        ("input_tokens", "n_input_tokens"),
        ("output_tokens", "n_output_tokens"),
        ("cached_tokens", "n_cache_tokens"),
    ):
        if t.get(tk) is None and as_int(ar.get(rk)) is not None:
            t[tk] = ar[rk]
    if t.get("cost_usd") is None and as_num(ar.get("cost_usd")) is not None:
        t["cost_usd"] = as_num(ar["cost_usd"])
    for k in ("trial_name", "id", "trial_uri"):
        if res.get(k):
            meta[k] = res[k]


def apply_reward_txt(path: Path, t: dict[str, Any], anomalies: list[str]) -> None:
    try:
        text = path.read_bytes().decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return
    try:
        reward = float(text.split()[0])
    except (ValueError, IndexError):
        anomalies.append(f"verifier/reward.txt is not a number: {text[:40]!r}")
        return
    t["reward"] = reward
    t["outcome"] = outcome_from_reward(reward)
    t["outcome_source"] = "verifier/reward.txt"
