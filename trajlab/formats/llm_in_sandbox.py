"""LLM-in-Sandbox runs (llm-in-sandbox/llm-in-sandbox: `llm_in_sandbox/{agent.py,cli.py,benchmark/runner.py}`).

Single run (`llm-in-sandbox run`): `output/<YYYYmmdd_HHMMSS>/trajectory.json` =
`{problem_statement, steps[{thought, reasoning_content, action{function, parameters},
observation, metadata{step, exec_time}}], metadata{total_steps}}`, plus `files/` (the container's
output folder, `answer.txt` holds the answer) and, with `save_litellm_response`, `request_NNN.json` /
`response_NNN.json` (the only place the model name, token usage and tool-call ids are recorded).

Benchmark run (`benchmark/runner.py`): `<out>/trajectory.json` =
`{problem_id: {problem_statement, trajectory[steps], reward, agent_answer, ground_truth}}`,
`<out>/results.json` (`config` incl. `llm_name`, `task`, `mean_score`...), `logs/<id>.txt` (an
`ERROR:` line when the problem crashed) and `litellm_logs/<id>/request_NNN.json|response_NNN.json`.
The reward comes from the task's `reward.py`: success when it is >= 1.

Observations are R2E-Gym style strings: `Exit code: N\\nExecution output of [execute_bash]:\\n...`,
`Execution output of [str_replace_editor]:\\n...`, `<<< Finished >>>` for `submit`; a reply with no
function call gets the continue message instead. There is no tool-call id in the steps: calls get
`step-N` ids (or the response's tool-call id when the litellm logs exist).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ._base import (
    Adapter,
    ParseContext,
    ParsedTrajectory,
    SourceUnit,
    as_text,
    json_records,
    load_json,
)
from ._finish import outcome_from_reward
from ._safe import BAD_SHAPE, as_dict, as_id, as_int, as_list, as_num, as_str, raw_of_obj

_SINGLE_RE = re.compile(rb'^\s*\{\s*"problem_statement"\s*:')
_BENCH_RE = re.compile(rb'^\s*\{\s*"(?:[^"\\]|\\.){1,300}"\s*:\s*\{\s*"problem_statement"\s*:')
_OBS_RE = re.compile(r"^(?:Exit code:\s*(-?\d+)\s*\n)?Execution output of \[([^\]]*)\]:\n?", re.DOTALL)
_ERROR_RE = re.compile(r"^\s*(Error|ERROR|Unknown action)\b")
_DIR_TS = ("%Y%m%d_%H%M%S", "%Y-%m-%d_%H-%M-%S")


def _litellm_files(d: Path) -> list[Path]:
    return sorted(
        p for p in d.glob("re*_[0-9][0-9][0-9].json") if p.name.startswith(("request_", "response_"))
    )


class LlmInSandboxAdapter(Adapter):
    name = "llm-in-sandbox"
    runner = "llm_in_sandbox"
    extensions = (".json",)
    priority = 30
    description = "LLM-in-Sandbox trajectory.json (single run with files/answer.txt, or benchmark run with results.json)"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        if _SINGLE_RE.match(head_bytes):
            return b'"steps"' in head_bytes or b'"thought"' in head_bytes or path.name == "trajectory.json"
        return bool(_BENCH_RE.match(head_bytes)) and (
            b'"trajectory"' in head_bytes or b'"reward"' in head_bytes or path.name == "trajectory.json"
        )

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "first key is not problem_statement (single run) nor {id: {problem_statement}} (benchmark)"

    def companions(self, path: Path) -> list[Path]:
        d = path.parent
        out: list[Path] = []
        if _SINGLE_RE.match(_head(path)):
            files = d / "files"
            if files.is_dir():
                out += sorted(
                    p
                    for p in files.rglob("*")
                    if p.is_file() and (p.name == "answer.txt" or p.suffix in (".json", ".jsonl"))
                )
            out += _litellm_files(d)
        else:
            out += [p for p in (d / "results.json",) if p.is_file()]
            if (d / "logs").is_dir():
                out += sorted((d / "logs").glob("*.txt"))
            if (d / "litellm_logs").is_dir():
                out += sorted((d / "litellm_logs").rglob("*.json"))
        return out

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        doc = load_json(unit.primary, ctx)
        if doc is None:
            return
        if isinstance(doc, dict) and isinstance(doc.get("steps"), list) and "problem_statement" in doc:
            yield self._single(unit, ctx, doc)
        elif (
            isinstance(doc, dict)
            and doc
            and all(isinstance(v, dict) and "problem_statement" in v for v in doc.values())
        ):
            yield from self._benchmark(unit, ctx, doc)
        else:
            ctx.quarantine(unit.primary, "not an LLM-in-Sandbox trajectory.json", "schema", raw_of_obj(doc))

    def _single(self, unit: SourceUnit, ctx: ParseContext, doc: dict[str, Any]) -> ParsedTrajectory:
        d = unit.primary.parent
        anomalies: list[str] = []
        calls = _llm_calls(d, anomalies)
        steps = _steps(unit.primary, ctx, doc["steps"], doc.get("problem_statement"), calls, anomalies)
        answer_path = d / "files" / "answer.txt"
        answer = (
            answer_path.read_bytes().decode("utf-8", "replace").strip() if answer_path.is_file() else None
        )
        if answer is None:
            anomalies.append("files/answer.txt missing")
        t: dict[str, Any] = {
            "harness": "llm-in-sandbox",
            "task": as_text(doc.get("problem_statement")),
            "model": _model(calls),
            "final_answer": answer if answer is not None else _last_text(steps),
            "started_at": _dir_time(d.name),
            "metadata": {
                "total_steps": as_int(as_dict(doc.get("metadata")).get("total_steps")),
                "mode": "single",
            },
            "anomalies": anomalies,
        }
        return ParsedTrajectory(t, steps, native_key=d.name)

    def _benchmark(
        self, unit: SourceUnit, ctx: ParseContext, doc: dict[str, Any]
    ) -> Iterator[ParsedTrajectory]:
        d = unit.primary.parent
        res = as_dict(_read(d / "results.json"))
        cfg = as_dict(res.get("config"))
        base_meta = {
            k: cfg[k] for k in ("mode", "temperature", "max_steps", "docker_image") if cfg.get(k) is not None
        }
        for rec in json_records(unit.primary, ctx, list(doc.items())):
            pid, entry = rec.obj
            anomalies: list[str] = []
            traj = entry.get("trajectory")
            if not isinstance(traj, list):
                ctx.reject(rec, f"problem {pid}: `trajectory` is not a list")
                continue
            # problem ids name folders: only a plain name is looked up on disk
            safe = "/" not in pid and pid not in (".", "..")
            calls = _llm_calls(d / "litellm_logs" / pid, anomalies) if safe else {}
            try:
                steps = _steps(None, ctx, traj, entry.get("problem_statement"), calls, anomalies, count=False)
            except BAD_SHAPE as e:
                ctx.reject(rec, f"problem {pid}: unexpected shape ({type(e).__name__}: {e})")
                continue
            reward = as_num(entry.get("reward"))
            t: dict[str, Any] = {
                "harness": "llm-in-sandbox",
                "task_id": pid,
                "task": as_text(entry.get("problem_statement")),
                "benchmark": as_str(res.get("task")),
                "model": as_str(cfg.get("llm_name")) or _model(calls),
                "final_answer": as_text(entry.get("agent_answer")),
                "expected_answer": None if entry.get("ground_truth") is None else str(entry["ground_truth"]),
                "metadata": {**base_meta, "benchmark_run": d.name},
                "anomalies": anomalies,
            }
            if reward is not None:
                t["reward"] = reward
                t["outcome"] = outcome_from_reward(reward)
                t["outcome_source"] = "trajectory.json:reward"
            err = _log_error(d / "logs" / f"{pid}.txt") if safe else None
            if err:
                t["error"], t["exit_status"] = err, "error"
            if not traj and cfg.get("mode") != "llm":
                anomalies.append("empty trajectory")
            yield ParsedTrajectory(t, steps, native_key=pid, locator=f"problem={pid}")


def _steps(
    path: Path | None,
    ctx: ParseContext,
    items: list[Any],
    problem: Any,
    calls: dict[int, dict[str, Any]],
    anomalies: list[str],
    count: bool = True,
) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    first = calls.get(1, {})
    if first.get("system"):
        steps.append({"kind": "system", "role": "system", "text": first["system"]})
    user = first.get("user") or as_text(problem)
    if user:
        steps.append({"kind": "user", "role": "user", "text": user})
    # Records (counted, rejectable) or (index, item) pairs
    records: Iterator[Any] = json_records(path, ctx, items) if count and path else enumerate(items)
    for rec in records:
        idx, st = (rec.line, rec.obj) if count and path else rec
        if not isinstance(st, dict):
            if count and path:
                ctx.reject(rec, f"steps[{idx}]: expected an object")
            else:
                anomalies.append(f"step {idx} is not an object")
            continue
        n_before = len(steps)
        try:
            _step(st, idx, steps, calls)
        except BAD_SHAPE as e:
            del steps[n_before:]
            if count and path:
                ctx.reject(rec, f"steps[{idx}]: unexpected shape ({type(e).__name__}: {e})")
            else:
                anomalies.append(f"step {idx} dropped: unexpected shape ({type(e).__name__})")
    return steps


def _step(
    st: dict[str, Any], idx: int | None, steps: list[dict[str, Any]], calls: dict[int, dict[str, Any]]
) -> None:
    meta = as_dict(st.get("metadata"))
    n = as_int(meta.get("step")) or (idx or 0) + 1
    call = calls.get(n, {})
    base = {"source_line": idx, "model": call.get("model")}
    tokens = {k: v for k, v in call.items() if k.endswith("_tokens") and v is not None}
    carrier: dict[str, Any] | None = None
    if st.get("reasoning_content"):
        carrier = {
            **base,
            "kind": "reasoning",
            "role": "assistant",
            "text": as_text(st["reasoning_content"]),
        }
        steps.append(carrier)
    thought = as_text(st.get("thought")) or ""
    a = {
        **base,
        "kind": "assistant",
        "role": "assistant",
        "text": thought,
        "duration_s": as_num(meta.get("exec_time")),
    }
    if thought or carrier is None:
        steps.append(a)
        carrier = carrier or a
    action = as_dict(st.get("action"))
    fn = as_str(action.get("function")) or as_str(action.get("function_name"))
    params = action.get("parameters") if "parameters" in action else action.get("arguments")
    obs = as_text(st.get("observation"))
    if fn:
        cs = {
            **base,
            "kind": "tool_call",
            "role": "assistant",
            "tool_name": fn,
            "arguments": params if params is not None else {},
            "call_id": call.get("tool_call_id") or f"step-{n}",
            **_obs_fields(obs, fn),
        }
        steps.append(cs)
    else:
        steps.append({**base, "kind": "user", "role": "format_error", "text": obs, "is_error": True})
    carrier.update(tokens)


def _obs_fields(obs: str | None, fn: str) -> dict[str, Any]:
    if obs is None:
        return {}
    m = _OBS_RE.match(obs)
    code = int(m.group(1)) if m and m.group(1) is not None else None
    out = obs[m.end() :] if m else obs
    is_error = (code not in (0, None)) or bool(_ERROR_RE.match(out[:200])) or obs.startswith("Unknown action")
    return {"output": out, "exit_code": code, "is_error": is_error or None, "_has_result": True}


def _llm_calls(d: Path, anomalies: list[str]) -> dict[int, dict[str, Any]]:
    """Per LLM call (1-based, = step number): model, usage and tool-call id from the litellm logs."""
    out: dict[int, dict[str, Any]] = {}
    if not d.is_dir():
        return out
    for p in _litellm_files(d):
        m = re.search(r"_(\d{3})\.json$", p.name)
        if not m:
            continue
        doc = _read(p)
        if not isinstance(doc, dict):
            anomalies.append(f"{p.name} unreadable")
            continue
        c = out.setdefault(int(m.group(1)), {})
        if p.name.startswith("request_"):
            for msg in as_list(doc.get("messages"))[:2]:
                role = as_dict(msg).get("role")
                if role in ("system", "user"):
                    c.setdefault(role, as_text(msg.get("content")))
            c.setdefault("model", as_str(doc.get("model")))
            continue
        resp = as_dict(doc.get("response"))
        usage = as_dict(resp.get("usage"))
        c.update(
            input_tokens=as_int(usage.get("prompt_tokens")),
            output_tokens=as_int(usage.get("completion_tokens")),
            cached_tokens=as_int(as_dict(usage.get("prompt_tokens_details")).get("cached_tokens")),
            reasoning_tokens=as_int(as_dict(usage.get("completion_tokens_details")).get("reasoning_tokens")),
        )
        if as_str(resp.get("model")):
            c["model"] = resp["model"]
        for ch in as_list(resp.get("choices")):
            tcs = as_list(as_dict(as_dict(ch).get("message")).get("tool_calls"))
            if tcs and as_id(as_dict(tcs[0]).get("id")):
                c["tool_call_id"] = as_id(tcs[0]["id"])
    return out


def _model(calls: dict[int, dict[str, Any]]) -> str | None:
    return next((c["model"] for _, c in sorted(calls.items()) if c.get("model")), None)


def _last_text(steps: list[dict[str, Any]]) -> str | None:
    for s in reversed(steps):
        if s.get("kind") == "tool_call" and s.get("tool_name") == "submit":
            args = s.get("arguments")
            if isinstance(args, dict) and args:
                return str(next(iter(args.values())))
        if s.get("kind") == "assistant" and s.get("text"):
            return s["text"]
    return None


def _log_error(path: Path) -> str | None:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    m = re.search(r"^ERROR: (.*)$", text, re.MULTILINE)
    return m.group(1).strip() if m else None


def _dir_time(name: str) -> datetime | None:
    for fmt in _DIR_TS:
        try:
            return datetime.strptime(name[:19] if "-" in fmt else name[:15], fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(4096)
    except OSError:
        return b""


def _read(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
