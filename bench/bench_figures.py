"""Benchmark: the paper figure set over a synthesized lab of 100k trajectories.

    python bench/bench_figures.py                       # 100k trajectories, lab cached in /tmp/trajlab-bench-figures
    python bench/bench_figures.py --trajectories 20000 --repeat 5
    python bench/bench_figures.py --rebuild

What is timed (medians over --repeat runs, each a fresh measurement in this process):

- compute  : every figure function (`FIGURES[name](lab)`: its analysis SQL, statistics, plotly figure)
- export   : `export_figures(lab, OUT, formats=("pdf", "png"))`, the whole set end to end (compute +
             one kaleido server + 2 files per figure + sidecars)
- per figure, rendering PDF+PNG of already computed figures:
    shared   : one kaleido/Chromium server for the whole set (what export_figures does); per-figure
               time = the figure's two files through the running server; server start-up reported apart
    baseline : one browser per figure (start Chromium, load plotly.js, write the two files, close), i.e.
               what calling `fig.write_image` per figure costs without a shared server
The ratio is baseline / shared per figure (median over figures of the per-figure medians) and for the
whole set (sum of baseline figure times vs server start + sum of shared figure times).

The lab: lognormal trajectory lengths (median ~10 tool calls), 12 tools with outcome-dependent usage,
6 models x 2 harnesses x 3 reasoning efforts with token counts, difficulty 1-3, conditions no-skill /
skill, judge labels on every failure, gold and human labels on 5% of them; the final answer's model
call records prompt tokens (for media_tokens: a lab cached before that lacks them, use --rebuild).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

from trajlab.figures import FIGURES, FigureRenderer, export_figures, find_browser
from trajlab.schema import TABLES, arrow_schema, default_row
from trajlab.store import Lab

TOOLS = [
    "python",
    "ls",
    "cat",
    "grep",
    "ffprobe",
    "ffmpeg",
    "whisper",
    "tesseract",
    "curl",
    "read",
    "pip",
    "web_search",
]
MODALITY = {
    "ffprobe": "video",
    "ffmpeg": "video",
    "whisper": "audio",
    "tesseract": "image",
    "curl": "web",
    "web_search": "web",
}
FAVOUR = {"ffprobe": 2.0, "whisper": 1.6, "tesseract": 1.4, "python": 0.7}
CATS = ["audio_perception", "video_perception", "insufficient_exploration", "knowledge_retrieval",
        "reasoning_calculation", "tool_infrastructure"]  # fmt: skip
MODELS = [("gpt-5.1-codex", "codex-exec", 0.62), ("gpt-5-mini", "codex-exec", 0.45),
          ("claude-sonnet-4-5", "claude-code", 0.60), ("claude-haiku-4-5", "claude-code", 0.42),
          ("qwen3-coder-30b", "terminus-2", 0.38), ("gpt-oss-120b", "terminus-2", 0.48)]  # fmt: skip
EFFORT = {"low": (-0.08, 0.7), "medium": (0.0, 1.0), "high": (0.07, 1.5)}
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
TAX = {"taxonomy_id": "omni-failure", "taxonomy_version": "1.0.0"}


def full(table: str, columns: dict) -> pa.Table:
    """An Arrow table of a lab table: given columns, other columns null or their default."""
    n = len(next(iter(columns.values())))
    defaults = default_row(TABLES[table])
    arrays = []
    for f in arrow_schema(TABLES[table]):
        if f.name in columns:
            arrays.append(pa.array(columns[f.name], type=f.type))
        elif f.nullable:
            arrays.append(pa.nulls(n, f.type))
        else:
            arrays.append(pa.array([defaults[f.name]] * n, type=f.type))
    return pa.Table.from_arrays(arrays, schema=arrow_schema(TABLES[table]))


def synthesize(root: Path, n: int, seed: int = 0, chunk: int = 20_000) -> None:
    rng = np.random.default_rng(seed)
    lab = Lab.open(root, create=True)
    with lab.write("bench synth") as txn:
        txn.durable = False
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            ids = np.array([f"t{start + i:07d}" for i in range(m)])
            mi = rng.integers(0, len(MODELS), m)
            efforts = rng.choice(list(EFFORT), m)
            diff = rng.integers(1, 4, m)
            skill = rng.random(m) < 0.5
            p = np.array([MODELS[k][2] for k in mi]) + np.array([EFFORT[e][0] for e in efforts])
            p += np.where(diff == 1, 0.12, np.where(diff == 3, -0.15, 0.0)) + np.where(skill, 0.15, 0.0)
            success = rng.random(m) < np.clip(p, 0.05, 0.95)
            n_calls = np.maximum(1, rng.lognormal(np.log(10), 0.6, m).astype(int))
            tokens = (n_calls * 900 * np.array([EFFORT[e][1] for e in efforts])).astype(np.int64)
            txn.append(
                "trajectories",
                full(
                    "trajectories",
                    {
                        "trajectory_id": ids,
                        "runner": ["bench"] * m,
                        "format": ["bench"] * m,
                        "source_path": [f"/bench/{t}.jsonl" for t in ids],
                        "source_digest": [f"xxh3_128:{t}" for t in ids],
                        "model": [MODELS[k][0] for k in mi],
                        "harness": [MODELS[k][1] for k in mi],
                        "reasoning_effort": efforts,
                        "benchmark": ["omni-bench"] * m,
                        "domain": rng.choice(["audio", "video", "image"], m),
                        "difficulty": diff.astype(str),
                        "condition": np.where(skill, "skill", "no-skill"),
                        "outcome": np.where(success, "success", "failure"),
                        "total_tokens": tokens,
                        "n_steps": n_calls + 2,
                        "n_tool_calls": n_calls,
                        "ingested_at": [NOW] * m,
                    },
                ),
            )
            # steps: user prompt, the tool calls, the final answer
            tids, idx, kinds, tools, mods, prompts = [], [], [], [], [], []
            base = np.full(len(TOOLS), 1.0)
            for t, k, ok, tok in zip(ids, n_calls, success, tokens):
                w = base * np.array([FAVOUR.get(x, 1.0) ** (1 if ok else -1) for x in TOOLS])
                picks = rng.choice(len(TOOLS), k, p=w / w.sum())
                tids += [t] * (k + 2)
                idx += list(range(k + 2))
                kinds += ["user", *["tool_call"] * k, "assistant"]
                names = [TOOLS[j] for j in picks]
                tools += [None, *names, None]
                mods += [None, *[MODALITY.get(x, "compute") for x in names], None]
                prompts += [None] * (k + 1) + [int(tok * 0.9)]  # the answer's model call (media_tokens)
            steps = full(
                "steps",
                {
                    "trajectory_id": tids,
                    "step_index": np.array(idx, dtype=np.int64),
                    "step_id": [f"{t}:{i}" for t, i in zip(tids, idx)],
                    "kind": kinds,
                    "tool_name": ["Bash" if x else None for x in tools],
                    "tool": tools,
                    "programs": [[x] if x else [] for x in tools],
                    "command": [f"{x} input" if x else None for x in tools],
                    "modality": mods,
                    "input_tokens": prompts,
                    "text": [
                        "task" if k == "user" else "The answer is 4." if k == "assistant" else None
                        for k in kinds
                    ],
                },
            )
            txn.append("steps", steps)
            failed = ids[~success]
            cats = rng.choice(CATS, len(failed))
            txn.append(
                "judge_labels",
                [
                    {
                        "label_id": f"jl_{t}",
                        "trajectory_id": t,
                        "judge": "llm",
                        "model": "bench",
                        "status": "labeled",
                        "category": c,
                        "decisive_step_index": 1,
                        "created_at": NOW,
                        **TAX,
                    }
                    for t, c in zip(failed, cats)
                ],
            )
            sample = rng.random(len(failed)) < 0.05
            gold = [c if rng.random() < 0.8 else rng.choice(CATS) for c in cats[sample]]
            txn.append(
                "gold_labels",
                [
                    {
                        "trajectory_id": t,
                        "category": g,
                        "decisive_step_index": 1,
                        "method": "unanimous",
                        "created_at": NOW,
                        **TAX,
                    }
                    for t, g in zip(failed[sample], gold)
                ],
            )
            txn.append(
                "human_labels",
                [
                    {
                        "record_id": f"hr_{t}",
                        "trajectory_id": t,
                        "annotator": "ann",
                        "category": g,
                        "decisive_step_index": 1,
                        "created_at": NOW,
                        "source_file": "bench.jsonl",
                        "source_line": 1,
                        **TAX,
                    }
                    for t, g in zip(failed[sample], gold)
                ],
            )
            print(f"  synthesized {start + m:,} trajectories", file=sys.stderr)


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trajectories", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lab", type=Path, default=Path("/tmp/trajlab-bench-figures"))
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    browser = find_browser()
    if browser is None:
        sys.exit("no Chromium: apt-get install chromium (or set BROWSER_PATH)")
    root = args.lab / f"n{args.trajectories}"
    if args.rebuild and root.exists():
        shutil.rmtree(root)
    if not root.exists():
        t0 = time.perf_counter()
        synthesize(root, args.trajectories)
        print(
            f"synthesized {args.trajectories:,} trajectories in {time.perf_counter() - t0:.0f}s",
            file=sys.stderr,
        )
    lab = Lab.open(root)
    print(f"lab {root}: {lab.rows('trajectories'):,} trajectories, {lab.rows('steps'):,} steps, "
          f"{lab.rows('judge_labels'):,} judge / {lab.rows('gold_labels'):,} gold labels; browser {browser}")  # fmt: skip

    compute: dict[str, list[float]] = {n: [] for n in FIGURES}
    results = {}
    for _ in range(args.repeat):
        for name, fn in FIGURES.items():
            t0 = time.perf_counter()
            results[name] = fn(lab)
            compute[name].append(time.perf_counter() - t0)
    skipped = {n: r.skipped for n, r in results.items() if r.skipped}
    assert not skipped, skipped

    tmp = Path(tempfile.mkdtemp(prefix="trajlab-bench-figures-"))
    shared: dict[str, list[float]] = {n: [] for n in FIGURES}
    baseline: dict[str, list[float]] = {n: [] for n in FIGURES}
    starts: list[float] = []
    exports: list[float] = []
    for r in range(args.repeat):
        t0 = time.perf_counter()
        rep = export_figures(lab, tmp / f"export{r}", formats=("pdf", "png"), progress=False)
        exports.append(time.perf_counter() - t0)
        assert rep.ok and not rep.failed and sum(len(v) for v in rep.produced.values()) == 2 * len(FIGURES)
        t0 = time.perf_counter()
        with FigureRenderer(browser) as renderer:
            starts.append(time.perf_counter() - t0)
            for name, res in results.items():
                t1 = time.perf_counter()
                errs = renderer.write([(res.figure, tmp / f"s{r}-{name}.{f}", f) for f in ("pdf", "png")])
                shared[name].append(time.perf_counter() - t1)
                assert errs == [None, None], errs
        for name, res in results.items():
            t1 = time.perf_counter()
            with FigureRenderer(browser) as renderer:
                errs = renderer.write([(res.figure, tmp / f"b{r}-{name}.{f}", f) for f in ("pdf", "png")])
            baseline[name].append(time.perf_counter() - t1)
            assert errs == [None, None], errs
    shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nmedians over {args.repeat} runs, {lab.rows('trajectories'):,} trajectories\n")
    print(f"{'figure':<24} {'compute s':>10} {'shared s':>9} {'1 browser/fig s':>16} {'ratio':>7}")
    ratios = []
    for name in FIGURES:
        c, s, b = med(compute[name]), med(shared[name]), med(baseline[name])
        ratios.append(b / s)
        print(f"{name:<24} {c:>10.2f} {s:>9.2f} {b:>16.2f} {b / s:>6.1f}x")
    set_shared = med(starts) + sum(med(shared[n]) for n in FIGURES)
    set_base = sum(med(baseline[n]) for n in FIGURES)
    print(f"\nserver start-up (shared, once per export): {med(starts):.2f}s")
    print(f"per-figure render, median over figures: shared {med([med(shared[n]) for n in FIGURES]):.2f}s, "
          f"one browser per figure {med([med(baseline[n]) for n in FIGURES]):.2f}s, ratio {med(ratios):.1f}x")  # fmt: skip
    print(f"rendering the set: shared {set_shared:.1f}s vs one browser per figure {set_base:.1f}s "
          f"({set_base / set_shared:.1f}x)")  # fmt: skip
    print(f"compute all figures: {sum(med(compute[n]) for n in FIGURES):.1f}s")
    print(
        f"export_figures PDF+PNG, whole set end to end: {med(exports):.1f}s (runs: "
        + ", ".join(f"{x:.1f}" for x in exports)
        + ")"
    )


if __name__ == "__main__":
    main()
