"""Benchmark: the tool-gap query over ~10M synthesized tool calls, DuckDB vs the same computation in pandas.

    python bench/bench_gaps.py                      # 10M calls, lab cached in /tmp/trajlab-bench-gaps
    python bench/bench_gaps.py --calls 1000000      # smaller
    python bench/bench_gaps.py --rebuild --repeat 7

What is timed (medians over --repeat runs; cold runs each start a fresh process after evicting the lab's
Parquet files from the OS page cache with posix_fadvise(DONTNEED)):

- duckdb  : `trajlab.analysis.run_sql(lab, "gaps")`, the shipped gaps.sql (per-tool call shares in
            successful vs failed trajectories, usage rates, gap, support flag), connection included
            when cold, reused when warm
- pandas  : the same table from the same Parquet files with pandas (read the columns + compute); warm
            repeats re-read the files (warm page cache), and "compute only" starts from frames already
            in memory
- gaps()  : the full Python API once warm (SQL per-trajectory counts + 1000 bootstrap replicates over
            trajectories + Fisher tests + Holm), to show what the statistics add

The synthesized lab has realistic per-trajectory structure: lognormal trajectory lengths (median ~60
calls), a per-trajectory mix over 40 tools with Zipf-like popularity, ~40% successes with ffprobe/ffmpeg/
whisper more likely in successes and python3 scripts in failures, 1 assistant step per 3 calls, errors.
Both results are checked to agree before any time is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

TOOLS = [
    "python", "ls", "cat", "grep", "sed", "read", "edit", "ffprobe", "ffmpeg", "whisper", "find", "head",
    "tail", "pip", "curl", "git", "apply_patch", "write", "echo", "mkdir", "rm", "cp", "mv", "wc", "sort",
    "node", "npm", "pytest", "make", "tesseract", "identify", "web_search", "web_fetch", "todo", "jq",
    "awk", "tar", "unzip", "sox", "yt-dlp",
]  # fmt: skip
FAVOUR_SUCCESS = {"ffprobe": 2.5, "ffmpeg": 1.8, "whisper": 2.2}
FAVOUR_FAILURE = {"python": 1.6}


def _evict(paths: list[Path]) -> None:
    """Drop the files' pages from the OS page cache (no root needed), so the next read is cold."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def synthesize(root: Path, n_calls: int, seed: int = 0, chunk_traj: int = 8000) -> None:
    """Write a lab with about n_calls tool calls, chunk by chunk (bounded memory)."""
    from tqdm import tqdm

    from trajlab.schema import TABLES, arrow_schema, default_row
    from trajlab.store import Lab

    rng = np.random.default_rng(seed)
    # mean of max(1, floor(lognormal)) is about the lognormal mean minus a half
    lengths_mean = float(np.exp(np.log(60) + 0.8**2 / 2)) - 0.5
    n_traj = max(10, int(np.ceil(1.01 * n_calls / lengths_mean)))
    base = 1.0 / np.arange(1, len(TOOLS) + 1) ** 1.1
    fav_s = np.array([FAVOUR_SUCCESS.get(t, 1.0) for t in TOOLS])
    fav_f = np.array([FAVOUR_FAILURE.get(t, 1.0) for t in TOOLS])
    tool_arr = pa.array(TOOLS)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def full(table: str, cols: dict[str, pa.Array], n: int) -> pa.Table:
        defaults = default_row(TABLES[table])
        schema = arrow_schema(TABLES[table])
        arrays = []
        for f in schema:
            if f.name in cols:
                arrays.append(cols[f.name].cast(f.type))
            elif f.nullable:
                arrays.append(pa.nulls(n, f.type))
            elif pa.types.is_list(f.type):
                arrays.append(
                    pa.ListArray.from_arrays(np.zeros(n + 1, dtype=np.int32), pa.array([], f.type.value_type))
                )
            else:
                arrays.append(pa.repeat(pa.scalar(defaults[f.name], f.type), n))  # type: ignore[attr-defined]
        return pa.Table.from_arrays(arrays, schema=schema)

    lab = Lab.open(root, create=True)
    written = 0
    with lab.write("bench synthesize") as txn:
        bar = tqdm(total=n_traj, desc="synthesize", unit="traj")
        for start in range(0, n_traj, chunk_traj):
            k = min(chunk_traj, n_traj - start)
            ids = np.char.add("t_", np.char.zfill(np.arange(start, start + k).astype(str), 14))
            success = rng.random(k) < 0.4
            lengths = np.maximum(1, rng.lognormal(np.log(60), 0.8, k).astype(np.int64))
            # each trajectory's own tool mix: Dirichlet around the popularity, tilted by outcome
            alpha = base[None, :] * np.where(success[:, None], fav_s, fav_f)[:, :] * 8
            mix = rng.gamma(alpha)
            mix /= mix.sum(axis=1, keepdims=True)
            cum = np.cumsum(mix, axis=1)
            owner = np.repeat(np.arange(k), lengths)
            u = rng.random(len(owner))
            tool_idx = np.minimum((u[:, None] > cum[owner]).sum(axis=1), len(TOOLS) - 1)
            # interleave one assistant step per 3 calls
            n_calls_here = len(owner)
            is_msg = rng.random(n_calls_here + n_calls_here // 3) < 0.25
            is_msg = is_msg[: n_calls_here + int(is_msg.sum())]
            kinds_owner = np.concatenate([owner, rng.integers(0, k, int(is_msg.sum()))])
            order = np.argsort(kinds_owner, kind="stable")
            step_owner = kinds_owner[order]
            is_call = np.concatenate([np.ones(n_calls_here, bool), np.zeros(int(is_msg.sum()), bool)])[order]
            tool_pos = np.concatenate([tool_idx, np.zeros(int(is_msg.sum()), np.int64)])[order]
            firsts = np.r_[0, np.flatnonzero(np.diff(step_owner)) + 1]
            step_index = np.arange(len(step_owner)) - np.repeat(
                firsts, np.diff(np.r_[firsts, len(step_owner)])
            )
            tid = pa.array(ids).take(pa.array(step_owner))
            tools = pc.if_else(
                pa.array(is_call), tool_arr.take(pa.array(tool_pos)), pa.nulls(len(step_owner), pa.string())
            )
            m = len(step_owner)
            steps = full(
                "steps",
                {
                    "trajectory_id": tid,
                    "step_index": pa.array(step_index),
                    "step_id": pc.binary_join_element_wise(
                        tid, pc.cast(pa.array(step_index), pa.string()), ":"
                    ),
                    "kind": pc.if_else(pa.array(is_call), "tool_call", "assistant"),
                    "tool_name": pc.if_else(pa.array(is_call), "Bash", pa.nulls(m, pa.string())),
                    "tool": tools,
                    "is_error": pa.array(
                        is_call & (rng.random(m) < np.where(success[step_owner], 0.05, 0.12))
                    ),
                },
                m,
            )
            traj = full(
                "trajectories",
                {
                    "trajectory_id": pa.array(ids),
                    "runner": pa.repeat(pa.scalar("bench"), k),  # type: ignore[attr-defined]
                    "format": pa.repeat(pa.scalar("bench"), k),  # type: ignore[attr-defined]
                    "source_path": pa.array(np.char.add("/bench/", ids)),
                    "source_digest": pa.array(np.char.add("xxh3_128:", ids)),
                    "model": pa.array(np.where(rng.random(k) < 0.5, "model-a", "model-b")),
                    "outcome": pa.array(np.where(success, "success", "failure")),
                    "n_tool_calls": pa.array(lengths),
                    "ingested_at": pa.repeat(pa.scalar(now, pa.timestamp("us", tz="UTC")), k),  # type: ignore[attr-defined]
                },
                k,
            )
            txn.append("steps", steps)
            txn.append("trajectories", traj)
            written += n_calls_here
            bar.update(k)
        bar.close()
    print(f"synthesized {n_traj} trajectories, {written} tool calls into {root}", file=sys.stderr)


def pandas_gaps(steps, traj):
    """The gaps.sql table computed with pandas (same columns, same order)."""
    import pandas as pd

    calls = steps[steps["kind"] == "tool_call"]
    tool = calls["tool"].fillna(calls["tool_name"]).fillna("(unknown)")
    per = (
        calls.assign(tool=tool)
        .groupby(["trajectory_id", "tool"], observed=True)
        .size()
        .rename("n")
        .reset_index()
    )
    t = traj[traj["outcome"].isin(["success", "failure"])]
    t = pd.DataFrame({"trajectory_id": t["trajectory_id"], "success": t["outcome"] == "success"})
    per = per.merge(t, on="trajectory_id")
    n_traj = t.groupby("success").size()
    totals = per.groupby("success")["n"].sum()
    agg = per.groupby(["tool", "success"]).agg(calls=("n", "sum"), traj=("n", "size")).unstack(fill_value=0)
    out = pd.DataFrame(index=agg.index)
    out["calls_success"] = agg[("calls", True)]
    out["calls_failure"] = agg[("calls", False)]
    out["n_calls"] = out["calls_success"] + out["calls_failure"]
    out["share_success"] = out["calls_success"] / totals.get(True, np.nan)
    out["share_failure"] = out["calls_failure"] / totals.get(False, np.nan)
    out["gap"] = out["share_success"] - out["share_failure"]
    out["usage_success"] = agg[("traj", True)] / n_traj.get(True, np.nan)
    out["usage_failure"] = agg[("traj", False)] / n_traj.get(False, np.nan)
    out["usage_gap"] = out["usage_success"] - out["usage_failure"]
    out["supported"] = (out["n_calls"] >= 10) & (agg[("traj", True)] + agg[("traj", False)] >= 5)
    return out.reset_index().sort_values(["gap", "tool"], ascending=[False, True]).reset_index(drop=True)


def _read_pandas(lab):
    import pandas as pd

    steps = pd.concat(
        [
            pd.read_parquet(f, columns=["trajectory_id", "kind", "tool", "tool_name"])
            for f in lab.files("steps")
        ],
        ignore_index=True,
    )
    traj = pd.concat(
        [pd.read_parquet(f, columns=["trajectory_id", "outcome"]) for f in lab.files("trajectories")],
        ignore_index=True,
    )
    return steps, traj


def _cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one_run(lab_path: str, engine: str) -> tuple[float, float]:
    """(wall, cpu) seconds of one run in this (fresh) process: the cold measurement."""
    from trajlab.store import Lab

    lab = Lab.open(lab_path)
    if engine == "duckdb":
        from trajlab.analysis import run_sql

        c0, t0 = _cpu(), time.perf_counter()
        run_sql(lab, "gaps")
        return time.perf_counter() - t0, _cpu() - c0
    c0, t0 = _cpu(), time.perf_counter()
    pandas_gaps(*_read_pandas(lab))
    return time.perf_counter() - t0, _cpu() - c0


def _cold(lab, engine: str, repeat: int) -> list[tuple[float, float]]:
    out = []
    for _ in range(repeat):
        _evict(lab.files("steps") + lab.files("trajectories"))
        r = subprocess.run(
            [sys.executable, __file__, "--one", engine, "--lab", str(lab.root)],
            capture_output=True,
            text=True,
            check=True,
        )
        wall, cpu = r.stdout.strip().splitlines()[-1].split()
        out.append((float(wall), float(cpu)))
    return out


def _timed(fn, repeat: int) -> list[tuple[float, float]]:
    out = []
    for _ in range(repeat):
        c0, t0 = _cpu(), time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0, _cpu() - c0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=10_000_000)
    ap.add_argument("--lab", default=None, help="Lab folder (default /tmp/trajlab-bench-gaps-<calls>).")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", dest="json_out", default=None, help="Also write the figures as JSON here.")
    ap.add_argument("--one", choices=["duckdb", "pandas"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(*one_run(args.lab, args.one))
        return

    import shutil

    from trajlab.analysis import gaps, run_sql
    from trajlab.store import Lab

    root = Path(args.lab or f"/tmp/trajlab-bench-gaps-{args.calls}")
    if args.rebuild and root.exists():
        shutil.rmtree(root)
    if not (root / "lab.json").exists():
        synthesize(root, args.calls)
    lab = Lab.open(root)
    n_calls = run_sql(lab, "SELECT count(*) AS n FROM steps WHERE kind = 'tool_call'").column("n")[0].as_py()
    n_traj = lab.rows("trajectories")
    print(f"lab {root}: {n_traj} trajectories, {lab.rows('steps')} steps, {n_calls} tool calls")

    # correctness first: both engines give the same table
    duck = run_sql(lab, "gaps", as_="pandas")
    frames = _read_pandas(lab)
    pand = pandas_gaps(*frames)
    assert list(duck["tool"]) == list(pand["tool"]), "tool order differs"
    for col in ("n_calls", "calls_success", "share_success", "gap", "usage_gap"):
        assert np.allclose(duck[col].astype(float), pand[col].astype(float)), col
    print("duckdb and pandas tables agree")

    r = args.repeat
    load_before = os.getloadavg()
    figures: dict[str, list[tuple[float, float]]] = {
        "duckdb_cold": _cold(lab, "duckdb", r),
        "pandas_cold": _cold(lab, "pandas", r),
    }
    run_sql(lab, "gaps")  # warm-up
    figures["duckdb_warm"] = _timed(lambda: run_sql(lab, "gaps"), r)
    figures["pandas_warm"] = _timed(lambda: pandas_gaps(*_read_pandas(lab)), r)
    figures["pandas_compute_only"] = _timed(lambda: pandas_gaps(*frames), r)
    frames = None
    gaps(lab, n_boot=10, progress=False)  # warm-up (imports scipy.stats)
    figures["gaps_api_warm"] = _timed(lambda: gaps(lab, n_boot=1000, progress=False), max(1, r // 2))
    load_after = os.getloadavg()

    wall = {k: statistics.median(w for w, _ in v) for k, v in figures.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in figures.items()}
    print(f"\n{'measure':<22}{'wall s':>9}{'cpu s':>9}   runs (wall)")
    for k, v in figures.items():
        print(f"{k:<22}{wall[k]:>9.3f}{cpu[k]:>9.3f}   {', '.join(f'{w:.3f}' for w, _ in v)}")
    ratios = {
        "cold: pandas / duckdb": (
            wall["pandas_cold"] / wall["duckdb_cold"],
            cpu["pandas_cold"] / cpu["duckdb_cold"],
        ),
        "warm: pandas / duckdb": (
            wall["pandas_warm"] / wall["duckdb_warm"],
            cpu["pandas_warm"] / cpu["duckdb_warm"],
        ),
        "warm: pandas compute-only / duckdb": (
            wall["pandas_compute_only"] / wall["duckdb_warm"],
            cpu["pandas_compute_only"] / cpu["duckdb_warm"],
        ),
    }
    print(f"\n{'ratio (medians)':<38}{'wall':>8}{'cpu':>8}")
    for k, (rw, rc) in ratios.items():
        print(f"{k:<38}{rw:>7.1f}x{rc:>7.1f}x")
    print(f"\nload average before {load_before[0]:.1f}, after {load_after[0]:.1f} on {os.cpu_count()} CPUs")
    goal_warm = wall["duckdb_warm"] < 1.0
    goal_ratio = ratios["warm: pandas / duckdb"][0] >= 10
    print(
        f"goal: warm < 1 s: {'met' if goal_warm else 'NOT met'}; "
        f">= 10x pandas (warm, wall): {'met' if goal_ratio else 'NOT met'}"
    )
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {"calls": n_calls, "trajectories": n_traj, "runs": figures, "wall": wall, "cpu": cpu,
                 "ratios": ratios, "cpus": os.cpu_count(), "load": [load_before, load_after]},
                indent=2,
            )
        )  # fmt: skip


if __name__ == "__main__":
    main()
