"""Benchmark: step-DAG construction over ~1M synthesized steps, against just reading the steps table.

    python bench/bench_dag.py                          # 1M steps, labs cached in /tmp/trajlab-bench-dag
    python bench/bench_dag.py --steps 200000 --repeat 3
    python bench/bench_dag.py --rebuild                # synthesize the labs again
    python bench/bench_dag.py --python-too             # also build-1 as plain Python

What is timed (medians over --repeat runs of wall time and of CPU time, the process plus its workers;
every run is a fresh process, so its peak RSS is its own):

- read-arrow : scan the steps table's DAG columns with pyarrow (C++ only, no Python objects)
- read-rows  : the same scan turned into Python row dicts, batch by batch (`RecordBatch.to_pylist()`: what
               any Python consumer that looks at steps one by one pays)
- read-own   : the same scan turned into the row dicts `build_lab` starts from (`trajlab.dag._scan.step_rows`:
               timestamps as POSIX seconds, dicts made in C), the strictest "just reading" baseline
- build-1    : `trajlab.dag.build_lab(lab, rebuild=True, workers=1)`: stream the steps, build every DAG
               in this process, write dag_nodes / dag_edges / dag_metrics and commit (one transaction)
- build      : the same with the default worker processes (CPU count, up to 4): the parent plans tasks
               (runs of row groups and the trajectories starting in them) and commits; each worker
               reads its tasks' row groups, builds, and writes its own part files
- build-1:py : (with --python-too) build-1 with trajlab's mypyc-compiled modules imported from their Python
               source (TRAJLAB_PURE_PYTHON=1): what the compilation buys

The goal compares wall time with read-rows, one process reading the steps into row dicts; the build
turns timestamps into POSIX seconds instead of datetimes and makes its dicts in C, which makes its own
read (read-own) cheaper than read-rows, so the ratios to read-own are printed too.

The reads use the same scan as `build_lab` (`trajlab.dag._scan.scan_steps`: one part file and one row group
at a time, 16,384-row batches, no pre-buffering). It prints
steps/s, the ratios to read-rows (the goal: within 3x), read-own and read-arrow, and peak RSS (the process, and
the largest worker). To show memory is bounded by the largest trajectory rather than the lab, `build-1`
is also run on a lab with a quarter of the steps (same trajectory-length distribution): its peak RSS
should be about the same.

The synthesized steps follow the shape of real runs (see ../shared/corpus and bench/synth_rollouts.py):
half omni-modal runs (ffprobe / ffmpeg frames / whisper / tesseract / python pipelines over per-run media
files), half coding runs (reads, edits, patches, tests); lognormal run lengths (median ~70 steps, longest
1500); reasoning and messages between 1-3 tool calls per response (parallel calls share a response),
polled long-running commands, ~8% failed calls of which most are retried, sub-agents (4% of runs),
compactions (3%); outputs with a lognormal size (median ~600 B, mean ~1.5 KB, heavy tail to 64 KB)
that print the paths and values later steps use.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path("/tmp/trajlab-bench-dag")
_TEXT = (
    "the a to of and in is for on with that this it as be are from by at or not if we can def return import "
    "class self None True False file path config value error warning test assert module build run output "
    "input data json frame audio video image transcript src lib tests docs main index util parse render "
    "schema table column row query select where ok failed passed skipped done duration stream codec "
    "sample rate channels bitrate width height fps thousand dollars item quarter total"
)
WORDS = _TEXT.split()
OMNI = [
    "ffprobe -v error -print_format json -show_format -show_streams {media}",
    "mkdir -p frames_{r} && ffmpeg -hide_banner -i {media} -vf fps=1/2 frames_{r}/%04d.png",
    "ffmpeg -hide_banner -y -i {media} -vn -ac 1 -ar 16000 audio_{r}.wav",
    "whisper audio_{r}.wav --model small --output_format txt --output_dir tr_{r}",
    "grep -n -i 'thousand' tr_{r}/audio_{r}.txt",
    "tesseract frames_{r}/{n:04d}.png - --psm 6",
    "ls frames_{r} | wc -l",
    'python3 -c "print({v1} + {v2} + {v3})"',
    "cat > calc_{r}.py <<'EOF'\nvalues = [{v1}, {v2}, {v3}]\nprint(sum(values))\nEOF\npython3 calc_{r}.py",
    "pip install -q openai-whisper",
]
CODE = [
    "sed -n '{a},{b}p' src/{m}/{f}.py",
    'rg -n "{w}|{w2}" src tests',
    "rg --files -g '*{w}*'",
    "git status --short",
    "git diff -- src/{m}/{f}.py",
    "python -m pytest -q tests/test_{f}.py",
    "cat src/{m}/{f}.py",
    "npm test -- --run src/{m}/__tests__/{f}.test.ts",
    "ls -la src/{m}",
    "python3 scripts/check_{f}.py --out reports/{f}.json",
]
RUNNER_TOOLS = ["Read", "Edit", "Write", "Glob", "Grep", "WebSearch", "apply_patch", "view_image"]


class Synth:
    """Deterministic generator of realistic step rows, one trajectory at a time."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.pool = [" ".join(self.rng.choices(WORDS, k=self.rng.randint(8, 40))) for _ in range(4000)]
        self.now = datetime(2026, 2, 1, tzinfo=timezone.utc)

    def text(self, mean_bytes: int, extra: str = "") -> str:
        target = min(int(self.rng.lognormvariate(0, 1.1) * mean_bytes), 64_000)
        parts = [extra] if extra else []
        size = len(extra)
        while size < target:
            line = self.rng.choice(self.pool)
            parts.append(line)
            size += len(line) + 1
        return "\n".join(parts)

    def trajectory(self, k: int, length: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        from trajlab.normalize import normalize_call

        rng = self.rng
        tid = f"t_{k:014d}"
        omni = rng.random() < 0.5
        domain = rng.choice(["audio", "video", "image", "mixed"]) if omni else "swe"
        media = (
            f"clip_{k}.mp4"
            if domain in ("video", "mixed")
            else f"ep_{k}.mp3"
            if domain == "audio"
            else f"img_{k}.png"
        )
        t = self.now + timedelta(minutes=k)
        steps: list[dict[str, Any]] = []
        numbers = [rng.randint(12, 480) for _ in range(3)]
        mods = [f"mod{rng.randint(0, 40)}" for _ in range(4)]
        files = [f"file{rng.randint(0, 400)}" for _ in range(6)]
        polls = 0

        def add(kind: str, **f: Any) -> int:
            nonlocal t
            t += timedelta(seconds=rng.uniform(1.5, 20))
            i = len(steps)
            steps.append({"trajectory_id": tid, "step_index": i, "step_id": f"{tid}:{i}", "agent_id": "main",
                          "depth": 0, "kind": kind, "timestamp": t, **f})  # fmt: skip
            return i

        add("system", role="system", text=self.text(3000))
        add("user", role="user", text=f"Task {k}: look at {media} and report the total. " + self.text(200))
        sub_at = length // 2 if rng.random() < 0.04 else -1
        comp_at = int(length * 0.6) if rng.random() < 0.03 else -1
        last_cmd = ""
        while len(steps) < length:
            if rng.random() < 0.6:
                add("reasoning", role="assistant", text=self.text(400), input_tokens=rng.randint(2000, 90000))
            if rng.random() < 0.3:
                add("assistant", role="assistant", text=self.text(200))
            if len(steps) >= sub_at >= 0:
                sub_at = -1
                task = add("tool_call", role="assistant", tool_name="Task", tool="subagent", modality="compute",
                           arguments=json.dumps({"prompt": f"inspect src/{mods[0]}/{files[0]}.py"}),
                           output=self.text(800), call_id=f"c{k}_{len(steps)}")  # fmt: skip
                for j in range(15):
                    row = {"agent_id": f"sub{k}", "depth": 1, "parent_step_index": task}
                    if j % 3 == 0:
                        add("assistant", role="assistant", text=self.text(200), **row)
                    else:
                        cmd = f"cat src/{mods[j % 4]}/{files[j % 6]}.py"
                        add("tool_call", role="assistant", tool_name="Bash", tool="cat", programs=["cat"],
                            modality="file", command=cmd, arguments=json.dumps({"command": cmd}),
                            output=self.text(1500), exit_code=0, call_id=f"s{k}_{j}", **row)  # fmt: skip
            if len(steps) >= comp_at >= 0:
                comp_at = -1
                add(
                    "compaction",
                    role="system",
                    text=f"Summary: worked on src/{mods[1]}/{files[1]}.py. " + self.text(1500),
                )
            n_calls = 1 if rng.random() < 0.7 else rng.randint(2, 3)
            tokens = rng.randint(2000, 90000)
            for c in range(n_calls):
                if len(steps) >= length:
                    break
                retry = last_cmd and rng.random() < 0.6 and steps[-1].get("is_error")
                tmpl = last_cmd if retry else None
                if rng.random() < 0.12 and not tmpl:
                    name = rng.choice(RUNNER_TOOLS)
                    path = (
                        f"src/{rng.choice(mods)}/{rng.choice(files)}.py"
                        if name != "view_image"
                        else f"frames_{k}/0001.png"
                    )
                    args: dict[str, Any] = {
                        "file_path": path,
                        "path": path,
                        "query": rng.choice(WORDS),
                        "pattern": rng.choice(WORDS),
                    }
                    if name == "Edit":
                        args.update(
                            old_string=rng.choice(self.pool)[:40], new_string=rng.choice(self.pool)[:40]
                        )
                    if name == "apply_patch":
                        args = {
                            "input": f"*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch"
                        }
                    info = normalize_call(name, args)
                    out = self.text(1200, extra=f"{path}\n{numbers[0]}")
                    cmd, code = None, 0
                else:
                    tmpl = tmpl or rng.choice(OMNI if omni and rng.random() < 0.8 else CODE)
                    cmd = tmpl.format(media=media, r=k, n=rng.randint(1, 60), v1=numbers[0], v2=numbers[1],
                                      v3=numbers[2], a=rng.randint(1, 200), b=rng.randint(200, 600),
                                      m=rng.choice(mods), f=rng.choice(files), w=rng.choice(WORDS),
                                      w2=rng.choice(WORDS))  # fmt: skip
                    last_cmd = tmpl
                    name = "Bash"
                    info = normalize_call(name, {"command": cmd})
                    args = {"command": cmd}
                    code = rng.choice([1, 2, 127]) if rng.random() < 0.08 else 0
                    facts = f"Item 1 came in at {numbers[0]} thousand dollars. src/{mods[0]}/{files[0]}.py"
                    out = self.text(1500, extra=facts if rng.random() < 0.5 else "")
                i = add("tool_call", role="assistant", tool_name=name, tool=info.tool, programs=list(info.programs),
                        modality=info.modality, command=info.command, arguments=json.dumps(args), output=out,
                        exit_code=code, is_error=code != 0, call_id=f"c{k}_{len(steps)}",
                        input_tokens=tokens if c == 0 else None, duration_s=rng.uniform(0.1, 30))  # fmt: skip
                if c:
                    steps[i]["timestamp"] = steps[i - 1]["timestamp"]
                if cmd and rng.random() < 0.15 and len(steps) < length:
                    polls += 1
                    meta = json.dumps({"polls": steps[i]["call_id"], "session_id": str(polls)})
                    add("tool_call", role="assistant", tool_name="write_stdin", tool="poll", programs=list(info.programs),
                        modality=info.modality, arguments=json.dumps({"session_id": polls, "chars": ""}),
                        output=self.text(600), exit_code=0, call_id=f"p{k}_{len(steps)}", metadata=meta)  # fmt: skip
        final = f"The total is {sum(numbers)}." if omni else "Fixed; tests pass."
        add("assistant", role="assistant", text=final)
        traj = {"trajectory_id": tid, "runner": "bench", "format": "bench", "source_path": f"/bench/{tid}.jsonl",
                "source_digest": f"xxh3_128:{k:032x}", "domain": domain, "task": steps[1]["text"][:500],
                "final_answer": final, "n_steps": len(steps), "ingested_at": self.now}  # fmt: skip
        return traj, steps


def synthesize(root: Path, n_steps: int, seed: int) -> None:
    from tqdm import tqdm

    from trajlab.store import Lab

    if root.exists():
        import shutil

        shutil.rmtree(root)
    lab = Lab.create(root)
    g = Synth(seed)
    rng = random.Random(seed + 1)
    total = k = 0
    bar = tqdm(total=n_steps, unit="step", desc=f"synthesize {root.name}")
    with lab.write("bench synthesize") as txn:
        while total < n_steps:
            length = min(max(int(rng.lognormvariate(4.25, 0.9)), 8), 1500, n_steps - total + 8)
            traj, steps = g.trajectory(k, length)
            txn.append("trajectories", [traj])
            txn.append("steps", steps)
            total += len(steps)
            k += 1
            bar.update(len(steps))
    bar.close()


def _child(mode: str, lab_path: str) -> None:
    """One timed run in this (fresh) process; prints a JSON line."""
    import pyarrow.parquet as pq  # noqa: F401 - import cost outside the timed region

    from trajlab.dag import build_lab
    from trajlab.dag._scan import scan_steps, step_rows
    from trajlab.store import Lab

    lab = Lab.open(lab_path)
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # after imports
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    n = 0
    if mode == "read-arrow":
        for batch in scan_steps(lab, batch_size=16_384):
            n += batch.num_rows
    elif mode == "read-rows":
        for batch in scan_steps(lab, batch_size=16_384):
            n += len(batch.to_pylist())
    elif mode == "read-own":
        for batch in scan_steps(lab, batch_size=16_384):
            n += len(step_rows(batch))
    else:
        rep = build_lab(lab, rebuild=True, progress=False, workers=1 if mode == "build-1" else None)
        n = rep.steps
        assert not rep.failed, rep.failed[:3]
    seconds = time.perf_counter() - t0
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    own = me.ru_utime + me.ru_stime - r0.ru_utime - r0.ru_stime
    workers = kids.ru_utime + kids.ru_stime
    out = {
        "mode": mode,
        "seconds": seconds,
        "cpu": own + workers,
        "own_cpu": own,
        "workers_cpu": workers,
        "steps": n,
    }
    out |= {"rss_mb": me.ru_maxrss / 1024, "base_rss_mb": base_rss, "worker_rss_mb": kids.ru_maxrss / 1024}
    print(json.dumps(out))


def _run(mode: str, lab: Path) -> dict[str, Any]:
    """One fresh process; `MODE:py` runs MODE with trajlab's compiled modules imported from their Python
    source (TRAJLAB_PURE_PYTHON=1), the baseline of what compiling them buys."""
    env = dict(os.environ)
    if mode.endswith(":py"):
        mode, env["TRAJLAB_PURE_PYTHON"] = mode[: -len(":py")], "1"
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--lab", str(lab)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rebuild", action="store_true", help="synthesize the labs again")
    ap.add_argument(
        "--python-too",
        action="store_true",
        help="also time build-1 with the compiled modules run as plain Python (build-1:py)",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--lab", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.child, a.lab)
        return
    big = ROOT / f"lab-{a.steps}-{a.seed}"
    small = ROOT / f"lab-{a.steps // 4}-{a.seed}"
    for lab, n in ((big, a.steps), (small, a.steps // 4)):
        if a.rebuild or not (lab / "lab.json").exists():
            synthesize(lab, n, a.seed)
    from trajlab.store import Lab

    info = Lab.open(big)
    size_mb = sum(f.stat().st_size for f in info.files("steps")) / 1e6
    print(f"lab {big}: {info.rows('steps'):,} steps in {info.rows('trajectories'):,} trajectories")
    print(f"  {size_mb:,.0f} MB of steps parquet; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    modes = (
        "read-arrow",
        "read-rows",
        "read-own",
        "build-1",
        "build",
        *(("build-1:py",) if a.python_too else ()),
    )
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    for r in range(a.repeat):  # interleaved so slow periods of a shared machine hit every mode alike
        for mode in results:
            res = _run(mode, big)
            results[mode].append(res)
            print(
                f"  run {r + 1} {mode:<10} {res['seconds']:7.1f}s wall {res['cpu']:7.1f}s CPU  "
                f"peak RSS {res['rss_mb']:5.0f} MB (worker {res['worker_rss_mb']:.0f} MB)  "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    med = {m: statistics.median(x["seconds"] for x in v) for m, v in results.items()}
    cpu = {m: statistics.median(x["cpu"] for x in v) for m, v in results.items()}
    rss = {m: max(x["rss_mb"] for x in v) for m, v in results.items()}
    wrss = {m: max(x["worker_rss_mb"] for x in v) for m, v in results.items()}
    steps = results["build"][0]["steps"]
    own = statistics.median(x["own_cpu"] for x in results["build"])
    wcpu = statistics.median(x["workers_cpu"] for x in results["build"])
    small_build = _run("build-1", small)
    small_read = _run("read-rows", small)
    print()
    print(f"{'mode':<12}{'wall s':>9}{'CPU s':>9}{'steps/s wall':>14}{'peak RSS MB':>13}{'worker MB':>11}")
    for m in results:
        print(f"{m:<12}{med[m]:>9.1f}{cpu[m]:>9.1f}{steps / med[m]:>14,.0f}{rss[m]:>13.0f}{wrss[m]:>11.0f}")
    print(
        "ratios of the medians (wall; CPU, process plus workers). On a shared machine CPU is the stable one."
    )
    for m in ("build-1", "build"):
        w, c = med[m] / med["read-rows"], cpu[m] / cpu["read-rows"]
        print(f"  {m:<8} / read-rows  = {w:5.2f}x wall; {c:5.2f}x CPU  (goal: within 3x)")
        w, c = med[m] / med["read-own"], cpu[m] / cpu["read-own"]
        print(f"  {m:<8} / read-own   = {w:5.2f}x wall; {c:5.2f}x CPU  (the build's own reader)")
        w, c = med[m] / med["read-arrow"], cpu[m] / cpu["read-arrow"]
        print(f"  {m:<8} / read-arrow = {w:5.2f}x wall; {c:5.2f}x CPU")
        # each round's build against the read of the same round: a slow spell of a shared machine then
        # hits both sides of a ratio, not only one of the medians
        per = [b["seconds"] / r["seconds"] for b, r in zip(results[m], results["read-rows"])]
        rounds = ", ".join(f"{x:.2f}" for x in per)
        print(f"  {m:<8} / read-rows, paired by round: median {statistics.median(per):.2f}x ({rounds})")
    if "build-1:py" in med:
        per = [p["seconds"] / c["seconds"] for p, c in zip(results["build-1:py"], results["build-1"])]
        print(
            f"  build-1:py / read-rows = {med['build-1:py'] / med['read-rows']:5.2f}x wall; compiled build-1 is "
            f"{statistics.median(per):.2f}x faster than as plain Python (paired by round)"
        )
    n_workers = min(os.cpu_count() or 1, 4)
    path = max(own, wcpu / n_workers)
    print(
        f"build with {n_workers} workers: parent {own:.1f}s CPU (plan, commit), workers {wcpu:.1f}s CPU; "
        f"critical path on idle CPUs ~{path:.1f}s = {path / cpu['read-rows']:.2f}x read-rows"
    )
    base = results["build-1"][0]["base_rss_mb"]
    print(
        f"peak RSS of build-1: {rss['build-1']:.0f} MB on {steps:,} steps vs {small_build['rss_mb']:.0f} MB on "
        f"{small_build['steps']:,} steps (a quarter of the lab); read-rows {rss['read-rows']:.0f} MB vs "
        f"{small_read['rss_mb']:.0f} MB; {base:.0f} MB after imports"
    )
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
