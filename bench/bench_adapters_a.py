"""Throughput of the ATIF, Terminal-Bench, OpenHands, SWE-agent, mini-swe-agent, LLM-in-Sandbox and Kira
adapters against the parse-only limit on the same bytes.

For each format a corpus-like tree is synthesized (fresh ids everywhere, outputs of a few KB with a heavy
tail, OpenHands' repeated `model_response`, Terminal-Bench asciinema casts). Then, in one process:

* baseline — parse-only limit: `orjson.loads` of every JSON document / JSONL line (and `ast.literal_eval`
  of every `commands.txt` line) of the tree;
* adapter — `discover` + `adapter.parse` + `finish_trajectory` for every unit (what an ingest worker does
  before writing Parquet).

Each is run `--repeat` times; medians, MB/s, steps/s and the ratio adapter/baseline are printed.

    python bench/bench_adapters_a.py --mb 24 --repeat 3
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from trajlab.formats import ParseContext, adapters, finish_trajectory, get_adapter
from trajlab.ingest import discover, unit_digest

WORDS = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "for",
    "on",
    "with",
    "file",
    "path",
    "audio",
    "video",
    "frame",
    "error",
    "output",
    "value",
    "python",
    "ffprobe",
    "whisper",
    "tesseract",
    "grep",
    "sed",
    "json",
    "step",
    "agent",
    "tool",
    "result",
    "exit",
    "code",
    "status",
    "model",
    "token",
    "0",
    "1",
    "2",
    "3",
    "42",
    "done",
    "failed",
]


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def out_len(rng: random.Random) -> int:
    return int(min(rng.paretovariate(1.3) * 300, 60_000))


def cmd(rng: random.Random) -> str:
    f = rng.choice(["clip", "talk", "scan", "data"])
    return rng.choice(
        [
            f"ffprobe -v error -show_format /data/{f}.mp4",
            f"whisper /tmp/{f}.wav --model small",
            f"grep -rn {f} src",
            f"python3 analyze.py /data/{f}.png",
            f"sed -n '1,80p' src/{f}.py",
            f"tesseract /tmp/{f}.png stdout",
        ]
    )


def gen_atif(d: Path, rng: random.Random, i: int) -> None:
    steps: list[dict[str, Any]] = [
        {"step_id": 1, "source": "user", "message": "Task Description:\n" + text(rng, 60)}
    ]
    for k in range(rng.randint(20, 60)):
        cid = f"call_{k}_{uuid.UUID(int=rng.getrandbits(128))}"
        steps.append(
            {
                "step_id": len(steps) + 1,
                "source": "agent",
                "model_name": "gpt-5",
                "message": text(rng, 40),
                "reasoning_content": text(rng, 30),
                "tool_calls": [
                    {"tool_call_id": cid, "function_name": "bash", "arguments": {"command": cmd(rng)}}
                ],
                "observation": {
                    "results": [{"source_call_id": cid, "content": text(rng, out_len(rng) // 6)}]
                },
                "metrics": {
                    "prompt_tokens": rng.randint(1000, 9000),
                    "completion_tokens": rng.randint(20, 400),
                    "cost_usd": 0.001,
                },
            }
        )
    trial = d / "jobs" / "job" / f"t{i}"
    (trial / "agent").mkdir(parents=True)
    (trial / "agent" / "trajectory.json").write_bytes(
        orjson.dumps(
            {
                "schema_version": "ATIF-v1.5",
                "session_id": str(uuid.UUID(int=rng.getrandbits(128))),
                "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "gpt-5"},
                "steps": steps,
                "final_metrics": {"total_prompt_tokens": 1, "total_completion_tokens": 1},
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    (trial / "result.json").write_bytes(
        orjson.dumps(
            {
                "task_name": f"task{i}",
                "trial_name": f"t{i}",
                "verifier_result": {"rewards": {"reward": rng.choice([0.0, 1.0])}},
            }
        )
    )


def gen_openhands(d: Path, rng: random.Random, i: int) -> None:
    ev: list[dict[str, Any]] = [
        {
            "id": 0,
            "timestamp": "2025-01-01T00:00:00",
            "source": "user",
            "action": "message",
            "args": {"content": text(rng, 50)},
        }
    ]
    for _ in range(rng.randint(15, 40)):
        cid = f"toolu_{uuid.UUID(int=rng.getrandbits(128)).hex}"
        c = cmd(rng)
        mr = {
            "id": f"chatcmpl-{rng.getrandbits(64)}",
            "model": "claude-sonnet-4",
            "choices": [
                {
                    "message": {
                        "content": text(rng, 30),
                        "tool_calls": [
                            {
                                "id": cid,
                                "type": "function",
                                "function": {"name": "execute_bash", "arguments": json.dumps({"command": c})},
                            }
                        ],
                    }
                }
            ],
            "usage": {"prompt_tokens": rng.randint(1000, 9000), "completion_tokens": 80},
        }
        tcm = {
            "function_name": "execute_bash",
            "tool_call_id": cid,
            "model_response": mr,
            "total_calls_in_response": 1,
        }
        aid = len(ev)
        ev.append(
            {
                "id": aid,
                "timestamp": "2025-01-01T00:00:01",
                "source": "agent",
                "action": "run",
                "tool_call_metadata": tcm,
                "args": {"command": c, "thought": text(rng, 30)},
            }
        )
        ev.append(
            {
                "id": aid + 1,
                "timestamp": "2025-01-01T00:00:02",
                "source": "agent",
                "observation": "run",
                "cause": aid,
                "tool_call_metadata": tcm,
                "content": text(rng, out_len(rng) // 6),
                "extras": {"command": c, "metadata": {"exit_code": rng.choice([0, 0, 1])}},
                "success": True,
            }
        )
    (d / f"oh{i}.json").write_bytes(orjson.dumps(ev, option=orjson.OPT_INDENT_2))


def gen_swe(d: Path, rng: random.Random, i: int) -> None:
    hist: list[dict[str, Any]] = [
        {"role": "system", "content": text(rng, 200), "agent": "main"},
        {"role": "user", "content": text(rng, 120), "agent": "main"},
    ]
    traj = []
    for k in range(rng.randint(15, 50)):
        c = cmd(rng)
        hist.append(
            {
                "role": "assistant",
                "content": text(rng, 30),
                "thought": text(rng, 30),
                "action": c,
                "agent": "main",
                "tool_calls": [
                    {
                        "id": f"call_{k}_{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": c})},
                    }
                ],
            }
        )
        o = text(rng, out_len(rng) // 6)
        hist.append({"role": "tool", "content": o, "agent": "main", "tool_call_ids": [f"call_{k}_{i}"]})
        traj.append({"action": c, "observation": o, "response": "", "thought": "", "execution_time": 0.2})
    (d / f"inst{i}").mkdir()
    (d / f"inst{i}" / f"inst{i}.traj").write_bytes(
        orjson.dumps(
            {
                "environment": "main",
                "trajectory": traj,
                "history": hist,
                "info": {
                    "exit_status": "submitted",
                    "submission": "diff",
                    "model_stats": {"tokens_sent": 1000, "tokens_received": 10},
                },
            }
        )
    )


def gen_mini(d: Path, rng: random.Random, i: int) -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": text(rng, 200)},
        {"role": "user", "content": text(rng, 120)},
    ]
    for k in range(rng.randint(15, 60)):
        c = cmd(rng)
        msgs.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: {text(rng, 30)}\n\n```bash\n{c}\n```",
                "extra": {
                    "actions": [{"command": c}],
                    "response": {"usage": {"prompt_tokens": 1000, "completion_tokens": 50}},
                    "cost": 0.001,
                    "timestamp": 1.7e9 + k,
                },
            }
        )
        o = text(rng, out_len(rng) // 6)
        msgs.append(
            {
                "role": "user",
                "content": f"<returncode>0</returncode>\n<output>\n{o}\n</output>",
                "extra": {"raw_output": o, "returncode": 0},
            }
        )
    (d / f"i{i}.traj.json").write_bytes(
        orjson.dumps(
            {
                "info": {"exit_status": "Submitted", "submission": ""},
                "messages": msgs,
                "trajectory_format": "mini-swe-agent-1.1",
            }
        )
    )


def gen_kira(d: Path, rng: random.Random, i: int) -> None:
    item = d / f"item_{i:04d}"
    item.mkdir()
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": text(rng, 200)},
        {"role": "user", "content": text(rng, 80)},
    ]
    recs = []
    for k in range(rng.randint(15, 50)):
        cid = f"call_{k}"
        msgs.append(
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": text(rng, 40),
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": "execute_commands",
                            "arguments": json.dumps({"analysis": "a", "plan": "p", "keystrokes": cmd(rng)}),
                        },
                    }
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": cid, "content": text(rng, out_len(rng) // 6)})
        recs.append(
            {
                "step": k + 1,
                "prompt_tokens": 1000,
                "completion_tokens": 30,
                "cached_tokens": 0,
                "reasoning_tokens": 0,
            }
        )
    (item / "messages.json").write_bytes(orjson.dumps(msgs, option=orjson.OPT_INDENT_2))
    (item / "trajectory.json").write_bytes(orjson.dumps(recs))


def gen_tb(d: Path, rng: random.Random, i: int) -> None:
    trial = d / "run" / f"task{i}" / f"task{i}.1-of-1.run"
    (trial / "sessions").mkdir(parents=True)
    (trial / "results.json").write_bytes(
        orjson.dumps(
            {
                "id": str(uuid.UUID(int=rng.getrandbits(128))),
                "trial_name": f"task{i}.1-of-1.run",
                "task_id": f"task{i}",
                "instruction": text(rng, 40),
                "is_resolved": rng.random() < 0.5,
                "failure_mode": "unset",
                "total_input_tokens": 100,
                "total_output_tokens": 10,
            }
        )
    )
    cmds, lines, t = (
        [["asciinema rec --stdin /logs/agent.cast", "Enter"]],
        [json.dumps({"version": 2, "width": 160, "height": 40, "timestamp": 1.7e9})],
        0.0,
    )
    for _ in range(rng.randint(15, 50)):
        c = cmd(rng)
        cmds.append([c + "\n"])
        t += 1.0
        lines.append(json.dumps([t, "i", c + "\n"]))
        lines.append(json.dumps([t + 0.01, "o", c + "\r\n"]))
        for _ in range(4):
            t += 0.05
            lines.append(json.dumps([t, "o", "\x1b[32m" + text(rng, out_len(rng) // 24) + "\x1b[0m\r\n"]))
        lines.append(json.dumps([t + 0.01, "o", "root@x:/app# "]))
    (trial / "commands.txt").write_text("\n".join(repr(c) for c in cmds) + "\n")
    (trial / "sessions" / "agent.cast").write_text("\n".join(lines) + "\n")


def gen_lis(d: Path, rng: random.Random, i: int) -> None:
    run = d / f"2025010{i % 9}_{i:06d}"
    run.mkdir()
    probs = {}
    for p in range(20):
        steps = [
            {
                "thought": text(rng, 30),
                "reasoning_content": "",
                "action": {"function": "execute_bash", "parameters": {"command": cmd(rng)}},
                "observation": "Exit code: 0\nExecution output of [execute_bash]:\n"
                + text(rng, out_len(rng) // 6),
                "metadata": {"step": k + 1, "exec_time": 1.0},
            }
            for k in range(rng.randint(5, 25))
        ]
        probs[f"p{i}_{p}"] = {
            "problem_statement": text(rng, 40),
            "trajectory": steps,
            "reward": rng.choice([0.0, 1.0]),
            "agent_answer": "1",
            "ground_truth": "1",
        }
    (run / "trajectory.json").write_bytes(orjson.dumps(probs))
    (run / "results.json").write_bytes(orjson.dumps({"config": {"llm_name": "m"}, "task": "math"}))


GENERATORS: dict[str, Callable[[Path, random.Random, int], None]] = {
    "atif": gen_atif,
    "terminal-bench": gen_tb,
    "openhands": gen_openhands,
    "swe-agent": gen_swe,
    "mini-swe-agent": gen_mini,
    "llm-in-sandbox": gen_lis,
    "kira": gen_kira,
}


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def baseline(root: Path) -> int:
    """Parse-only limit: decode every JSON document / JSONL line / commands.txt line; returns records."""
    n = 0
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        data = p.read_bytes()
        if p.name == "commands.txt":
            for ln in data.splitlines():
                ast.literal_eval(ln.decode())
                n += 1
        elif p.suffix == ".cast":
            for ln in data.splitlines():
                orjson.loads(ln)
                n += 1
        else:
            orjson.loads(data)
            n += 1
    return n


def run_adapter(root: Path) -> int:
    now = datetime.now(timezone.utc)
    steps = 0
    for u in discover([root]).units:
        a = get_adapter(u.adapter)
        u.digest = unit_digest(u.files)
        ctx = ParseContext(u, a.runner)
        for pt in a.parse(u, ctx):
            _, s = finish_trajectory(pt, u, a.runner, a.name, now)
            steps += len(s)
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=24.0, help="approximate size of each format's tree")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    adapters()  # import every adapter module before timing
    print(
        f"{'format':<16}{'MB':>7}{'steps':>9}{'base MB/s':>11}{'adapter MB/s':>14}{'steps/s':>10}{'ratio':>8}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-adapters-") as tmp:
        for name, gen in GENERATORS.items():
            if args.only and name not in args.only:
                continue
            root = Path(tmp) / name
            root.mkdir()
            rng = random.Random(args.seed)
            i = 0
            while tree_bytes(root) < args.mb * 1e6:
                gen(root, rng, i)
                i += 1
            mb = tree_bytes(root) / 1e6
            tb, ta, steps = [], [], 0
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                baseline(root)
                tb.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                steps = run_adapter(root)
                ta.append(time.perf_counter() - t0)
            mb_b, mb_a = mb / statistics.median(tb), mb / statistics.median(ta)
            print(
                f"{name:<16}{mb:>7.1f}{steps:>9}{mb_b:>11.1f}{mb_a:>14.1f}{steps / statistics.median(ta):>10.0f}{mb_a / mb_b:>8.2f}"
            )


if __name__ == "__main__":
    main()
