"""Benchmark `trajlab ingest` against the parse-only limit and a naive baseline (not a test).

    python bench/bench_ingest.py                      # >= 1.1 GB corpus, 3 runs of every mode
    python bench/bench_ingest.py --size-mb 200 --runs 3

The corpus (Codex rollouts + Claude Code sessions modeled on the real samples, see synth_rollouts.py)
is written once under bench/out/corpus (git-ignored) with a fixed seed. Every measurement runs in a
fresh subprocess, in interleaved order, so that each mode sees the same page cache and machine load:

  parse     the parse-only limit: read every file line by line and `orjson.loads` every record
  naive     the naive baseline: `json.loads` every record, `pandas.DataFrame` per file (nested values
            as JSON text), `to_parquet` per file
  parse-2   the machine's own 2-process ceiling: two processes doing `parse` at once, each on half
            the bytes; its speed-up over `parse` is what 2 workers can reach on this machine at best
  ingest-1x2  the same ceiling for the ingest's own work: two independent `ingest(..., workers=1)`
            processes at once, each of half the files into its own lab; ingest-2 / ingest-1x2 is how
            near the pool comes to what two cores give this (Python-bound, cache-hungry) work
  ingest-N  `trajlab.ingest.ingest(..., workers=N)` into a fresh lab
  phases    ingest's stages one after the other in one thread, each timed alone: unit digests, the
            adapters (reading, JSON and the adapters' own Python), finishing the rows (ids, tool
            normalization left to it, timestamps, counts), Arrow conversion, Parquet encoding (LZ4,
            into memory). Prints each stage against `parse` and the floor a one-process ingest keeps
            with its adapters' own Python removed: parse-only + finish + Arrow conversion
  MODE:1cpu the same confined to one CPU (sched_setaffinity, inherited by its threads): ingest-1
            uses more than one core by itself (pyarrow encodes and writes Parquet in its own threads),
            so ingest-1:1cpu -> ingest-2 is the speed-up from one core to two
  ingest-N@REV  the same with the `trajlab` package of git revision REV (extracted under
            bench/out/rev-REV and put first on PYTHONPATH): a before/after in the same run, e.g.
            --modes parse,parse-2,naive,ingest-1,ingest-2,ingest-1@deda22a,ingest-2@deda22a

Times are wall-clock around the work inside the subprocess (interpreter start-up and imports
excluded); CPU time of the process tree is reported too, and for ingest the parent's own CPU time.
Peak memory is sampled from /proc for the whole process tree (parent + workers): the sum of RSS
(pessimistic, counts pages shared after fork twice) every 50 ms from `statm` (cheap), and the sum of
PSS every 0.5 s from `smaps_rollup` (which walks the page tables: sampling it every 20 ms cost the
benchmark about a third of a core, taken from the workers when they use both cores). The sampler's
own CPU time is reported. Results: a table on stdout and bench/out/bench_ingest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synth_rollouts import corpus_bytes, synthesize  # noqa: E402

WORKER = r"""
import json, os, sys, time, glob, resource
mode, corpus, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
if mode.endswith(":1cpu"):  # confined to one CPU, its threads too: the one-core baseline of scaling
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    mode = mode[: -len(":1cpu")]
files = sorted(glob.glob(os.path.join(corpus, "**", "*.jsonl"), recursive=True))
out = {"mode": mode}
def warm():
    # every import before the clocks start (parse needs only orjson): pyarrow imports pandas lazily on
    # its first `pa.array` (0.24 s, inside the ingest clocks before 2026-12-04, while the naive baseline
    # imported pandas before its clock), pandas imports pyarrow.parquet on its first to_parquet, and
    # the adapters load through their plugin hooks on first use
    import pandas  # noqa: F401
    import pyarrow as pa
    import pyarrow.parquet  # noqa: F401  (pandas' to_parquet imports it on its first call)
    pa.array([0])
    try:
        from trajlab.formats import adapters
        adapters()
    except ImportError:  # an older revision (ingest-N@REV)
        pass
