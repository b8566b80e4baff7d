"""Throughput of the Inspect AI, chat-messages, OTel GenAI, `codex exec --json`, Claude stream-json and
Who&When adapters against the parse-only limit on the same bytes.

For each format a corpus-like set of files is synthesized (fresh ids everywhere, tool outputs of a few
KB with a heavy tail, chat spans that re-send the conversation so far, Inspect model events that carry
their inputs). Then, in one process:

* baseline — parse-only limit: `orjson.loads` of every JSON document / JSONL line (for `.eval`
  archives: reading and decoding every zip entry);
* adapter — `adapter.parse` + `finish_trajectory` for every file (what an ingest worker does before
  writing Parquet).

Each is run `--repeat` times; medians, MB/s, steps/s and the ratio adapter/baseline are printed.

    python bench/bench_adapters_b.py --mb 16 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from trajlab.formats import ParseContext, SourceUnit, finish_trajectory, get_adapter
from trajlab.ingest import unit_digest

WORDS = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "for",
    "file",
    "audio",
    "video",
    "frame",
    "error",
    "output",
    "python",
    "ffprobe",
    "whisper",
    "tesseract",
]
CMDS = [
    "ffprobe -v error -show_streams clip.mp4",
    "ffmpeg -i clip.mp4 -vf fps=1 frames/%03d.png",
    "whisper audio.wav --model base",
    "tesseract frames/001.png -",
    "python3 -c 'print(sum(range(10)))'",
    "grep -rn speaker notes/",
]


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(1, n // 5)))


def out_len(rng: random.Random) -> int:
    return min(int(rng.paretovariate(1.3) * 400), 60_000)


def gen_chat(d: Path, rng: random.Random, i: int) -> None:
    with open(d / f"rows-{i}.jsonl", "w") as f:
        for _row in range(20):
            msgs: list[dict[str, Any]] = [
                {"role": "system", "content": text(rng, 800)},
                {"role": "user", "content": text(rng, 400)},
            ]
            for _ in range(rng.randint(10, 30)):
                cid = f"call_{uuid.uuid4().hex[:24]}"
                args = json.dumps({"command": rng.choice(CMDS)})
                msgs.append(
                    {
                        "role": "assistant",
                        "content": text(rng, 200),
                        "tool_calls": [
                            {
                                "id": cid,
                                "type": "function",
                                "function": {"name": "execute_bash", "arguments": args},
                            }
                        ],
                    }
                )
                msgs.append(
                    {
                        "role": "tool",
                        "tool_call_id": cid,
                        "content": text(rng, out_len(rng)) + "\n[Command finished with exit code 0]",
                    }
                )
            msgs.append({"role": "assistant", "content": text(rng, 300)})
            row = {
                "instance_id": f"inst-{uuid.uuid4().hex[:8]}",
                "resolved": rng.random() < 0.4,
                "messages": msgs,
            }
            f.write(json.dumps(row) + "\n")


def gen_who(d: Path, rng: random.Random, i: int) -> None:
    hist: list[dict[str, Any]] = [{"content": text(rng, 1500), "role": "assistant", "name": "Planner_Expert"}]
    for _ in range(rng.randint(5, 20)):
        hist.append(
            {
                "content": "Run this:\n```python\nprint(" + str(rng.random()) + ")\n```",
                "role": "user",
                "name": "Math_Expert",
            }
        )
        hist.append(
            {
                "content": f"exitcode: 0 (execution succeeded)\nCode output: {text(rng, out_len(rng))}",
                "role": "user",
                "name": "Computer_terminal",
            }
        )
    doc = {
        "is_correct": False,
        "question": text(rng, 300),
        "question_ID": str(uuid.uuid4()),
        "level": "1",
        "ground_truth": "42",
        "history": hist,
        "mistake_agent": "Math_Expert",
        "mistake_step": "1",
        "mistake_reason": text(rng, 100),
    }
    (d / f"{i}.json").write_text(json.dumps(doc, indent=4))


def gen_codex_exec(d: Path, rng: random.Random, i: int) -> None:
    lines = [{"type": "thread.started", "thread_id": str(uuid.uuid4())}, {"type": "turn.started"}]
    todo = [{"text": text(rng, 30), "completed": False} for _ in range(5)]
    lines.append({"type": "item.started", "item": {"id": "item_0", "type": "todo_list", "items": todo}})
    for k in range(1, rng.randint(30, 80)):
        cmd = "bash -lc '" + rng.choice(CMDS) + "'"
        lines.append(
            {
                "type": "item.started",
                "item": {
                    "id": f"item_{k}",
                    "type": "command_execution",
                    "command": cmd,
                    "aggregated_output": "",
                    "exit_code": None,
                    "status": "in_progress",
                },
            }
        )
        out = text(rng, out_len(rng))
        lines.append(
            {
                "type": "item.completed",
                "item": {
                    "id": f"item_{k}",
                    "type": "command_execution",
                    "command": cmd,
                    "aggregated_output": out,
                    "exit_code": 0,
                    "status": "completed",
                },
            }
        )
        if k % 7 == 0:
            lines.append(
                {"type": "item.updated", "item": {"id": "item_0", "type": "todo_list", "items": todo}}
            )
    lines.append(
        {"type": "item.completed", "item": {"id": "item_x", "type": "agent_message", "text": text(rng, 400)}}
    )
    lines.append(
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 20000, "cached_input_tokens": 15000, "output_tokens": 900},
        }
    )
    (d / f"exec-{i}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def gen_claude_stream(d: Path, rng: random.Random, i: int) -> None:
    sid = str(uuid.uuid4())
    lines: list[dict[str, Any]] = [
        {
            "type": "system",
            "subtype": "init",
            "session_id": sid,
            "model": "claude-sonnet-4-6",
            "claude_code_version": "2.1.63",
            "tools": ["Bash"],
            "uuid": str(uuid.uuid4()),
        }
    ]
    for _ in range(rng.randint(20, 60)):
        mid, tid = f"msg_{uuid.uuid4().hex[:20]}", f"toolu_{uuid.uuid4().hex[:20]}"
        usage = {"input_tokens": 3, "cache_read_input_tokens": 15000, "output_tokens": 80}
        lines.append(
            {
                "type": "assistant",
                "message": {
                    "id": mid,
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [{"type": "text", "text": text(rng, 200)}],
                    "usage": usage,
                },
                "parent_tool_use_id": None,
                "session_id": sid,
                "uuid": str(uuid.uuid4()),
            }
        )
        lines.append(
            {
                "type": "assistant",
                "message": {
                    "id": mid,
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Bash",
                            "input": {"command": rng.choice(CMDS)},
                        }
                    ],
                    "usage": usage,
                },
                "parent_tool_use_id": None,
                "session_id": sid,
                "uuid": str(uuid.uuid4()),
            }
        )
        out = text(rng, out_len(rng))
        lines.append(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": tid, "content": out, "is_error": False}
                    ],
                },
                "tool_use_result": {"stdout": out, "stderr": "", "interrupted": False},
                "parent_tool_use_id": None,
                "session_id": sid,
                "uuid": str(uuid.uuid4()),
            }
        )
    lines.append(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "num_turns": 30,
            "result": text(rng, 200),
            "session_id": sid,
            "total_cost_usd": 0.4,
            "duration_ms": 90000,
            "modelUsage": {
                "claude-sonnet-4-6": {
                    "inputTokens": 100,
                    "outputTokens": 3000,
                    "cacheReadInputTokens": 400000,
                    "cacheCreationInputTokens": 2000,
                }
            },
        }
    )
    (d / f"stream-{i}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def _sample(rng: random.Random, sid: int) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"id": uuid.uuid4().hex, "role": "user", "content": text(rng, 300)}]
    events: list[dict[str, Any]] = []
    for _ in range(rng.randint(5, 15)):
        cid, mid = f"call_{uuid.uuid4().hex[:16]}", uuid.uuid4().hex
        call = {
            "id": mid,
            "role": "assistant",
            "content": text(rng, 100),
            "tool_calls": [{"id": cid, "function": "bash", "arguments": {"cmd": rng.choice(CMDS)}}],
        }
        events.append(
            {
                "event": "model",
                "span_id": "s",
                "timestamp": "2025-06-01T10:00:00+00:00",
                "working_time": 1.0,
                "input": list(msgs),
                "output": {
                    "choices": [{"message": call}],
                    "usage": {"input_tokens": 900, "output_tokens": 40},
                },
            }
        )
        msgs.append(call)
        out = text(rng, out_len(rng))
        events.append(
            {
                "event": "tool",
                "span_id": "s",
                "id": cid,
                "function": "bash",
                "arguments": call["tool_calls"][0]["arguments"],
                "result": out,
                "timestamp": "2025-06-01T10:00:01+00:00",
                "working_time": 0.5,
            }
        )
        msgs.append(
            {"id": uuid.uuid4().hex, "role": "tool", "tool_call_id": cid, "function": "bash", "content": out}
        )
    msgs.append({"id": uuid.uuid4().hex, "role": "assistant", "content": "ANSWER: 7"})
    return {
        "id": sid,
        "epoch": 1,
        "input": msgs[0]["content"],
        "target": "7",
        "messages": msgs,
        "events": events,
        "scores": {"match": {"value": rng.choice("CI")}},
        "uuid": uuid.uuid4().hex,
    }


def gen_inspect(d: Path, rng: random.Random, i: int) -> None:
    header = {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": uuid.uuid4().hex,
            "run_id": uuid.uuid4().hex,
            "task": "bench",
            "model": "openai/gpt-4o",
            "scorers": [{"name": "match"}],
        },
    }
    with zipfile.ZipFile(d / f"run-{i}.eval", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header))
        for k in range(10):
            z.writestr(f"samples/{k}_epoch_1.json", json.dumps(_sample(rng, k)))


def gen_otel(d: Path, rng: random.Random, i: int) -> None:
    spans = []
    for _t in range(5):
        trace = uuid.uuid4().hex
        history: list[dict[str, Any]] = [
            {"role": "user", "parts": [{"type": "text", "content": text(rng, 300)}]}
        ]
        for k in range(rng.randint(5, 15)):
            cid = f"c{k}-{uuid.uuid4().hex[:6]}"
            out = {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": cid,
                        "name": "run_shell",
                        "arguments": {"command": rng.choice(CMDS)},
                    }
                ],
            }
            attrs = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 500,
                "gen_ai.usage.output_tokens": 30,
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps([out]),
            }
            spans.append(_otlp_span(trace, attrs, 2 * k))
            res = text(rng, out_len(rng))
            spans.append(
                _otlp_span(
                    trace,
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "run_shell",
                        "gen_ai.tool.call.id": cid,
                        "gen_ai.tool.call.result": res,
                    },
                    2 * k + 1,
                )
            )
            history = [
                *history,
                out,
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": cid, "response": res}]},
            ]
    env = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "bench"}}]},
                "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
            }
        ]
    }
    (d / f"otlp-{i}.json").write_text(json.dumps(env))


def _otlp_span(trace: str, attrs: dict[str, Any], t: int) -> dict[str, Any]:
    def av(v: Any) -> dict[str, Any]:
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}

    start = 1_750_000_000_000_000_000 + t * 1_000_000_000
    return {
        "traceId": trace,
        "spanId": uuid.uuid4().hex[:16],
        "name": "span",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 500_000_000),
        "attributes": [{"key": k, "value": av(v)} for k, v in attrs.items()],
    }


FORMATS: dict[str, tuple[str, Callable[[Path, random.Random, int], None]]] = {
    "chat-messages": ("chat-messages", gen_chat),
    "who-and-when": ("who-and-when", gen_who),
    "codex-exec-json": ("codex-exec-json", gen_codex_exec),
    "claude-stream-json": ("claude-stream-json", gen_claude_stream),
    "inspect-eval": ("inspect-eval", gen_inspect),
    "otel-genai": ("otel-genai", gen_otel),
}


def baseline(files: list[Path]) -> int:
    n = 0
    for f in files:
        if f.suffix == ".eval":
            with zipfile.ZipFile(f) as z:
                for name in z.namelist():
                    orjson.loads(z.read(name))
                    n += 1
        elif f.suffix == ".jsonl":
            with open(f, "rb") as fh:
                for line in fh:
                    if line.strip():
                        orjson.loads(line)
                        n += 1
        else:
            orjson.loads(f.read_bytes())
            n += 1
    return n


def run_adapter(name: str, files: list[Path]) -> int:
    adapter = get_adapter(name)
    now = datetime.now(timezone.utc)
    steps = 0
    for f in files:
        unit = SourceUnit(f, adapter.name)
        unit.digest = unit_digest([f])
        ctx = ParseContext(unit, adapter.runner)
        for pt in adapter.parse(unit, ctx):
            _t, s = finish_trajectory(pt, unit, adapter.runner, adapter.name, now)
            steps += len(s)
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=16, help="MB of synthesized files per format")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default=None, help="comma-separated format names")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    chosen = [f for f in FORMATS if not args.only or f in args.only.split(",")]
    print(
        f"{'format':<20} {'MB':>6} {'parse-only s':>13} {'adapter s':>10} {'MB/s':>7} {'steps/s':>9} {'ratio':>6}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in chosen:
            name, gen = FORMATS[fmt]
            d = Path(tmp) / fmt
            d.mkdir()
            i = 0
            while sum(p.stat().st_size for p in d.iterdir()) < args.mb * 1e6:
                gen(d, rng, i)
                i += 1
            files = sorted(d.iterdir())
            mb = sum(p.stat().st_size for p in files) / 1e6
            base_t, ad_t, steps = [], [], 0
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                baseline(files)
                base_t.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                steps = run_adapter(name, files)
                ad_t.append(time.perf_counter() - t0)
            b, a = statistics.median(base_t), statistics.median(ad_t)
            print(
                f"{fmt:<20} {mb:>6.1f} {b:>13.3f} {a:>10.3f} {mb / a:>7.1f} {steps / a:>9.0f} {b / a:>6.2f}"
            )


if __name__ == "__main__":
    main()
