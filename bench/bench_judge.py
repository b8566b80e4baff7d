"""LLM-judge benchmark: throughput under concurrency, requests on a cached rerun, tokens sent on long runs.

Everything runs in one process against the scripted Chat Completions server of tests/llm_servers.py
(127.0.0.1, fixed per-request latency, in a child process like a real model server), through the real
`openai` client:

* throughput -- `judge_lab` over N small failed runs at concurrency 1, 8 and 32 (N scaled so the ideal
  time N x latency / concurrency is the same), against two baselines measured in the same run: the
  ideal time, and bare `openai` requests with the same prompts and concurrency (no rendering,
  validation, cache or lab writes). Efficiency = ideal / measured.
* cached rerun -- the same run again with --force: requests that reach the server (goal 0).
* long runs -- synthetic runs of 100k-400k raw tokens (noisy outputs, many steps, a few errors):
  prompt tokens sent per trajectory vs raw trajectory tokens (goal <= 20%), and whether every
  erroring step's output is in the prompt verbatim.

    python bench/bench_judge.py [--latency 0.2] [--repeat 3] [--base 20]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from llm_servers import ScriptedServerProcess  # noqa: E402

from trajlab.judge import (  # noqa: E402
    LLMJudge,
    LLMSettings,
    estimate_tokens,
    judge_lab,
    load_view,
)
from trajlab.store import Lab  # noqa: E402
from trajlab.taxonomy import load_taxonomy  # noqa: E402

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
TAX = load_taxonomy("omni-failure")


def small_run(i: int, rng: random.Random) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    tid = f"t_bench_{i:05d}"
    domain = rng.choice(["audio", "video", "image"])
    media = {"audio": f"talk_{i}.mp3", "video": f"clip_{i}.mp4", "image": f"receipt_{i}.png"}[domain]
    task = f"In {media}, what is the number mentioned? Run {i}."
    steps = [
        {"kind": "user", "text": task},
        {
            "kind": "reasoning",
            "text": "Let me inspect the media with command-line tools first. " * rng.randint(1, 4),
        },
        {
            "kind": "tool_call",
            "tool": "ffprobe",
            "modality": "video",
            "command": f"ffprobe -show_format {media}",
            "output": json.dumps({"format": {"filename": media, "duration": str(rng.randint(30, 600))}}),
            "exit_code": 0,
        },
        {
            "kind": "tool_call",
            "tool": "whisper" if domain == "audio" else "ffmpeg",
            "modality": domain,
            "command": f"whisper {media} --model small"
            if domain == "audio"
            else f"ffmpeg -i {media} -vf fps=1 f/%04d.png",
            "output": "bash: whisper: command not found"
            if i % 3 == 0
            else "frame= 120 fps=240 " + "x" * rng.randint(50, 800),
            "exit_code": 127 if i % 3 == 0 else 0,
            "is_error": i % 3 == 0,
        },
        {
            "kind": "tool_call",
            "tool": "python",
            "modality": "compute",
            "command": f'python3 -c "print({i} * 3)"',
            "output": str(i * 3),
            "exit_code": 0,
        },
        {"kind": "assistant", "text": f"The answer is {i * 3}."},
    ]
    t = {
        "trajectory_id": tid,
        "runner": "codex",
        "format": "codex-rollout",
        "source_path": f"/bench/{tid}",
        "source_digest": f"xxh3_128:{tid}",
        "ingested_at": NOW,
        "outcome": "failure",
        "domain": domain,
        "task": task,
        "final_answer": steps[-1]["text"],
        "model": "bench-model",
        "n_steps": len(steps),
    }
    rows = [
        {"trajectory_id": tid, "step_index": k, "step_id": f"{tid}:{k}", **s} for k, s in enumerate(steps)
    ]
    return t, rows


def long_run(i: int, rng: random.Random, target_tokens: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    tid = f"t_long_{i:03d}"
    steps: list[dict[str, Any]] = [
        {"kind": "user", "text": f"In dashcam_{i}.mp4, how many red cars pass the sign? Answer a number."}
    ]
    total = 0
    k = 0
    n_err = 0
    while total < target_tokens * 3.5:
        k += 1
        r = rng.random()
        if r < 0.02 and n_err < 8:
            n_err += 1
            out = f"[run {k}] ffmpeg: /data/out_{k}/%04d.png: Permission denied\nConversion failed! (exit 1)"
            steps.append(
                {
                    "kind": "tool_call",
                    "tool": "ffmpeg",
                    "modality": "video",
                    "command": f"ffmpeg -i dashcam_{i}.mp4 -vf fps=2 /data/out_{k}/%04d.png",
                    "output": out,
                    "exit_code": 1,
                    "is_error": True,
                }
            )
        elif r < 0.15:
            txt = " ".join(
                rng.choice(
                    [
                        "I",
                        "should",
                        "check",
                        "the",
                        "frames",
                        "again",
                        "count",
                        "cars",
                        "carefully",
                        "near",
                        "sign",
                    ]
                )
                for _ in range(rng.randint(50, 600))
            )
            steps.append({"kind": "reasoning", "text": txt})
        else:
            n = rng.choice([5, 20, 60, 200, 600])
            out = "".join(
                f"frame_{k:05d}_{j:04d}.png objects=car:{rng.randint(0, 4)} sign:{rng.randint(0, 1)} conf={rng.random():.3f}\n"
                for j in range(n)
            )
            tool = rng.choice(["python", "ls", "cat", "grep", "tesseract"])
            steps.append(
                {
                    "kind": "tool_call",
                    "tool": tool,
                    "modality": "image" if tool == "tesseract" else "compute",
                    "command": f"{tool} segment_{k}",
                    "output": out,
                    "exit_code": 0,
                }
            )
        total += len(steps[-1].get("output") or steps[-1].get("text") or "")
    steps.append({"kind": "assistant", "text": "The answer is 7."})
    t = {
        "trajectory_id": tid,
        "runner": "codex",
        "format": "codex-rollout",
        "source_path": f"/bench/{tid}",
        "source_digest": f"xxh3_128:{tid}",
        "ingested_at": NOW,
        "outcome": "failure",
        "domain": "video",
        "task": steps[0]["text"],
        "final_answer": "The answer is 7.",
        "model": "bench-model",
        "n_steps": len(steps),
    }
    rows = [
        {"trajectory_id": tid, "step_index": j, "step_id": f"{tid}:{j}", **s} for j, s in enumerate(steps)
    ]
    return t, rows


def build_lab(path: Path, runs: list[tuple[dict[str, Any], list[dict[str, Any]]]], with_dag: bool) -> Lab:
    lab = Lab.create(path)
    with lab.write("bench") as txn:
        txn.append("trajectories", [t for t, _ in runs])
        txn.append("steps", [s for _, rows in runs for s in rows])
    if with_dag:
        try:
            from trajlab.dag import build_lab as build_dags  # type: ignore[attr-defined]
        except ImportError:
            return lab
        build_dags(lab, progress=False)
    return lab.refresh()


def bare_requests(
    server: ScriptedServerProcess, prompts: list[list[dict[str, str]]], concurrency: int
) -> float:
    from openai import OpenAI

    client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(
            pool.map(
                lambda m: client.chat.completions.create(model="bare", messages=m, temperature=0), prompts
            )
        )
    return time.perf_counter() - t0


def throughput(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    rng = random.Random(1)
    out = []
    for c in (1, 8, 32):
        n = args.base * c
        lab = build_lab(tmp / f"tp{c}", [small_run(i, rng) for i in range(n)], with_dag=True)
        srv = ScriptedServerProcess(latency_s=args.latency).start()
        s = LLMSettings(model="bench-model", base_url=srv.base_url, max_concurrency=c, timeout_s=30)
        judge = LLMJudge(TAX, s, None)
        prompts = [judge.messages_for(judge.render(load_view(lab, f"t_bench_{i:05d}")))[0] for i in range(n)]
        times, bare = [], []
        for rep in range(args.repeat):
            t0 = time.perf_counter()
            r = judge_lab(
                lab, TAX, s, force=True, use_cache=False, progress=False, cache_dir=tmp / f"cache{c}-{rep}"
            )
            times.append(time.perf_counter() - t0)
            assert r.statuses == {"labeled": n}, r.statuses
            bare.append(bare_requests(srv, prompts, c))
        ideal = n * args.latency / c
        out.append(
            {
                "concurrency": c,
                "n": n,
                "ideal_s": ideal,
                "judge_s": statistics.median(times),
                "bare_s": statistics.median(bare),
                "efficiency": ideal / statistics.median(times),
                "bare_efficiency": ideal / statistics.median(bare),
                "max_in_flight": srv.stats()["max_in_flight"],
            }
        )
        if c == 32:
            # Cached rerun: same settings, cache on, --force (labels exist): requests reaching the server.
            judge_lab(lab, TAX, s, force=True, progress=False, cache_dir=tmp / "cache-rerun")
            before = srv.n_requests
            rr = judge_lab(lab, TAX, s, force=True, progress=False, cache_dir=tmp / "cache-rerun")
            out[-1]["rerun_requests"] = srv.n_requests - before
            out[-1]["rerun_cache_hits"] = rr.cache_hits
        srv.stop()
    return out


def long_runs(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    rng = random.Random(2)
    runs = [long_run(i, rng, tgt) for i, tgt in enumerate([110_000, 150_000, 200_000, 300_000, 400_000])]
    lab = build_lab(tmp / "long", runs, with_dag=args.dag_long)
    judge = LLMJudge(TAX, LLMSettings(model="bench-model"), None)
    rows = []
    for t, steps in runs:
        view = load_view(lab, t["trajectory_id"])
        t0 = time.perf_counter()
        r = judge.render(view)
        secs = time.perf_counter() - t0
        msgs = judge.messages_for(r)
        sent = sum(estimate_tokens(m["content"]) for ms in msgs for m in ms)
        errs = [s for s in steps if s.get("is_error")]
        rows.append(
            {
                "trajectory": t["trajectory_id"],
                "steps": len(steps),
                "raw_tokens": r.raw_tokens,
                "sent_tokens": sent,
                "ratio": sent / r.raw_tokens,
                "requests": len(msgs),
                "errors": len(errs),
                "errors_verbatim": len(r.errors_verbatim),
                "render_s": secs,
                "dag": view.dag_source,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, default=0.2, help="Scripted server latency per request (s).")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--base", type=int, default=20, help="Trajectories per unit of concurrency (N = base x c)."
    )
    ap.add_argument(
        "--dag-long", action="store_true", help="Build DAG tables for the long runs first (slow)."
    )
    ap.add_argument("--json", type=Path, help="Also write the figures to this JSON file.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tp = throughput(args, tmp)
        lr = long_runs(args, tmp)
    print(f"\nthroughput (scripted server, {args.latency * 1000:.0f} ms latency, median of {args.repeat})")
    print(" conc      N   ideal s   judge s   bare s   judge eff.   bare eff.   judge/bare   max in flight")
    for r in tp:
        print(
            f" {r['concurrency']:>4}  {r['n']:>5}  {r['ideal_s']:>8.2f}  {r['judge_s']:>8.2f}  {r['bare_s']:>7.2f}"
            f"  {r['efficiency']:>10.1%}  {r['bare_efficiency']:>10.1%}  {r['judge_s'] / r['bare_s']:>10.2f}x"
            f"  {r['max_in_flight']:>14}"
        )
    last = tp[-1]
    print(
        f"\ncached rerun at concurrency 32: {last['rerun_requests']} requests reached the server "
        f"({last['rerun_cache_hits']} answered from the cache; goal 0)"
    )
    print("\nlong runs (default budget: 16k prompt tokens per request, system prompt included)")
    print(
        " trajectory     steps   raw tokens   sent tokens   sent/raw   requests   errors verbatim   render s"
    )
    for r in lr:
        print(
            f" {r['trajectory']:<12} {r['steps']:>6}  {r['raw_tokens']:>11,}  {r['sent_tokens']:>12,}  {r['ratio']:>8.1%}"
            f"  {r['requests']:>9}  {r['errors_verbatim']:>7}/{r['errors']:<7}  {r['render_s']:>8.2f}"
        )
    med = statistics.median(r["ratio"] for r in lr)
    print(
        f" median sent/raw: {med:.1%} (goal <= 20%); every error verbatim: "
        f"{all(r['errors_verbatim'] == r['errors'] for r in lr)}"
    )
    if args.json:
        args.json.write_text(json.dumps({"throughput": tp, "long_runs": lr, "median_ratio": med}, indent=2))


if __name__ == "__main__":
    main()