def two_at_once(work):
    # work(half, i) in this process and in a forked one at once, on halves of the bytes (biggest files
    # first, each to the lighter half); returns both JSON results and starts the clocks (t0, c0)
    global t0, c0
    halves, load = ([], []), [0, 0]
    for f in sorted(files, key=os.path.getsize, reverse=True):
        k = 0 if load[0] <= load[1] else 1
        halves[k].append(f); load[k] += os.path.getsize(f)
    t0 = time.perf_counter(); c0 = time.process_time()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r); os.write(w, json.dumps(work(halves[1], 1)).encode()); os._exit(0)
    os.close(w)
    mine = work(halves[0], 0)
    theirs = json.loads(os.read(r, 1 << 16)); os.waitpid(pid, 0)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0 -= ru.ru_utime + ru.ru_stime  # the child's CPU time counts too
    return mine, theirs
if mode in ("parse", "parse-2"):
    import orjson
    loads = orjson.loads
    def parse(part):
        n = 0
        for f in part:
            with open(f, "rb") as fh:
                for line in fh:
                    loads(line); n += 1
        return n
    if mode == "parse":
        t0 = time.perf_counter(); c0 = time.process_time()
        n = parse(files)
    else:  # two processes at once, each on half the bytes
        n = sum(two_at_once(lambda half, i: parse(half)))
    out.update(seconds=time.perf_counter() - t0, cpu=time.process_time() - c0, records=n)
