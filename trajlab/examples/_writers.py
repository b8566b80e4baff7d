"""Serialize an action plan in the real on-disk formats of three runners.

- Codex CLI rollout JSONL (session_meta, turn_context, response items, exec_command_end, duplicated
  cumulative token_count events, task_complete),
- Claude Code transcript JSONL (one line per content block sharing message id and usage, tool results
  with toolUseResult, progress noise, turn_duration),
- Harbor ATIF trial folder (agent/trajectory.json ATIF-v1.5, result.json with the verifier reward,
  verifier/reward.txt).
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._plans import Act, Plan
from ._tasks import Task

if TYPE_CHECKING:
    from collections.abc import Callable

SYSTEM_PROMPT = (
    "You are a coding agent working in a sandbox with ffmpeg, ffprobe, python3 and common CLI tools. "
    "You cannot watch or listen to media directly: use tools to extract frames, transcripts and metadata, "
    "then answer the user's question concisely."
)
_TINY_PNG = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")
).decode()


@dataclass
class RunSpec:
    run_id: str
    task: Task
    plan: Plan
    runner: str  # codex | claude_code | atif
    model: str
    effort: str
    condition: str
    started: datetime
    rng: random.Random


@dataclass
class Written:
    primary: Path  # relative to the output folder
    native_id: str
    call_ids: dict[str, str]  # plan call id -> id in the file


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _responses(acts: list[Act]) -> list[tuple[list[Act], Act]]:
    """Group acts into model responses: thinking attached to the action that follows it."""
    out: list[tuple[list[Act], Act]] = []
    thinking: list[Act] = []
    for a in acts:
        if a.kind == "think":
            thinking.append(a)
            continue
        out.append((thinking, a))
        thinking = []
    if thinking:
        out.append((thinking[:-1], thinking[-1]))
    return out


class _Tokens:
    """A plausible token ledger: the prompt grows with the context; reasoning grows with effort."""

    def __init__(self, spec: RunSpec):
        self.context = 1800 + len(spec.task.question) // 4
        self.rng = spec.rng
        self.reasoning = {"low": 60, "medium": 180, "high": 420}.get(spec.effort, 120)
        self.total = {"input": 0, "cached": 0, "output": 0, "reasoning": 0}

    def turn(self, thinking: list[Act], act: Act) -> dict[str, int]:
        prompt = self.context + act.image_tokens
        cached = int(self.context * 0.8)
        out = max(12, len(act.text or act.command) // 4 + self.rng.randint(5, 40))
        reason = self.reasoning + sum(len(t.text) // 4 for t in thinking) if thinking else self.reasoning // 3
        self.context += out + len(act.output) // 4 + act.image_tokens
        u = {"input": prompt, "cached": cached, "output": out + reason, "reasoning": reason}
        for k, v in u.items():
            self.total[k] += v
        return u


def _clock(spec: RunSpec) -> Callable[[float], datetime]:
    t = spec.started

    def tick(seconds: float) -> datetime:
        nonlocal t
        t = t + timedelta(seconds=seconds)
        return t

    return tick


def _web_results(act: Act) -> str:
    return act.output


# -- Codex rollout ---------------------------------------------------------------------------------


def write_codex(spec: RunSpec, out_dir: Path) -> Written:
    sid = str(uuid.UUID(int=spec.rng.getrandbits(128), version=4))
    day = spec.started.strftime("%Y/%m/%d")
    name = f"rollout-{spec.started.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
    rel = Path("codex") / "sessions" / day / name
    tick = _clock(spec)
    tok = _Tokens(spec)
    cwd = f"/work/{spec.task.task_id}"
    lines: list[dict[str, Any]] = []
    call_ids: dict[str, str] = {}
    turn_id = str(uuid.UUID(int=spec.rng.getrandbits(128), version=4))

    def add(typ: str, payload: dict[str, Any], seconds: float = 0.05) -> None:
        lines.append({"timestamp": _iso(tick(seconds)), "type": typ, "payload": payload})

    add(
        "session_meta",
        {
            "id": sid,
            "timestamp": _iso(spec.started),
            "cwd": cwd,
            "originator": "codex_exec",
            "cli_version": "0.63.0",
            "source": "exec",
            "model_provider": "openai",
            "base_instructions": {"text": SYSTEM_PROMPT},
        },
    )
    add(
        "turn_context",
        {
            "cwd": cwd,
            "approval_policy": "never",
            "sandbox_policy": {"type": "workspace-write", "network_access": True},
            "model": spec.model,
            "effort": spec.effort,
            "summary": "auto",
        },
    )
    add("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 272000})
    add(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": spec.task.question}]},
    )
    add(
        "event_msg", {"type": "user_message", "message": spec.task.question, "images": [], "local_images": []}
    )
    final_text = ""
    for thinking, act in _responses(spec.plan.acts):
        usage = tok.turn(thinking, act)
        for th in thinking:
            add(
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": th.text}],
                    "content": None,
                    "encrypted_content": "gAAAAB" + base64.b64encode(spec.rng.randbytes(48)).decode(),
                },
                seconds=spec.rng.uniform(1, 4),
            )
        if act.kind == "call" and act.tool == "web_search":
            cid = f"ws_{act.call_id.lower()}"
            call_ids[act.call_id] = cid
            add("event_msg", {"type": "web_search_end", "call_id": cid, "query": act.command})
            add(
                "response_item",
                {
                    "type": "web_search_call",
                    "status": "completed",
                    "action": {"type": "search", "query": act.command},
                },
            )
            add(
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": f"Search results: {act.output}"}],
                    "content": None,
                    "encrypted_content": None,
                },
            )
        elif act.kind == "call":
            cid = f"call_{act.call_id}"
            call_ids[act.call_id] = cid
            if act.tool == "view_image":
                add(
                    "response_item",
                    {
                        "type": "function_call",
                        "name": "view_image",
                        "arguments": json.dumps({"path": f"{cwd}/{act.command}"}),
                        "call_id": cid,
                    },
                )
                add(
                    "response_item",
                    {"type": "function_call_output", "call_id": cid, "output": "attached image"},
                    seconds=0.3,
                )
                add(
                    "response_item",
                    {
                        "type": "message",
                        "role": "user",
                        "content": [
                            {"type": "input_image", "image_url": "data:image/png;base64," + _TINY_PNG}
                        ],
                    },
                )
            else:
                add(
                    "response_item",
                    {
                        "type": "function_call",
                        "name": "exec_command",
                        "arguments": json.dumps({"cmd": act.command, "workdir": cwd, "yield_time_ms": 10000}),
                        "call_id": cid,
                    },
                )
                code = act.exit_code
                secs = act.duration
                add(
                    "event_msg",
                    {
                        "type": "exec_command_end",
                        "call_id": cid,
                        "command": ["/bin/bash", "-lc", act.command],
                        "cwd": cwd,
                        "exit_code": code,
                        "stdout": act.output if code == 0 else "",
                        "stderr": act.output if code else "",
                        "aggregated_output": act.output,
                        "duration": {"secs": int(secs), "nanos": int((secs % 1) * 1e9)},
                        "status": "completed" if code == 0 else "failed",
                    },
                    seconds=secs,
                )
                header = f"Chunk ID: {spec.rng.randbytes(3).hex()}\nWall time: {secs:.4f} seconds\nProcess exited with code {code}\nOriginal token count: {len(act.output) // 4}\nOutput:\n"
                add(
                    "response_item",
                    {"type": "function_call_output", "call_id": cid, "output": header + act.output},
                )
        elif act.kind in ("say", "final"):
            phase = "final_answer" if act.kind == "final" else "commentary"
            add(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": act.text}],
                    "phase": phase,
                },
            )
            add("event_msg", {"type": "agent_message", "message": act.text})
            final_text = act.text if act.kind == "final" else final_text
        info = {
            "total_token_usage": {
                "input_tokens": tok.total["input"],
                "cached_input_tokens": tok.total["cached"],
                "output_tokens": tok.total["output"],
                "reasoning_output_tokens": tok.total["reasoning"],
                "total_tokens": tok.total["input"] + tok.total["output"],
            },
            "last_token_usage": {
                "input_tokens": usage["input"],
                "cached_input_tokens": usage["cached"],
                "output_tokens": usage["output"],
                "reasoning_output_tokens": usage["reasoning"],
                "total_tokens": usage["input"] + usage["output"],
            },
            "model_context_window": 272000,
        }
        add("event_msg", {"type": "token_count", "info": info, "rate_limits": None})
        if spec.rng.random() < 0.5:  # the real CLI often emits the same event twice
            add("event_msg", {"type": "token_count", "info": info, "rate_limits": None}, seconds=0.001)
    add("event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": final_text})
    path = out_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for ln in lines:
            f.write(json.dumps(ln, ensure_ascii=False) + "\n")
    return Written(rel, sid, call_ids)


# -- Claude Code transcript ----------------------------------------------------------------------


def write_claude(spec: RunSpec, out_dir: Path) -> Written:
    sid = str(uuid.UUID(int=spec.rng.getrandbits(128), version=4))
    cwd = f"/work/{spec.task.task_id}"
    rel = Path("claude") / "projects" / cwd.replace("/", "-") / f"{sid}.jsonl"
    tick = _clock(spec)
    tok = _Tokens(spec)
    lines: list[dict[str, Any]] = []
    call_ids: dict[str, str] = {}
    parent: list[str | None] = [None]

    def base(typ: str, seconds: float = 0.05) -> dict[str, Any]:
        u = str(uuid.UUID(int=spec.rng.getrandbits(128), version=4))
        d = {
            "parentUuid": parent[0],
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": sid,
            "version": "2.1.39",
            "gitBranch": "main",
            "type": typ,
            "uuid": u,
            "timestamp": _iso(tick(seconds)),
        }
        parent[0] = u
        return d

    lines.append({**base("user"), "message": {"role": "user", "content": spec.task.question}})
    for thinking, act in _responses(spec.plan.acts):
        usage = tok.turn(thinking, act)
        mid = "msg_01" + "".join(
            spec.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789") for _ in range(22)
        )
        req = "req_011C" + spec.rng.randbytes(9).hex()
        usage_obj = {
            "input_tokens": max(usage["input"] - usage["cached"], 3),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": usage["cached"],
            "output_tokens": usage["output"],
            "service_tier": "standard",
        }
        blocks: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": th.text, "signature": "Eq" + spec.rng.randbytes(24).hex()}
            for th in thinking
        ]
        cid = None
        if act.kind == "call":
            cid = f"toolu_01{act.call_id}"
            call_ids[act.call_id] = cid
            if act.tool == "view_image":
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": cid,
                        "name": "Read",
                        "input": {"file_path": f"{cwd}/{act.command}"},
                    }
                )
            elif act.tool == "web_search":
                blocks.append(
                    {"type": "tool_use", "id": cid, "name": "WebSearch", "input": {"query": act.command}}
                )
            else:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": cid,
                        "name": "Bash",
                        "input": {"command": act.command, "description": act.command.split()[0]},
                    }
                )
        else:
            blocks.append({"type": "text", "text": act.text})
        for b in blocks:
            msg = {
                "model": spec.model,
                "id": mid,
                "type": "message",
                "role": "assistant",
                "content": [b],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage_obj,
            }
            lines.append({**base("assistant", spec.rng.uniform(0.5, 3)), "message": msg, "requestId": req})
        if act.kind == "call":
            if act.tool == "bash" and act.duration > 5:
                lines.append(
                    {
                        **base("progress", 2.0),
                        "data": {"type": "bash_progress", "output": act.output[:80], "elapsedTimeSeconds": 2},
                        "toolUseID": cid,
                        "parentToolUseID": cid,
                    }
                )
            is_err = bool(act.exit_code)
            if act.tool == "view_image":
                content: Any = [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": _TINY_PNG},
                    }
                ]
                tur: Any = {
                    "type": "image",
                    "file": {"filePath": f"{cwd}/{act.command}", "base64": _TINY_PNG, "type": "image/png"},
                }
            elif act.tool == "web_search":
                content = f'Web search results for query: "{act.command}"\n\n{act.output}'
                tur = {
                    "query": act.command,
                    "results": [{"content": act.output}],
                    "durationSeconds": act.duration,
                }
            elif is_err:
                content = f"Exit code {act.exit_code}\n{act.output}"
                tur = f"Error: Exit code {act.exit_code}\n{act.output}"
            else:
                content = act.output
                tur = {"stdout": act.output, "stderr": "", "interrupted": False, "isImage": False}
            lines.append(
                {
                    **base("user", act.duration),
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "tool_use_id": cid,
                                "type": "tool_result",
                                "content": content,
                                "is_error": is_err,
                            }
                        ],
                    },
                    "toolUseResult": tur,
                }
            )
    lines.append(
        {
            **base("system"),
            "subtype": "turn_duration",
            "durationMs": int((tick(0) - spec.started).total_seconds() * 1000),
            "isMeta": False,
        }
    )
    path = out_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for ln in lines:
            f.write(json.dumps(ln, ensure_ascii=False) + "\n")
    return Written(rel, sid, call_ids)


# -- Harbor ATIF trial ----------------------------------------------------------------------------


def write_atif(spec: RunSpec, out_dir: Path, reward: float) -> Written:
    sid = str(uuid.UUID(int=spec.rng.getrandbits(128), version=4))
    job = f"job-{spec.started.strftime('%Y-%m-%d__%H-%M')}"
    trial = f"{spec.task.task_id}__{sid[:7]}"
    trial_dir = Path("atif") / "jobs" / job / trial
    rel = trial_dir / "agent" / "trajectory.json"
    tick = _clock(spec)
    tok = _Tokens(spec)
    call_ids: dict[str, str] = {}
    price_in, price_out = 0.25e-6, 2.0e-6
    steps: list[dict[str, Any]] = [
        {"step_id": 1, "timestamp": _iso(spec.started), "source": "system", "message": SYSTEM_PROMPT},
        {"step_id": 2, "timestamp": _iso(tick(0.1)), "source": "user", "message": spec.task.question},
    ]
    for thinking, act in _responses(spec.plan.acts):
        usage = tok.turn(thinking, act)
        step: dict[str, Any] = {
            "step_id": len(steps) + 1,
            "timestamp": _iso(tick(spec.rng.uniform(0.5, 3))),
            "source": "agent",
            "model_name": spec.model,
            "reasoning_effort": spec.effort,
            "message": act.text if act.kind in ("say", "final") else "",
            "metrics": {
                "prompt_tokens": usage["input"],
                "completion_tokens": usage["output"],
                "cached_tokens": usage["cached"],
                "cost_usd": round(
                    (usage["input"] - usage["cached"]) * price_in + usage["output"] * price_out, 6
                ),
            },
        }
        if thinking:
            step["reasoning_content"] = "\n".join(t.text for t in thinking)
        if act.kind == "call":
            cid = f"call_{act.call_id}"
            call_ids[act.call_id] = cid
            fn, args = {
                "view_image": ("view_image", {"path": act.command}),
                "web_search": ("web_search", {"query": act.command}),
            }.get(act.tool, ("bash", {"command": act.command}))
            step["tool_calls"] = [{"tool_call_id": cid, "function_name": fn, "arguments": args}]
            content = act.output
            if act.exit_code not in (0, None) and act.tool == "bash":
                content = f"{act.output}\n[exit code: {act.exit_code}]"
            step["observation"] = {"results": [{"source_call_id": cid, "content": content}]}
            tick(act.duration)
        steps.append(step)
    final_metrics = {
        "total_prompt_tokens": tok.total["input"],
        "total_completion_tokens": tok.total["output"],
        "total_cached_tokens": tok.total["cached"],
        "total_cost_usd": round(sum(s.get("metrics", {}).get("cost_usd", 0) for s in steps), 6),
        "total_steps": len(steps),
    }
    traj = {
        "schema_version": "ATIF-v1.5",
        "session_id": sid,
        "agent": {
            "name": "omni-agent",
            "version": "0.3.1",
            "model_name": spec.model,
            "tool_definitions": [
                {"type": "function", "function": {"name": n}} for n in ("bash", "view_image", "web_search")
            ],
        },
        "steps": steps,
        "final_metrics": final_metrics,
    }
    ended = tick(0.5)
    result = {
        "task_name": spec.task.task_id,
        "trial_name": trial,
        "agent_info": {
            "name": "omni-agent",
            "version": "0.3.1",
            "model_info": {"name": spec.model, "provider": "local"},
        },
        "agent_result": {
            "n_input_tokens": tok.total["input"],
            "n_output_tokens": tok.total["output"],
            "cost_usd": final_metrics["total_cost_usd"],
        },
        "verifier_result": {"rewards": {"reward": reward}},
        "exception_info": None,
        "started_at": _iso(spec.started),
        "finished_at": _iso(ended),
    }
    base = out_dir / trial_dir
    (base / "agent").mkdir(parents=True, exist_ok=True)
    (base / "verifier").mkdir(parents=True, exist_ok=True)
    (out_dir / rel).write_text(json.dumps(traj, indent=2, ensure_ascii=False), encoding="utf-8")
    (base / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    (base / "verifier" / "reward.txt").write_text(f"{reward:g}\n", encoding="utf-8")
    return Written(rel, sid, call_ids)
