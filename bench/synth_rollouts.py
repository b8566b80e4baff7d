"""Synthesize a large, corpus-like set of Codex rollouts and Claude Code transcripts for benchmarks.

The record mix and sizes are modeled on the real samples in ../shared/corpus (see docs/ingest.md):

* Codex rollout (0.125): one `session_meta` with ~20 KB of base instructions; per turn a `turn_context`,
  `task_started`, injected context messages and the user prompt (+ its `user_message` event); then rounds of
  `reasoning`, 1-3 parallel `exec_command` calls with unified-exec outputs ("Process running with session
  ID" then `write_stdin` polls), `exec_command_end` events with the aggregated output, `token_count` events
  (often twice), some `apply_patch` custom tool calls with `patch_apply_end`, some `web_search_end` +
  `web_search_call` pairs, commentary messages duplicated as `agent_message` events; `task_complete` at the end.
* Claude Code (2.1.x): `file-history-snapshot` and `queue-operation` lines, the prompt, assistant responses
  split one line per content block (thinking, text, tool_use) sharing `message.id` with repeated `usage`
  (final output tokens on the last line), `hook_progress` lines around every tool (more than half of all lines),
  `bash_progress` lines, tool results (~6 KB mean, heavy tail, some `is_error`), `stop_hook_summary` and
  `turn_duration` system lines, sometimes a Task sub-agent (its own `subagents/agent-<id>.jsonl` plus
  `agent_progress` lines) and sometimes an auto-compaction (`compact_boundary`, `isCompactSummary`, and an
  `agent-acompact-<id>.jsonl` file).

Every id (session, call, message, uuid) is fresh and text is drawn from a large seeded pool, so no two files are
byte-identical and nothing dedupes. Output is deterministic for a given seed.

    python bench/synth_rollouts.py --out bench/out/corpus --size-mb 1100 --seed 7
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

_WORD_TEXT = (
    "the a to of and in is for on with that this it as be are from by at or an was not if you we can "
    "def return import class self None True False const let var function async await yield raise except "
    "file path config value error warning test assert module package build compile run output input data "
    "json yaml parquet lab step trajectory agent tool call result exit code status session model token "
    "ffmpeg ffprobe whisper tesseract python pip curl grep sed git audio video image frame transcript "
    "src lib tests docs main index util helper parse render schema table column row query select where "
    "0 1 2 3 4 5 6 7 8 9 10 42 100 256 1024 ok failed passed skipped done TODO FIXME NOTE"
)
WORDS = _WORD_TEXT.split()
COMMANDS = [
    "sed -n '{a},{b}p' src/{m}/{f}.py",
    'rg -n "{w}|{w2}" src tests',
    "rg --files -g '*{w}*'",
    "git status --short",
    "git diff -- src/{m}/{f}.py",
    "nl -ba src/{m}/{f}.py | sed -n '{a},{b}p'",
    "cat package.json",
    "npm test -- --run src/{m}/__tests__/{f}.test.ts",
    "python -m pytest -q tests/test_{f}.py",
    "ffprobe -v error -show_entries format=duration -of csv=p=0 /data/{f}.mp4",
    "ffmpeg -y -i /data/{f}.mp4 -vn -ac 1 -ar 16000 /tmp/{f}.wav",
    "whisper /tmp/{f}.wav --model small --output_format txt",
    "tesseract /tmp/frames/{f}_{a}.png stdout",
    "python3 -c 'import json; print(len(json.load(open(\"{f}.json\"))))'",
    "find . -name '*.{w}' -type f | head -50",
    "ls -la src/{m}",
]
CLAUDE_TOOLS = [
    "Bash",
    "Bash",
    "Bash",
    "Read",
    "Read",
    "Edit",
    "Grep",
    "Glob",
    "WebFetch",
    "WebSearch",
    "Write",
]
T0 = datetime(2026, 2, 1, tzinfo=timezone.utc)


class Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        r = self.r
        # A pool of distinct text blocks; records concatenate a few of them plus unique ids.
        self.pool = [" ".join(r.choices(WORDS, k=r.randint(20, 400))) for _ in range(6000)]
        self.n = 0

    def text(self, mean: int, cap: int = 1 << 22) -> str:
        """About `mean` characters of text (log-normal sizes, heavy tail)."""
        target = min(int(self.r.lognormvariate(0, 1.0) * mean * 0.6) + 16, cap)
        parts: list[str] = []
        size = 0
        while size < target:
            b = self.r.choice(self.pool)
            parts.append(b)
            size += len(b) + 1
        s = "\n".join(parts)
        return s[:target]

    def hexid(self, k: int = 24) -> str:
        self.n += 1
        return f"{self.r.getrandbits(64):016x}{self.n:08x}"[:k]

    def uuid(self) -> str:
        h = f"{self.r.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def command(self) -> str:
        r = self.r
        return r.choice(COMMANDS).format(
            a=r.randint(1, 400),
            b=r.randint(400, 900),
            m=r.choice(WORDS),
            f=r.choice(WORDS) + str(r.randint(0, 99)),
            w=r.choice(WORDS),
            w2=r.choice(WORDS),
        )


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _dump(f: Any, obj: dict[str, Any]) -> int:
    b = orjson.dumps(obj) + b"\n"
    f.write(b)
    return len(b)


# -- Codex rollout -------------------------------------------------------------------------------


def codex_rollout(g: Gen, folder: Path, target: int) -> int:
    r = g.r
    sid = g.uuid()
    t = T0 + timedelta(seconds=r.randint(0, 90 * 86400))
    path = folder / t.strftime("%Y/%m/%d") / f"rollout-{t.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    usage = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0}
    with open(path, "wb") as f:

        def line(typ: str, payload: dict[str, Any]) -> None:
            nonlocal written, t
            t += timedelta(milliseconds=r.randint(5, 4000))
            written += _dump(f, {"timestamp": _ts(t), "type": typ, "payload": payload})

        def token_count() -> None:
            last = {
                "input_tokens": r.randint(15000, 130000),
                "cached_input_tokens": r.randint(0, 100000),
                "output_tokens": r.randint(20, 2000),
                "reasoning_output_tokens": r.randint(0, 500),
            }
            for k in usage:
                usage[k] += last[k]
            info = {
                "total_token_usage": {
                    **usage,
                    "total_tokens": usage["input_tokens"] + usage["output_tokens"],
                },
                "last_token_usage": {**last, "total_tokens": last["input_tokens"] + last["output_tokens"]},
                "model_context_window": 258400,
            }
            for _ in range(2 if r.random() < 0.5 else 1):  # the same event is often emitted twice
                line("event_msg", {"type": "token_count", "info": info, "rate_limits": None})

        line(
            "session_meta",
            {
                "id": sid,
                "timestamp": _ts(t),
                "cwd": f"/home/user/repos/{r.choice(WORDS)}",
                "originator": "codex-tui",
                "cli_version": "0.125.0",
                "source": "cli",
                "model_provider": "openai",
                "base_instructions": {"text": g.text(20000, 40000)},
                "git": {
                    "commit_hash": g.hexid(40),
                    "branch": "main",
                    "repository_url": "git@example.com:x/y.git",
                },
            },
        )
        turn = 0
        while written < target:
            turn += 1
            turn_id = g.uuid()
            line(
                "turn_context",
                {
                    "turn_id": turn_id,
                    "cwd": "/home/user/repos/x",
                    "model": "gpt-5.5",
                    "effort": r.choice(["low", "medium", "high"]),
                    "summary": "auto",
                    "approval_policy": "on-request",
                    "sandbox_policy": {"type": "workspace-write", "network_access": False},
                    "developer_instructions": g.text(3000),
                },
            )
            line("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 258400})
            if turn == 1:
                line(
                    "response_item",
                    {
                        "type": "message",
                        "role": "developer",
                        "content": [
                            {"type": "input_text", "text": "<permissions instructions>" + g.text(900)}
                        ],
                    },
                )
                line(
                    "response_item",
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "<environment_context>" + g.text(400)}],
                    },
                )
            prompt = g.text(300)
            line(
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
            )
            line("event_msg", {"type": "user_message", "message": prompt, "images": [], "local_images": []})
            for _ in range(r.randint(6, 30)):
                if written >= target:
                    break
                line(
                    "response_item",
                    {
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": g.text(300)}],
                        "content": None,
                        "encrypted_content": g.text(1100),
                    },
                )
                kind = r.random()
                if kind < 0.06:
                    cid = "call_" + g.hexid()
                    patch = (
                        "*** Begin Patch\n*** Update File: src/x.py\n@@\n+" + g.text(500) + "\n*** End Patch"
                    )
                    line(
                        "response_item",
                        {
                            "type": "custom_tool_call",
                            "status": "completed",
                            "call_id": cid,
                            "name": "apply_patch",
                            "input": patch,
                        },
                    )
                    token_count()
                    line(
                        "event_msg",
                        {
                            "type": "patch_apply_end",
                            "call_id": cid,
                            "turn_id": turn_id,
                            "stdout": "Success. Updated the following files:\nM src/x.py\n",
                            "stderr": "",
                            "success": True,
                            "changes": {
                                "/home/user/repos/x/src/x.py": {"type": "update", "unified_diff": g.text(300)}
                            },
                        },
                    )
                    out = {
                        "output": "Success. Updated the following files:\nM src/x.py\n",
                        "metadata": {"exit_code": 0, "duration_seconds": 0.4},
                    }
                    line(
                        "response_item",
                        {
                            "type": "custom_tool_call_output",
                            "call_id": cid,
                            "output": orjson.dumps(out).decode(),
                        },
                    )
                    continue
                if kind < 0.09:
                    wid = "ws_" + g.hexid(48)
                    q = " ".join(r.choices(WORDS, k=6))
                    action = {"type": "search", "query": q, "queries": [q, " ".join(r.choices(WORDS, k=5))]}
                    line(
                        "event_msg", {"type": "web_search_end", "call_id": wid, "query": q, "action": action}
                    )
                    line(
                        "response_item", {"type": "web_search_call", "status": "completed", "action": action}
                    )
                    continue
                calls = []
                for _ in range(r.choice([1, 1, 1, 2, 3])):
                    cid = "call_" + g.hexid()
                    cmd = g.command()
                    calls.append((cid, cmd))
                    args = {
                        "cmd": cmd,
                        "workdir": "/home/user/repos/x",
                        "yield_time_ms": 1000,
                        "max_output_tokens": 12000,
                    }
                    line(
                        "response_item",
                        {
                            "type": "function_call",
                            "name": "exec_command",
                            "arguments": orjson.dumps(args).decode(),
                            "call_id": cid,
                        },
                    )
                token_count()
                for cid, cmd in calls:
                    body = g.text(3300)
                    session = str(r.randint(1000, 99999))
                    code = 0 if r.random() < 0.88 else r.choice([1, 2, 124])
                    running = r.random() < 0.45
                    if running:
                        head = f"Chunk ID: {g.hexid(6)}\nWall time: 1.0021 seconds\nProcess running with session ID {session}\nOriginal token count: 0\nOutput:\n"
                        line(
                            "response_item", {"type": "function_call_output", "call_id": cid, "output": head}
                        )
                    else:
                        head = f"Chunk ID: {g.hexid(6)}\nWall time: 0.{r.randint(0, 9999):04d} seconds\nProcess exited with code {code}\nOriginal token count: {len(body) // 4}\nOutput:\n"
                        line(
                            "response_item",
                            {"type": "function_call_output", "call_id": cid, "output": head + body},
                        )
                    line(
                        "event_msg",
                        {
                            "type": "exec_command_end",
                            "call_id": cid,
                            "process_id": session,
                            "turn_id": turn_id,
                            "command": ["/bin/zsh", "-lc", cmd],
                            "cwd": "/home/user/repos/x",
                            "parsed_cmd": [{"type": "unknown", "cmd": cmd}],
                            "source": "unified_exec_startup",
                            "stdout": "",
                            "stderr": "",
                            "aggregated_output": body,
                            "exit_code": code,
                            "duration": {"secs": r.randint(0, 20), "nanos": r.randint(0, 999999999)},
                            "formatted_output": "",
                            "status": "completed",
                        },
                    )
                    if running:
                        pid = "call_" + g.hexid()
                        poll = {
                            "session_id": int(session),
                            "chars": "",
                            "yield_time_ms": 1000,
                            "max_output_tokens": 12000,
                        }
                        line(
                            "response_item",
                            {
                                "type": "function_call",
                                "name": "write_stdin",
                                "arguments": orjson.dumps(poll).decode(),
                                "call_id": pid,
                            },
                        )
                        token_count()
                        out = f"Chunk ID: {g.hexid(6)}\nWall time: 2.5 seconds\nProcess exited with code {code}\nOriginal token count: {len(body) // 4}\nOutput:\n{body}"
                        line("response_item", {"type": "function_call_output", "call_id": pid, "output": out})
                if r.random() < 0.3:
                    msg = g.text(500)
                    line(
                        "response_item",
                        {
                            "type": "message",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": msg}],
                            "phase": "commentary",
                        },
                    )
                    line("event_msg", {"type": "agent_message", "message": msg})
            final = g.text(1200)
            line(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": final}],
                    "phase": "final_answer",
                },
            )
            line("event_msg", {"type": "agent_message", "message": final})
            token_count()
            line("event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": final})
    return written


# -- Claude Code -----------------------------------------------------------------------------------


class _Claude:
    def __init__(self, g: Gen, f: Any, sid: str, agent_id: str | None, t: datetime):
        self.g, self.f, self.sid, self.agent_id, self.t = g, f, sid, agent_id, t
        self.written = 0
        self.parent: str | None = None

    def env(self, typ: str, **kw: Any) -> dict[str, Any]:
        self.t += timedelta(milliseconds=self.g.r.randint(5, 3000))
        u = self.g.uuid()
        d = {
            "parentUuid": self.parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": "/home/user/projects/spotter",
            "sessionId": self.sid,
            "version": "2.1.39",
            "gitBranch": "main",
            "slug": "humble-seeking-umbrella",
            **({"agentId": self.agent_id} if self.agent_id else {}),
            "type": typ,
            **kw,
            "uuid": u,
            "timestamp": _ts(self.t),
        }
        self.parent = u
        return d

    def put(self, d: dict[str, Any]) -> None:
        self.written += _dump(self.f, d)

    def hooks(self, tool_id: str, n: int) -> None:
        for _ in range(n):
            self.put(
                self.env(
                    "progress",
                    data={
                        "type": "hook_progress",
                        "hookEvent": "PostToolUse",
                        "hookName": "PostToolUse:Bash",
                        "command": "/home/user/.claude/hooks/h.sh " + self.g.text(200),
                    },
                    parentToolUseID=tool_id,
                    toolUseID=tool_id,
                )
            )

    def response(self, blocks: list[dict[str, Any]]) -> None:
        """One API response split into one line per block; usage repeated, final output tokens last."""
        g = self.g
        mid = "msg_" + g.hexid()
        usage = {
            "input_tokens": g.r.randint(1, 50),
            "cache_creation_input_tokens": g.r.randint(0, 9000),
            "cache_read_input_tokens": g.r.randint(10000, 150000),
            "output_tokens": 10,
            "service_tier": "standard",
        }
        final_out = g.r.randint(20, 2000)
        for i, b in enumerate(blocks):
            u = dict(usage, output_tokens=final_out if i == len(blocks) - 1 else 10)
            msg = {
                "model": "claude-opus-4-6",
                "id": mid,
                "type": "message",
                "role": "assistant",
                "content": [b],
                "stop_reason": None,
                "usage": u,
            }
            self.put(self.env("assistant", message=msg, requestId="req_" + g.hexid()))

    def tool_round(self, name: str | None = None) -> tuple[str, str]:
        g, r = self.g, self.g.r
        name = name or r.choice(CLAUDE_TOOLS)
        tid = "toolu_" + g.hexid()
        if name == "Bash":
            inp: dict[str, Any] = {"command": g.command(), "description": " ".join(r.choices(WORDS, k=5))}
        elif name in ("Read", "Write", "Edit"):
            inp = {"file_path": f"/home/user/projects/spotter/lib/{r.choice(WORDS)}.ex"}
            if name != "Read":
                inp["content" if name == "Write" else "new_string"] = g.text(600)
        elif name in ("Grep", "Glob"):
            inp = {"pattern": r.choice(WORDS)}
        elif name == "WebFetch":
            inp = {"url": f"https://docs.example.com/{r.choice(WORDS)}", "prompt": g.text(100)}
        else:
            inp = {"query": " ".join(r.choices(WORDS, k=6))}
        blocks: list[dict[str, Any]] = []
        if r.random() < 0.15:
            blocks.append({"type": "thinking", "thinking": g.text(1000), "signature": g.text(300)})
        if r.random() < 0.4:
            blocks.append({"type": "text", "text": g.text(600)})
        blocks.append({"type": "tool_use", "id": tid, "name": name, "input": inp})
        self.response(blocks)
        self.hooks(tid, r.randint(2, 7))
        out = g.text(5000)
        err = r.random() < 0.07
        if name == "Bash":
            for _ in range(r.randint(0, 3)):
                self.put(
                    self.env(
                        "progress",
                        data={"type": "bash_progress", "output": g.text(700), "elapsedTimeSeconds": 3},
                        parentToolUseID=tid,
                        toolUseID="bash-progress-" + g.hexid(6),
                    )
                )
            if err:
                out = f"Exit code {r.choice([1, 2, 127])}\n" + out
            tur: Any = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        else:
            tur = {"type": "text", "file": {"filePath": inp.get("file_path", ""), "content": out}}
        msg = {
            "role": "user",
            "content": [{"tool_use_id": tid, "type": "tool_result", "content": out, "is_error": err}],
        }
        self.put(self.env("user", message=msg, toolUseResult=tur if not err else "Error: " + out[:200]))
        return tid, out


def claude_session(g: Gen, folder: Path, target: int) -> int:
    r = g.r
    sid = g.uuid()
    proj = folder / f"-home-user-projects-{r.choice(WORDS)}"
    proj.mkdir(parents=True, exist_ok=True)
    path = proj / f"{sid}.jsonl"
    t = T0 + timedelta(seconds=r.randint(0, 90 * 86400))
    total = 0
    with open(path, "wb") as f:
        c = _Claude(g, f, sid, None, t)
        c.put(
            {
                "type": "file-history-snapshot",
                "messageId": g.uuid(),
                "snapshot": {"messageId": g.uuid(), "trackedFileBackups": {}, "timestamp": _ts(t)},
                "isSnapshotUpdate": False,
            }
        )
        c.put(
            c.env(
                "user", message={"role": "user", "content": g.text(400)}, permissionMode="bypassPermissions"
            )
        )
        compacted = False
        while c.written < target:
            roll = r.random()
            if roll < 0.02 and c.written > target // 3:
                # A Task sub-agent with its own transcript file and agent_progress lines in the main file.
                aid = g.hexid(7)
                tid = "toolu_" + g.hexid()
                c.response(
                    [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Task",
                            "input": {
                                "subagent_type": "general-purpose",
                                "description": "research",
                                "prompt": g.text(400),
                            },
                        }
                    ]
                )
                sub_dir = proj / sid / "subagents"
                sub_dir.mkdir(parents=True, exist_ok=True)
                with open(sub_dir / f"agent-{aid}.jsonl", "wb") as sf:
                    sc = _Claude(g, sf, sid, aid, c.t)
                    sc.put(sc.env("user", message={"role": "user", "content": g.text(400)}))
                    for _ in range(r.randint(2, 8)):
                        sc.tool_round()
                    sc.response([{"type": "text", "text": g.text(1500)}])
                    total += sc.written
                for _ in range(r.randint(1, 4)):
                    c.put(
                        c.env(
                            "progress",
                            data={
                                "type": "agent_progress",
                                "agentId": aid,
                                "prompt": "",
                                "message": {
                                    "type": "assistant",
                                    "message": {
                                        "role": "assistant",
                                        "content": [{"type": "text", "text": g.text(2000)}],
                                    },
                                    "uuid": g.uuid(),
                                    "timestamp": _ts(c.t),
                                },
                            },
                            parentToolUseID=tid,
                            toolUseID="agent_" + g.hexid(),
                        )
                    )
                msg = {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": tid,
                            "type": "tool_result",
                            "content": [{"type": "text", "text": g.text(1500)}],
                        }
                    ],
                }
                c.put(
                    c.env(
                        "user",
                        message=msg,
                        toolUseResult={"status": "completed", "agentId": aid, "totalDurationMs": 54000},
                    )
                )
                continue
            if roll < 0.03 and not compacted and c.written > target // 2:
                compacted = True
                aid = "acompact-" + g.hexid(6)
                sub_dir = proj / sid / "subagents"
                sub_dir.mkdir(parents=True, exist_ok=True)
                with open(sub_dir / f"agent-{aid}.jsonl", "wb") as sf:
                    sc = _Claude(g, sf, sid, aid, c.t)
                    sc.put(
                        sc.env(
                            "user",
                            message={
                                "role": "user",
                                "content": "Your task is to create a detailed summary of the conversation so far. "
                                + g.text(3000),
                            },
                        )
                    )
                    sc.response([{"type": "text", "text": g.text(12000)}])
                    total += sc.written
                c.parent = None
                c.put(
                    c.env(
                        "system",
                        subtype="compact_boundary",
                        content="Conversation compacted",
                        isMeta=False,
                        level="info",
                        compactMetadata={"trigger": "auto", "preTokens": 167094},
                    )
                )
                c.put(
                    c.env(
                        "user",
                        message={
                            "role": "user",
                            "content": "This session is being continued from a previous conversation. "
                            + g.text(12000),
                        },
                        isCompactSummary=True,
                        isVisibleInTranscriptOnly=True,
                    )
                )
                continue
            c.tool_round()
            if roll > 0.93:
                c.response([{"type": "text", "text": g.text(900)}])
                c.put(
                    c.env(
                        "system",
                        subtype="stop_hook_summary",
                        hookCount=3,
                        hookInfos=[{"command": "/home/user/.claude/hooks/stop.sh"}],
                        hookErrors=[],
                        preventedContinuation=False,
                        stopReason="",
                        hasOutput=True,
                        level="suggestion",
                    )
                )
                c.put(
                    c.env(
                        "system", subtype="turn_duration", durationMs=r.randint(10000, 3000000), isMeta=False
                    )
                )
                c.put(
                    {
                        "type": "queue-operation",
                        "operation": "enqueue",
                        "timestamp": _ts(c.t),
                        "sessionId": sid,
                        "content": g.text(200),
                    }
                )
                c.put(c.env("user", message={"role": "user", "content": g.text(300)}))
        c.response([{"type": "text", "text": g.text(900)}])
        total += c.written
    return total


def synthesize(out: Path, size_mb: float, seed: int = 7, progress: bool = True) -> dict[str, Any]:
    """Write about `size_mb` MB of rollouts under `out` (half Codex, half Claude Code by bytes)."""
    g = Gen(seed)
    r = g.r
    target = int(size_mb * 1e6)
    written = {"codex": 0, "claude_code": 0}
    files = {"codex": 0, "claude_code": 0}
    t0 = time.perf_counter()
    tty, last_decile = sys.stderr.isatty(), 0
    while sum(written.values()) < target:
        if written["codex"] <= written["claude_code"]:
            size = int(min(max(r.lognormvariate(13.1, 0.8), 60_000), 8_000_000))  # median ~0.5 MB
            written["codex"] += codex_rollout(g, out / "codex", size)
            files["codex"] += 1
        else:
            size = int(min(max(r.lognormvariate(13.6, 1.0), 20_000), 12_000_000))  # median ~0.8 MB
            written["claude_code"] += claude_session(g, out / "claude_code", size)
            files["claude_code"] += 1
        if progress:
            done = sum(written.values())
            if tty:  # carriage returns only on a terminal; a log gets one line per 10%
                print(f"\rsynthesized {done / 1e6:8.1f} / {size_mb:.0f} MB", end="", file=sys.stderr)
            elif done * 10 // target > last_decile:
                last_decile = done * 10 // target
                print(f"synthesized {done / 1e6:8.1f} / {size_mb:.0f} MB", file=sys.stderr)
    if progress and tty:
        print(file=sys.stderr)
    return {"bytes": written, "units": files, "seconds": time.perf_counter() - t0, "seed": seed}


def corpus_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*.jsonl"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "corpus")
    ap.add_argument("--size-mb", type=float, default=1100)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    if a.out.exists() and any(a.out.iterdir()):
        sys.exit(f"{a.out} is not empty; remove it first")
    info = synthesize(a.out, a.size_mb, a.seed)
    print(orjson.dumps(info).decode())
    os.sync()


if __name__ == "__main__":
    main()