elif mode == "naive":
    import json as js
    import pandas as pd
    warm()
    os.makedirs(scratch, exist_ok=True)
    t0 = time.perf_counter(); c0 = time.process_time(); n = 0
    for i, f in enumerate(files):
        recs = []
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                d = js.loads(line)
                recs.append({k: (js.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in d.items()})
        n += len(recs)
        pd.DataFrame(recs).to_parquet(os.path.join(scratch, f"{i}.parquet"))
    out.update(seconds=time.perf_counter() - t0, cpu=time.process_time() - c0, records=n)
elif mode == "phases":
    # ingest's stages one after the other in this one thread, each on its own clock: where a
    # one-process ingest's time goes (the real ingest overlaps Parquet encoding on a writer thread)
    import io
    from datetime import datetime, timezone
    import pyarrow.parquet as pq
    from trajlab.formats import get_adapter
    from trajlab.formats._finish import finish_trajectory
    from trajlab.formats._read import ParseContext
    from trajlab.ingest._discover import discover
    from trajlab.ingest._parts import _STEP_DEFAULTS, _STEP_SCHEMA, _TRAJ_DEFAULTS, _TRAJ_SCHEMA
    from trajlab.ingest._worker import GC_THRESHOLD, unit_digest
    from trajlab.store._parts import parquet_options, rows_to_table
    warm()
    import gc
    gc.set_threshold(*GC_THRESHOLD)
    units = discover([corpus]).units
    now = datetime.now(timezone.utc)
    ph = dict.fromkeys(("digest", "adapters", "finish", "arrow", "parquet"), 0.0)
    clock = time.perf_counter
    t0 = clock(); c0 = time.process_time(); n = steps_n = 0
    pending_s, pending_t = [], []
    def flush():
        a = clock()
        st = rows_to_table(pending_s, _STEP_SCHEMA, _STEP_DEFAULTS)
        tt = rows_to_table(pending_t, _TRAJ_SCHEMA, _TRAJ_DEFAULTS)
        b = clock()
        for table in (st, tt):
            pq.write_table(table, io.BytesIO(), **parquet_options(table.schema))
        ph["arrow"] += b - a; ph["parquet"] += clock() - b
        pending_s.clear(); pending_t.clear()
    for u in units:
        a = clock(); u.digest = unit_digest(u.files); ph["digest"] += clock() - a
        ad = get_adapter(u.adapter); ctx = ParseContext(u, ad.runner)
        a = clock(); parsed = list(ad.parse(u, ctx)); b = clock()
        for pt in parsed:
            t, s = finish_trajectory(pt, u, ad.runner, ad.name, now, {})
            pending_t.append(t); pending_s.extend(s)
        ph["adapters"] += b - a; ph["finish"] += clock() - b
        n += ctx.records_seen; steps_n += sum(len(pt.steps) for pt in parsed)
        if len(pending_s) >= 20_000:
            flush()
    flush()
    out.update(seconds=clock() - t0, cpu=time.process_time() - c0, records=n, steps=steps_n, phases=ph)
elif mode == "ingest-1x2":
    # the 2-process ceiling of the ingest's own work: two independent single-process ingests at once,
    # each of half the bytes into its own lab (split as for parse-2); no pool, no shared commit
    from trajlab.ingest import ingest
    warm()
    def one(half, i):
        rep = ingest(half, os.path.join(scratch, "ab"[i]), workers=1, progress=False)
        return [rep.records_seen, rep.totals.steps]
    mine, other = two_at_once(one)
    out.update(seconds=time.perf_counter() - t0, cpu=time.process_time() - c0,
               records=mine[0] + other[0], steps=mine[1] + other[1])
else:
    import trajlab
    from trajlab.ingest import ingest
    out["trajlab"] = os.path.dirname(trajlab.__file__)  # which code was measured
    workers = int(mode.split("@")[0].split("-")[1])
    warm()
    t0 = time.perf_counter(); c0 = time.process_time()
    rep = ingest([corpus], scratch, workers=workers, progress=False)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    out.update(seconds=time.perf_counter() - t0, cpu=time.process_time() - c0 + ru.ru_utime + ru.ru_stime,
               parent_cpu=time.process_time() - c0, records=rep.records_seen, steps=rep.totals.steps, trajectories=rep.totals.trajectories,
               quarantined=rep.records_quarantined, invariant=rep.invariant_holds)
out["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("RESULT " + json.dumps(out), flush=True)
"""


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _rss_kb(pid: int) -> int:
    """Resident set size from /proc/PID/statm: O(1) for the kernel, unlike smaps_rollup."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


def _pss_kb(pid: int) -> int:
    """Proportional set size from /proc/PID/smaps_rollup (walks the page tables: sample it rarely)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeMemory:
    """Samples the memory of a process and all its descendants until stopped; keeps the peaks.

    RSS every `interval` s, PSS every `pss_interval` s, the list of processes every 0.25 s; `cpu` is
    the sampler thread's own CPU time."""

    def __init__(self, pid: int, interval: float = 0.05, pss_interval: float = 0.5):
        self.pid, self.interval, self.pss_interval = pid, interval, pss_interval
        self.peak_rss = self.peak_pss = 0
        self.max_procs = 0
        self.cpu = 0.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _tree(self) -> list[int]:
        pids, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            pids.append(p)
            todo += _children(p)
        return pids

    def _run(self) -> None:
        c0 = time.thread_time()
        next_pss = next_tree = 0.0
        pids: list[int] = []
        while not self._stop.is_set():
            if time.monotonic() >= next_tree:  # the process list changes rarely (pool start and end)
                pids = self._tree()
                next_tree = time.monotonic() + 0.25
            self.peak_rss = max(self.peak_rss, sum(_rss_kb(p) for p in pids))
            if time.monotonic() >= next_pss:
                self.peak_pss = max(self.peak_pss, sum(_pss_kb(p) for p in pids))
                next_pss = time.monotonic() + self.pss_interval
            self.max_procs = max(self.max_procs, len(pids))
            time.sleep(self.interval)
        self.cpu = time.thread_time() - c0

    def stop(self) -> None:
        self._stop.set()
        self._t.join()


def checkout(rev: str) -> Path:
    """The `trajlab` package as of git revision `rev`, extracted once under bench/out/rev-<rev>."""
    dest = HERE / "out" / f"rev-{rev}"
    if not (dest / "trajlab" / "__init__.py").exists():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(HERE.parent), "archive", rev, "trajlab"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def measure(mode: str, corpus: Path, scratch: Path) -> dict:
    shutil.rmtree(scratch, ignore_errors=True)
    env = dict(os.environ)
    if "@" in mode:  # ingest-N@REV: the same measurement of the code of an earlier commit
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(checkout(mode.split("@")[1])), env.get("PYTHONPATH")])
        )
    # Run outside the repository: with `python -c` the working folder comes first on sys.path, before
    # PYTHONPATH, and would shadow the checked-out revision of an `@REV` mode.
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, mode, str(corpus.resolve()), str(scratch.resolve())],
        cwd=HERE / "out",
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    mem = TreeMemory(proc.pid)
    stdout, _ = proc.communicate()
    mem.stop()
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed with exit code {proc.returncode}")
    res = json.loads(next(line for line in stdout.splitlines() if line.startswith("RESULT "))[7:])
    res.update(
        peak_rss_mb=mem.peak_rss / 1024,
        peak_pss_mb=mem.peak_pss / 1024,
        processes=mem.max_procs,
        sampler_cpu=mem.cpu,
    )
    shutil.rmtree(scratch, ignore_errors=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=HERE / "out" / "corpus")
    ap.add_argument("--scratch", type=Path, default=HERE / "out" / "scratch")
    ap.add_argument("--size-mb", type=float, default=1100.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="parse,parse-2,naive,ingest-1,ingest-2")
    ap.add_argument("--json", type=Path, default=HERE / "out" / "bench_ingest.json")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="keep the measurements of an interrupted run (JSON lines next to --json) and do the rest",
    )
    a = ap.parse_args()
    partial = a.json.with_suffix(".partial.jsonl")
    done: dict[tuple[int, str], dict] = {}
    if a.resume and partial.exists():
        for line in partial.read_text().splitlines():
            rec = json.loads(line)
            done[(rec["run"], rec["mode"])] = rec["result"]
    else:
        partial.unlink(missing_ok=True)

    if not a.corpus.exists() or corpus_bytes(a.corpus) < a.size_mb * 1e6 * 0.98:
        shutil.rmtree(a.corpus, ignore_errors=True)
        print(f"synthesizing {a.size_mb:.0f} MB into {a.corpus} (seed {a.seed}) ...", file=sys.stderr)
        synthesize(a.corpus, a.size_mb, a.seed)
    files = sorted(a.corpus.rglob("*.jsonl"))
    total = sum(f.stat().st_size for f in files)
    for f in files:  # warm the page cache once, so that no mode pays for the first read alone
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass
    modes = a.modes.split(",")
    info = {
        "corpus_bytes": total,
        "files": len(files),
        "runs": a.runs,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_before": os.getloadavg(),
    }
    print(
        f"corpus: {total / 1e6:.0f} MB in {len(files)} files; {a.runs} runs of {', '.join(modes)}",
        file=sys.stderr,
    )
    results: dict[str, list[dict]] = {m: [] for m in modes}
    for r in range(a.runs):
        order = modes if r % 2 == 0 else modes[::-1]  # interleave, alternating the order
        for m in order:
            if (r, m) in done:
                results[m].append(done[(r, m)])
                continue
            res = measure(m, a.corpus, a.scratch / m)
            res["load"] = os.getloadavg()[0]
            results[m].append(res)
            with open(partial, "a") as f:
                f.write(json.dumps({"run": r, "mode": m, "result": res}) + "\n")
            print(
                f"run {r + 1} {m:9s} {res['seconds']:7.2f}s  {total / 1e6 / res['seconds']:7.1f} MB/s  "
                f"peak RSS {res['peak_rss_mb']:6.0f} MB",
                file=sys.stderr,
            )
    info["load_after"] = os.getloadavg()

    summary = {}
    for m, rs in results.items():
        sec = statistics.median(x["seconds"] for x in rs)
        summary[m] = {
            "median_s": sec,
            "mb_s": total / 1e6 / sec,
            "records_s": rs[0]["records"] / sec,
            "steps_s": (rs[0]["steps"] / sec) if "steps" in rs[0] else None,
            "cpu_s": statistics.median(x["cpu"] for x in rs),
            "mb_cpu_s": total / 1e6 / statistics.median(x["cpu"] for x in rs),
            "peak_rss_mb": max(x["peak_rss_mb"] for x in rs),
            "peak_pss_mb": max(x["peak_pss_mb"] for x in rs),
            "parent_cpu_s": statistics.median(x["parent_cpu"] for x in rs) if "parent_cpu" in rs[0] else None,
            "sampler_cpu_s": statistics.median(x.get("sampler_cpu", 0.0) for x in rs),
            "all_s": [round(x["seconds"], 3) for x in rs],
            "all_cpu_s": [round(x["cpu"], 3) for x in rs],
            "all_load": [round(x["load"], 2) for x in rs],
        }
    ratios = {}
    cpu_ratios = {}
    if "ingest-1" in summary and "parse" in summary:
        ratios["ingest-1 / parse-only"] = summary["ingest-1"]["mb_s"] / summary["parse"]["mb_s"]
    if "ingest-1" in summary and "naive" in summary:
        ratios["ingest-1 / naive"] = summary["ingest-1"]["mb_s"] / summary["naive"]["mb_s"]
    if "ingest-2" in summary and "naive" in summary:
        ratios["ingest-2 / naive"] = summary["ingest-2"]["mb_s"] / summary["naive"]["mb_s"]
    if "ingest-2" in summary and "ingest-1" in summary:
        ratios["speed-up 2 workers"] = summary["ingest-2"]["mb_s"] / summary["ingest-1"]["mb_s"]
    for m in summary:
        if "@" in m and m.split("@")[0] in summary:
            ratios[f"{m.split('@')[0]} now / {m}"] = summary[m.split("@")[0]]["mb_s"] / summary[m]["mb_s"]
            cpu_ratios[f"{m.split('@')[0]} now / {m}"] = (
                summary[m.split("@")[0]]["mb_cpu_s"] / summary[m]["mb_cpu_s"]
            )
    if "parse-2" in summary and "parse" in summary:
        ratios["machine ceiling: parse-2 / parse"] = summary["parse-2"]["mb_s"] / summary["parse"]["mb_s"]
    if "speed-up 2 workers" in ratios and "machine ceiling: parse-2 / parse" in ratios:
        ratios["2-worker speed-up / machine ceiling"] = (
            ratios["speed-up 2 workers"] / ratios["machine ceiling: parse-2 / parse"]
        )
    if "ingest-1x2" in summary and "ingest-1" in summary:
        ratios["ingest ceiling: ingest-1x2 / ingest-1"] = (
            summary["ingest-1x2"]["mb_s"] / summary["ingest-1"]["mb_s"]
        )
        if "ingest-2" in summary:
            ratios["2-worker speed-up / ingest ceiling"] = (
                summary["ingest-2"]["mb_s"] / summary["ingest-1x2"]["mb_s"]
            )
    if "ingest-1:1cpu" in summary and "ingest-2" in summary:
        ratios["speed-up 1 CPU -> 2 CPUs: ingest-2 / ingest-1:1cpu"] = (
            summary["ingest-2"]["mb_s"] / summary["ingest-1:1cpu"]["mb_s"]
        )
    if "ingest-1" in summary and "parse" in summary:
        cpu_ratios["ingest-1 / parse-only"] = summary["ingest-1"]["mb_cpu_s"] / summary["parse"]["mb_cpu_s"]
    if "ingest-1" in summary and "naive" in summary:
        cpu_ratios["ingest-1 / naive"] = summary["ingest-1"]["mb_cpu_s"] / summary["naive"]["mb_cpu_s"]
    # The same ratios round by round (the two runs of a round are at most a few runs apart): on a
    # machine whose speed drifts during the benchmark, the median of these paired ratios is steadier
    # than the ratio of the two medians, which may come from different rounds.
    paired = {}
    for fast, base, name in (
        ("ingest-1", "parse", "ingest-1 / parse-only"),
        ("ingest-1", "naive", "ingest-1 / naive"),
        ("ingest-2", "naive", "ingest-2 / naive"),
        ("ingest-2", "ingest-1:1cpu", "speed-up 1 CPU -> 2 CPUs: ingest-2 / ingest-1:1cpu"),
        ("ingest-2", "ingest-1x2", "2-worker speed-up / ingest ceiling"),
    ):
        if fast in results and base in results:
            per = [b["seconds"] / f["seconds"] for f, b in zip(results[fast], results[base])]
            paired[name] = {"median": statistics.median(per), "min": min(per), "max": max(per), "all": per}
    ing = results.get("ingest-1") or results.get("ingest-2") or []
    if ing:
        info.update(
            steps=ing[0]["steps"],
            trajectories=ing[0]["trajectories"],
            records=ing[0]["records"],
            quarantined=ing[0]["quarantined"],
            invariant=ing[0]["invariant"],
        )

    print(
        f"\n{total / 1e6:.0f} MB, {info['files']} files, {info.get('records', '?')} records, "
        f"{info.get('steps', '?')} steps; median of {a.runs} runs; load {info['load_before'][0]:.1f} -> "
        f"{info['load_after'][0]:.1f} on {info['cpus']} CPUs\n"
    )
    print(
        "| mode | median s | MB/s | records/s | steps/s | CPU s | MB per CPU s | parent CPU s | peak RSS (tree) "
        "| peak PSS (tree) | sampler CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m, s in summary.items():
        steps = f"{s['steps_s']:,.0f}" if s["steps_s"] else "-"
        parent = f"{s['parent_cpu_s']:.2f}" if s["parent_cpu_s"] is not None else "-"
        print(
            f"| {m} | {s['median_s']:.2f} | {s['mb_s']:.1f} | {s['records_s']:,.0f} | {steps} | {s['cpu_s']:.2f} | "
            f"{s['mb_cpu_s']:.1f} | {parent} | {s['peak_rss_mb']:.0f} MB | {s['peak_pss_mb']:.0f} MB "
            f"| {s['sampler_cpu_s']:.2f} |"
        )
    print("\nall runs (wall s / CPU s / load average at the end):\n")
    for m, s in summary.items():
        runs = " | ".join(
            f"{w:.1f} / {c:.1f} / {ld:.1f}" for w, c, ld in zip(s["all_s"], s["all_cpu_s"], s["all_load"])
        )
        print(f"| {m} | {runs} |")
    print()
    for k, v in ratios.items():
        print(f"- {k}: {v:.2f}x")
    for k, v in cpu_ratios.items():
        print(f"- {k} (CPU time): {v:.2f}x")
    for k, v in paired.items():
        each = ", ".join(f"{x:.2f}" for x in v["all"])
        print(f"- {k}, paired by round: median {v['median']:.2f}x ({each})")
    if "phases" in results:
        ph = {
            k: statistics.median(r["phases"][k] for r in results["phases"])
            for k in results["phases"][0]["phases"]
        }
        base = summary["parse"]["median_s"] if "parse" in summary else None
        print(
            "\nphases of a one-process ingest, one after the other (median s"
            + (", x parse-only" if base else "")
            + "):"
        )
        for k, v in ph.items():
            print(f"- {k}: {v:.2f} s" + (f" ({v / base:.2f}x)" if base else ""))
        if base:
            own = ph["adapters"] - base
            floor = base + ph["finish"] + ph["arrow"]
            print(
                f"- the adapters' own Python (adapters - parse-only): {own:.2f} s\n"
                f"- floor without it (parse-only + finish + arrow; Parquet on the writer thread): {floor:.2f} s "
                f"= {base / floor:.2f}x of parse-only throughput (goal 0.5x: at most {2 * base:.2f} s)"
            )
        summary["phases"]["stages_s"] = ph
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(
        json.dumps(
            {
                "info": info,
                "summary": summary,
                "ratios": ratios,
                "cpu_ratios": cpu_ratios,
                "paired_ratios": paired,
                "runs": results,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
