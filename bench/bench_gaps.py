"""Benchmark: the tool-gap query over ~10M synthesized tool calls, DuckDB vs the same computation in pandas.

    python bench/bench_gaps.py                      # 10M calls, lab cached in /tmp/trajlab-bench-gaps-<calls>
    python bench/bench_gaps.py --calls 1000000      # smaller
    python bench/bench_gaps.py --rebuild --repeat 7
    python bench/bench_gaps.py --investigate        # also: where the time goes (operators, pieces, layout)

Every figure is a median over --repeat runs of wall-clock and CPU seconds (user + system of this
process: on a shared machine wall time depends on the load, CPU time much less). Cold runs each start a
fresh process after evicting the files read from the OS page cache (posix_fadvise(DONTNEED)); warm runs
repeat in one process. What is timed:

- duckdb steps      `run_sql(lab, "gaps", counts="steps")`: gaps.sql over the tool calls of the steps table,
                    one row per call with first uses marked by steps.tool_seq = 1 (schema v2), then per
                    tool the call shares and usage rates in successful vs failed trajectories, the gaps
                    and the support flag
- duckdb v1 lab     the same file as it runs on a lab written before tool_seq: the calls counted per
                    (trajectory, tool) by a GROUP BY with a group per pair (the formulation until now)
- build tool_usage  `refresh_tool_usage(lab, force=True)`: materializes the calls per (trajectory, tool)
                    (plus errors and first step) into LAB/_cache, once per version of the steps
- duckdb tool_usage `run_sql(lab, "gaps", counts="tool_usage")`: the same file over the materialized counts
- pandas steps      the same table computed in pandas from the same raw Parquet steps (read the columns
                    as categoricals + groupby per (trajectory, tool) on categoricals with observed=True);
                    "compute only" starts from frames already in memory
- pandas seq        the same in pandas the way the DuckDB query runs: tool_seq read too, one row per
                    call, first uses by tool_seq == 1, a groupby per (tool, outcome). The goals compare
                    against the faster of the two pandas versions
- pandas tool_usage the same table in pandas from the materialized counts (like for like)
- build + tool_usage the honest cost of the first gap query on a new version of the steps: build plus
                    query (the ratios against pandas are printed with and without it)
- gaps()            the full Python API (per-trajectory counts + 1000 bootstrap replicates over trajectories
                    + Fisher tests + Holm), from the materialized counts and from steps

The synthesized lab has realistic per-trajectory structure: lognormal trajectory lengths (median ~60
calls), a per-trajectory mix over 40 tools with Zipf-like popularity, ~40% successes with ffprobe/ffmpeg/
whisper more likely in successes and python3 scripts in failures, 1 assistant step per 3 calls, errors,
tool_seq numbered as ingest numbers it.
All results are checked to agree before any time is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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
            # tool_seq: running count of each (trajectory, tool) in step order; 0 on assistant steps
            call_pos = np.flatnonzero(is_call)
            pair = step_owner[call_pos] * len(TOOLS) + tool_pos[call_pos]
            order_pair = np.argsort(pair, kind="stable")  # stable: step order within a pair
            sorted_pair = pair[order_pair]
            starts = np.r_[0, np.flatnonzero(np.diff(sorted_pair)) + 1]
            rank = np.arange(len(sorted_pair)) - np.repeat(starts, np.diff(np.r_[starts, len(sorted_pair)]))
            tool_seq = np.zeros(len(step_owner), dtype=np.int64)
            tool_seq[call_pos[order_pair]] = rank + 1
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
                    "tool_seq": pa.array(tool_seq),
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


def v1_gaps_sql() -> str:
    """gaps.sql as it runs on a lab written before steps.tool_seq (schema v1): the calls per (trajectory,
    tool) from a GROUP BY with one group per pair, instead of one row per call with first uses marked."""
    from trajlab.analysis import get_analysis, tool_counts_sql
    from trajlab.analysis._catalog import expand

    grouped = f"(SELECT trajectory_id, tool, n_calls, 1 AS n_users FROM {tool_counts_sql('tool', 'steps')})"
    return expand(get_analysis("gaps").text.replace("{{tool_use}}", grouped))


GAPS_PARAMS = {"min_support": 10, "min_trajectories": 5}
STEP_COLUMNS = ["trajectory_id", "kind", "tool", "tool_name"]
SEQ_COLUMNS = [*STEP_COLUMNS, "tool_seq"]

Runs = list[tuple[float, float]]  # (wall, cpu) seconds per run


# -- the pandas baseline ---------------------------------------------------------------------------


def read_steps_pandas(lab):
    """The four step columns the query needs, dictionary-encoded columns as pandas categoricals."""
    import pandas as pd

    return pd.read_parquet(lab.root / "steps", columns=STEP_COLUMNS, read_dictionary=STEP_COLUMNS)


def read_traj_pandas(lab):
    import pandas as pd

    return pd.read_parquet(lab.root / "trajectories", columns=["trajectory_id", "outcome"])


def read_usage_pandas(path: Path):
    import pandas as pd

    cols = ["trajectory_id", "tool", "n_calls"]
    return pd.read_parquet(path, columns=cols, read_dictionary=["trajectory_id", "tool"])


def pandas_gaps(steps, traj):
    """gaps.sql in idiomatic pandas: count calls per (trajectory, tool) with a groupby on categoricals."""
    calls = steps.loc[steps["kind"] == "tool_call", ["trajectory_id", "tool", "tool_name"]]
    tool = calls["tool"]
    if tool.isna().any():  # coalesce(tool, tool_name, '(unknown)')
        tool = tool.astype(object).fillna(calls["tool_name"].astype(object)).fillna("(unknown)")
        tool = tool.astype("category")
    per = calls.groupby([calls["trajectory_id"], tool], observed=True).size().rename("n_calls").reset_index()
    return pandas_gaps_from_counts(per, traj)


def read_steps_seq_pandas(lab):
    """The step columns with tool_seq, dictionary-encoded columns as pandas categoricals."""
    import pandas as pd

    return pd.read_parquet(lab.root / "steps", columns=SEQ_COLUMNS, read_dictionary=STEP_COLUMNS)


def pandas_gaps_seq(steps, traj):
    """gaps.sql in idiomatic pandas the way the DuckDB query now runs: one row per call, first uses by
    tool_seq == 1, so no groupby per (trajectory, tool); rows summed per (tool, trajectory)."""
    calls = steps.loc[steps["tool_seq"] > 0, ["trajectory_id", "tool", "tool_name", "tool_seq"]]
    tool = calls["tool"]
    if tool.isna().any():
        tool = tool.astype(object).fillna(calls["tool_name"].astype(object)).fillna("(unknown)")
        tool = tool.astype("category")
    import pandas as pd

    first = (calls["tool_seq"] == 1).astype("int64")
    per = pd.DataFrame(
        {"trajectory_id": calls["trajectory_id"], "tool": tool, "n_calls": 1, "n_users": first}
    )
    return pandas_gaps_from_counts(per, traj, users="n_users")


def pandas_gaps_from_counts(
    per, traj, min_support: int = 10, min_trajectories: int = 5, users: str | None = None
):
    """The gaps table from calls per (trajectory_id, tool): same columns and order as gaps.sql. With
    `users`, rows are summed: n_calls and the `users` column (1 on a trajectory's first use)."""
    import pandas as pd

    known = traj[traj["outcome"].isin(["success", "failure"])]
    is_success = (known["outcome"] == "success").to_numpy()
    success = pd.Series(is_success, index=known["trajectory_id"].to_numpy())
    s = per["trajectory_id"].map(success)  # NaN for trajectories with an unknown outcome
    per = per.assign(success=s)[s.notna()]
    grouped = per.groupby(["tool", "success"], observed=True)
    if users is None:
        agg = grouped["n_calls"].agg(["sum", "size"]).unstack(fill_value=0)
    else:
        agg = grouped[["n_calls", users]].sum().unstack(fill_value=0)
        agg = agg.rename(columns={"n_calls": "sum", users: "size"}, level=0)
    agg = agg.reindex(columns=pd.MultiIndex.from_product([["sum", "size"], [False, True]]), fill_value=0)
    calls_s, calls_f = agg[("sum", True)].to_numpy(), agg[("sum", False)].to_numpy()
    users_s, users_f = agg[("size", True)].to_numpy(), agg[("size", False)].to_numpy()
    n_s, n_f = int(is_success.sum()), int((~is_success).sum())
    out = pd.DataFrame(
        {
            "tool": agg.index.astype(str),
            "n_calls": calls_s + calls_f,
            "calls_success": calls_s,
            "calls_failure": calls_f,
            "n_traj_success": n_s,
            "n_traj_failure": n_f,
            "traj_using_success": users_s,
            "traj_using_failure": users_f,
            "share_success": calls_s / calls_s.sum(),
            "share_failure": calls_f / calls_f.sum(),
        }
    )
    out["gap"] = out["share_success"] - out["share_failure"]
    out["usage_success"] = users_s / n_s
    out["usage_failure"] = users_f / n_f
    out["usage_gap"] = out["usage_success"] - out["usage_failure"]
    out["supported"] = (out["n_calls"] >= min_support) & (users_s + users_f >= min_trajectories)
    return out.sort_values(["gap", "tool"], ascending=[False, True], ignore_index=True)


def _check_same(name: str, got, want) -> None:
    """Both gap tables hold the same rows in the same order (ints exact, floats to 1e-9)."""
    assert list(got["tool"]) == list(want["tool"]), f"{name}: tool order differs"
    for col in want.columns:
        a, b = np.asarray(got[col]), np.asarray(want[col])
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            assert np.allclose(a.astype(float), b.astype(float), rtol=1e-9, atol=0), f"{name}: {col}"
        else:
            assert (a == b).all(), f"{name}: {col}"


# -- timing ----------------------------------------------------------------------------------------


def _cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fn: Callable[[], Any], repeat: int) -> Runs:
    out = []
    for _ in range(repeat):
        c0, t0 = _cpu(), time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0, _cpu() - c0))
    return out


def one_run(lab_path: str, engine: str) -> tuple[float, float]:
    """(wall, cpu) of one run in this fresh process (imports not timed): the cold measurement."""
    import pandas  # noqa: F401  (imports are not part of the query)

    from trajlab.analysis import run_sql
    from trajlab.store import Lab

    lab = Lab.open(lab_path)
    if engine == "duckdb_steps":
        fn: Callable[[], Any] = lambda: run_sql(lab, "gaps", counts="steps")  # noqa: E731
    elif engine == "duckdb_v1":
        sql = v1_gaps_sql()
        fn = lambda: run_sql(lab, sql, params=GAPS_PARAMS)  # noqa: E731
    elif engine == "duckdb_usage":
        fn = lambda: run_sql(lab, "gaps", counts="tool_usage")  # noqa: E731
    elif engine == "pandas_seq":
        fn = lambda: pandas_gaps_seq(read_steps_seq_pandas(lab), read_traj_pandas(lab))  # noqa: E731
    else:
        fn = lambda: pandas_gaps(read_steps_pandas(lab), read_traj_pandas(lab))  # noqa: E731
    return _timed(fn, 1)[0]


def _cold(lab, engine: str, repeat: int, files: list[Path]) -> Runs:
    out = []
    for _ in range(repeat):
        _evict(files)
        r = subprocess.run(
            [sys.executable, __file__, "--one", engine, "--lab", str(lab.root)],
            capture_output=True,
            text=True,
            check=True,
        )
        wall, cpu = r.stdout.strip().splitlines()[-1].split()
        out.append((float(wall), float(cpu)))
    return out


# -- where the time goes ---------------------------------------------------------------------------


def _plain_connection(lab, threads: int | None = None, extra: str = ""):
    """A writable in-memory DuckDB with the lab's views (the analysis connection cannot profile)."""
    import duckdb

    from trajlab.analysis._usage import current_usage_files, usage_view_sql
    from trajlab.schema import TABLES
    from trajlab.store._duckdb import view_sql

    con = duckdb.connect(":memory:")
    if threads:
        con.execute(f"SET threads={threads}")
    if extra:
        con.execute(extra)
    for t in TABLES:
        con.execute(f"CREATE VIEW {t} AS {view_sql(lab, t)}")
    con.execute(f"CREATE VIEW tool_usage AS {usage_view_sql(current_usage_files(lab))}")
    return con


def _operators(con, sql: str, params: dict[str, Any] | None, top: int = 8) -> None:
    """EXPLAIN ANALYZE: the most expensive operators (summed thread time) with their output rows."""
    import tempfile

    con.execute(sql, params).fetchall()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "profile.json"
        con.execute("PRAGMA enable_profiling='json'")
        con.execute(f"PRAGMA profiling_output='{out}'")
        con.execute(sql, params).fetchall()
        con.execute("PRAGMA disable_profiling")
        prof = json.loads(out.read_text())
    ops: list[tuple[float, str, int, str]] = []

    def walk(node: dict[str, Any]) -> None:
        extra = node.get("extra_info") or {}
        what = extra.get("Groups") or extra.get("Conditions") or extra.get("Projections") or ""
        what = ", ".join(what) if isinstance(what, list) else str(what)
        ops.append(
            (float(node.get("timing", 0.0)), node.get("name", "?"), node.get("intermediate_rows", 0), what)
        )
        for c in node.get("children", []):
            walk(c)

    for n in prof.get("operator", []):
        walk(n)
    total = sum(o[0] for o in ops) or 1.0
    for t, name, rows, what in sorted(ops, reverse=True)[:top]:
        print(f"    {name:<16}{t:>8.3f} s {100 * t / total:>5.1f}%  {rows:>12,} rows  {what[:50]}")


def _pieces(con, queries: dict[str, str], repeat: int) -> None:
    runs: dict[str, Runs] = {k: [] for k in queries}
    for q in queries.values():
        con.execute(q).fetchall()
    for _ in range(repeat):  # interleaved, so that a load spike hits every query alike
        for k, q in queries.items():
            runs[k] += _timed(lambda q=q: con.execute(q).fetchall(), 1)
    for k, v in runs.items():
        print(
            f"    {k:<52}{statistics.median(w for w, _ in v):>8.3f}{statistics.median(c for _, c in v):>8.3f}"
        )


def investigate(lab, repeat: int) -> None:
    """Print where the gap query spends its time: layout, operators, pieces, settings, row groups."""
    import shutil
    import tempfile

    import pyarrow.parquet as pq

    from trajlab.analysis import get_analysis
    from trajlab.analysis._catalog import expand

    print("\n== steps parts (as written by trajlab.store) ==")
    for f in lab.files("steps"):
        md = pq.ParquetFile(f).metadata
        rg = md.row_group(0)
        cols = {rg.column(i).path_in_schema: rg.column(i) for i in range(rg.num_columns)}
        tid, tool = cols["trajectory_id"], cols["tool"]
        print(
            f"  {f.name}: {md.num_rows:,} rows in {md.num_row_groups} row groups "
            f"(first {rg.num_rows:,} rows); trajectory_id {tid.compression} {tid.total_compressed_size:,} B, "
            f"tool {tool.compression} {tool.total_compressed_size:,} B, {md.num_columns} columns"
        )
    gaps_sql = expand(get_analysis("gaps").text)
    usage_sql = expand(get_analysis("gaps").text, counts="tool_usage")
    con = _plain_connection(lab)
    print("\n== operators of gaps.sql over steps (EXPLAIN ANALYZE; thread-seconds) ==")
    _operators(con, gaps_sql, GAPS_PARAMS)
    print("== operators of gaps.sql over tool_usage ==")
    _operators(con, usage_sql, GAPS_PARAMS)
    calls = "FROM steps WHERE kind = 'tool_call'"
    n_cols = len(pq.ParquetFile(lab.files("steps")[0]).schema_arrow)
    n_tid, n_pairs = con.execute(
        f"SELECT count(DISTINCT trajectory_id), count(DISTINCT (trajectory_id, tool)) {calls}"
    ).fetchone()
    print(f"\n== pieces (medians of {repeat}) ==                              wall s   cpu s")
    _pieces(
        con,
        {
            "scan + filter kind": f"SELECT count(*) {calls}",
            f"scan trajectory_id, tool (2 of {n_cols} columns)": f"SELECT count(trajectory_id), count(tool) {calls}",
            "GROUP BY tool": f"SELECT tool, count(*) {calls} GROUP BY ALL",
            f"GROUP BY trajectory_id ({n_tid:,} groups)": f"SELECT trajectory_id, count(*) {calls} GROUP BY ALL",
            f"GROUP BY trajectory_id, tool ({n_pairs:,} groups)": f"SELECT trajectory_id, tool, count(*) {calls} GROUP BY ALL",
            "GROUP BY hash(trajectory_id, tool) (same groups)": f"SELECT hash(trajectory_id, tool), count(*) {calls} GROUP BY ALL",
            "count(DISTINCT trajectory_id) per tool": f"SELECT tool, count(DISTINCT trajectory_id) {calls} GROUP BY ALL",
            "tool_usage JOIN trajectories, GROUP BY tool": "SELECT tool, sum(n_calls), count(*) FROM tool_usage "
            "JOIN trajectories USING (trajectory_id) WHERE key = 'tool' GROUP BY ALL",
            "gaps.sql (steps)": gaps_sql.replace("$min_support", "10").replace("$min_trajectories", "5"),
            "gaps.sql (tool_usage)": usage_sql.replace("$min_support", "10").replace(
                "$min_trajectories", "5"
            ),
        },
        repeat,
    )
    print(f"\n== DuckDB settings, gaps.sql (medians of {repeat}) ==                 wall s   cpu s")
    for label, threads, extra in (
        ("threads=2 (default: one per core)", None, ""),
        ("threads=1", 1, ""),
        ("preserve_insertion_order=false", None, "SET preserve_insertion_order=false"),
    ):
        c = _plain_connection(lab, threads, extra)
        q = gaps_sql.replace("$min_support", "10").replace("$min_trajectories", "5")
        _pieces(c, {label: q}, repeat)
    print("\n== row-group layout and compression of the steps columns the query reads ==")
    print("   (the 4 columns rewritten with DuckDB; time of the per-(trajectory, tool) GROUP BY)")
    tmp = Path(tempfile.mkdtemp(prefix="trajlab-bench-layout-"))
    try:
        src = _plain_connection(lab)
        for rows, codec in (
            (20_000, "zstd"),
            (122_880, "zstd"),
            (122_880, "lz4"),
            (1_000_000, "lz4"),
            (122_880, "uncompressed"),
        ):
            path = tmp / f"steps-{rows}-{codec}.parquet"
            level = ", COMPRESSION_LEVEL 1" if codec == "zstd" else ""
            src.execute(
                f"COPY (SELECT {', '.join(STEP_COLUMNS)} FROM steps) TO '{path}' "
                f"(FORMAT parquet, ROW_GROUP_SIZE {rows}, COMPRESSION {codec}{level})"
            )
            q = (
                f"SELECT trajectory_id, tool, count(*) FROM read_parquet('{path}') "
                "WHERE kind = 'tool_call' GROUP BY ALL"
            )
            label = f"{rows:>9,}-row groups, {codec:<12} {path.stat().st_size / 1e6:7.2f} MB"
            _pieces(src, {label: q}, max(1, repeat // 2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- main ------------------------------------------------------------------------------------------


def _median(runs: Runs) -> tuple[float, float]:
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=10_000_000)
    ap.add_argument("--lab", default=None, help="Lab folder (default /tmp/trajlab-bench-gaps-<calls>).")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--investigate", action="store_true", help="Also print where the time goes.")
    ap.add_argument("--json", dest="json_out", default=None, help="Also write the figures as JSON here.")
    ap.add_argument(
        "--one",
        choices=["duckdb_steps", "duckdb_v1", "duckdb_usage", "pandas_steps", "pandas_seq"],
        help=argparse.SUPPRESS,
    )
    args = ap.parse_args()
    if args.one:
        print(*one_run(args.lab, args.one))
        return

    import shutil

    from trajlab.analysis import gaps, refresh_tool_usage, run_analysis, run_sql
    from trajlab.store import Lab

    root = Path(args.lab or f"/tmp/trajlab-bench-gaps-{args.calls}")
    if args.rebuild and root.exists():
        shutil.rmtree(root)
    if not (root / "lab.json").exists():
        synthesize(root, args.calls)
    lab = Lab.open(root)
    n_calls = run_sql(lab, "SELECT count(*) AS n FROM steps WHERE kind = 'tool_call'").column("n")[0].as_py()
    n_traj = lab.rows("trajectories")
    print(
        f"lab {root}: {n_traj:,} trajectories, {lab.rows('steps'):,} steps in {len(lab.files('steps'))} "
        f"parts, {n_calls:,} tool calls; {os.cpu_count()} CPUs"
    )
    r = args.repeat
    load_before = os.getloadavg()
    figures: dict[str, Runs] = {}

    # the materialized counts: built once per version of the steps; timed as a forced rebuild
    figures["build_tool_usage"] = _timed(
        lambda: refresh_tool_usage(lab, force=True, progress=False), max(1, min(r, 3))
    )
    usage = refresh_tool_usage(lab, progress=False)[0]
    print(f"tool_usage: {usage.rows:,} rows (trajectory, tool), {usage.path.stat().st_size / 1e6:.1f} MB")

    # correctness first: every engine gives the same table
    want = run_sql(lab, "gaps", counts="steps", as_="pandas")
    frames = (read_steps_pandas(lab), read_traj_pandas(lab))
    usage_frame = read_usage_pandas(usage.path)
    v1_sql = v1_gaps_sql()
    assert "tool_seq > 0" not in v1_sql and "tool_seq > 0" in run_analysis(lab, "gaps", counts="steps").sql
    n_unnumbered = run_sql(
        lab, "SELECT count(*) AS n FROM steps WHERE kind = 'tool_call' AND tool_seq IS NULL"
    ).column("n")[0]
    assert n_unnumbered.as_py() == 0, "this lab has calls without tool_seq: rebuild it (--rebuild)"
    _check_same("gaps.sql as on a v1 lab", run_sql(lab, v1_sql, params=GAPS_PARAMS, as_="pandas"), want)
    _check_same("gaps.sql over tool_usage", run_sql(lab, "gaps", counts="tool_usage", as_="pandas"), want)
    _check_same("pandas from steps", pandas_gaps(*frames), want)
    seq_frames = (read_steps_seq_pandas(lab), frames[1])
    _check_same("pandas from steps with tool_seq", pandas_gaps_seq(*seq_frames), want)
    _check_same("pandas from tool_usage", pandas_gaps_from_counts(usage_frame, frames[1]), want)
    print(f"all six gap tables agree ({len(want)} tools)")

    files = lab.files("steps") + lab.files("trajectories") + [usage.path]
    figures["duckdb_steps_cold"] = _cold(lab, "duckdb_steps", r, files)
    figures["duckdb_v1_cold"] = _cold(lab, "duckdb_v1", r, files)
    figures["duckdb_usage_cold"] = _cold(lab, "duckdb_usage", r, files)
    figures["pandas_steps_cold"] = _cold(lab, "pandas_steps", r, files)
    figures["pandas_seq_cold"] = _cold(lab, "pandas_seq", r, files)
    run_sql(lab, "gaps", counts="steps"), run_sql(lab, "gaps", counts="tool_usage")  # warm-up
    warm: dict[str, Callable[[], Any]] = {
        "duckdb_steps_warm": lambda: run_sql(lab, "gaps", counts="steps"),
        "duckdb_v1_warm": lambda: run_sql(lab, v1_sql, params=GAPS_PARAMS),
        "duckdb_usage_warm": lambda: run_sql(lab, "gaps", counts="tool_usage"),
        "pandas_steps_warm": lambda: pandas_gaps(read_steps_pandas(lab), read_traj_pandas(lab)),
        "pandas_seq_warm": lambda: pandas_gaps_seq(read_steps_seq_pandas(lab), read_traj_pandas(lab)),
        "pandas_steps_compute_only": lambda: pandas_gaps(*frames),
        "pandas_seq_compute_only": lambda: pandas_gaps_seq(*seq_frames),
        "pandas_usage_warm": lambda: pandas_gaps_from_counts(
            read_usage_pandas(usage.path), read_traj_pandas(lab)
        ),
    }
    for k in warm:
        figures[k] = []
    for _ in range(r):  # interleaved: a load spike hits every engine alike
        for k, fn in warm.items():
            figures[k] += _timed(fn, 1)
    frames = seq_frames = usage_frame = None
    gaps(lab, n_boot=10, progress=False)  # warm-up (imports scipy.stats)
    n_api = max(1, r // 2)
    figures["gaps_api_usage_warm"] = _timed(
        lambda: gaps(lab, n_boot=1000, progress=False, counts="tool_usage"), n_api
    )
    figures["gaps_api_steps_warm"] = _timed(
        lambda: gaps(lab, n_boot=1000, progress=False, counts="steps"), n_api
    )
    load_after = os.getloadavg()

    med = {k: _median(v) for k, v in figures.items()}
    print(f"\n{'measure (medians)':<28}{'wall s':>9}{'cpu s':>9}   runs (wall)")
    for k, v in figures.items():
        print(f"{k:<28}{med[k][0]:>9.3f}{med[k][1]:>9.3f}   {', '.join(f'{w:.2f}' for w, _ in v)}")

    def ratio(a: str, b: str) -> tuple[float, float]:
        return med[a][0] / med[b][0], med[a][1] / med[b][1]

    ratios = {
        "warm: pandas steps / duckdb steps": ratio("pandas_steps_warm", "duckdb_steps_warm"),
        "cold: pandas steps / duckdb steps": ratio("pandas_steps_cold", "duckdb_steps_cold"),
        "warm: pandas with tool_seq / duckdb steps": ratio("pandas_seq_warm", "duckdb_steps_warm"),
        "cold: pandas with tool_seq / duckdb steps": ratio("pandas_seq_cold", "duckdb_steps_cold"),
        "warm: pandas seq compute-only / duckdb steps": ratio("pandas_seq_compute_only", "duckdb_steps_warm"),
        "warm: duckdb v1 lab / duckdb steps": ratio("duckdb_v1_warm", "duckdb_steps_warm"),
        "cold: duckdb v1 lab / duckdb steps": ratio("duckdb_v1_cold", "duckdb_steps_cold"),
        "warm: pandas steps / duckdb v1 lab": ratio("pandas_steps_warm", "duckdb_v1_warm"),
        "warm: pandas steps / duckdb tool_usage": ratio("pandas_steps_warm", "duckdb_usage_warm"),
        "cold: pandas steps / duckdb tool_usage": ratio("pandas_steps_cold", "duckdb_usage_cold"),
        "warm: pandas compute-only / duckdb steps": ratio("pandas_steps_compute_only", "duckdb_steps_warm"),
        "warm: pandas tool_usage / duckdb tool_usage": ratio("pandas_usage_warm", "duckdb_usage_warm"),
        "warm: duckdb steps / duckdb tool_usage": ratio("duckdb_steps_warm", "duckdb_usage_warm"),
        "gaps(): from steps / from tool_usage": ratio("gaps_api_steps_warm", "gaps_api_usage_warm"),
    }
    print(f"\n{'ratio (medians)':<46}{'wall':>8}{'cpu':>8}")
    for k, (rw, rc) in ratios.items():
        print(f"{k:<46}{rw:>7.1f}x{rc:>7.1f}x")
    saved = med["duckdb_steps_warm"][1] - med["duckdb_usage_warm"][1]
    payback = med["build_tool_usage"][1] / saved if saved > 0 else float("inf")
    print(
        f"building tool_usage costs {med['build_tool_usage'][0]:.2f} s wall, {med['build_tool_usage'][1]:.2f} CPU s: "
        f"paid back after {payback:.1f} gap queries (CPU)"
    )
    # honest accounting: the tool_usage query reads counts precomputed from steps. Its first query on a
    # new version of the steps pays the build; the like-for-like baseline is pandas over the same counts.
    once = tuple(a + b for a, b in zip(med["build_tool_usage"], med["duckdb_usage_warm"], strict=True))
    med["build_plus_usage_warm"] = once  # type: ignore[assignment]
    honest = {
        "warm: pandas steps / build tool_usage": ratio("pandas_steps_warm", "build_tool_usage"),
        "warm: pandas steps / (build + duckdb tool_usage)": ratio(
            "pandas_steps_warm", "build_plus_usage_warm"
        ),
        "warm: duckdb steps / build tool_usage": ratio("duckdb_steps_warm", "build_tool_usage"),
    }
    ratios.update(honest)
    for k, (rw, rc) in honest.items():
        print(f"{k:<46}{rw:>7.1f}x{rc:>7.1f}x")
    print(f"\nload average before {load_before[0]:.1f}, after {load_after[0]:.1f} on {os.cpu_count()} CPUs")
    # the baseline of a goal is the faster of the two pandas versions (per-(trajectory, tool) groupby,
    # or one row per call with tool_seq like the query), warm or cold alike
    for kind in ("warm", "cold"):
        best = min((f"pandas_steps_{kind}", f"pandas_seq_{kind}"), key=lambda k: med[k][0])
        med[f"pandas_best_{kind}"] = med[best]
        print(f"faster pandas, {kind}: {best}")
    goals = (
        ("query on raw steps (gaps.sql), warm", "duckdb_steps_warm", "pandas_best_warm"),
        ("query on raw steps (gaps.sql), cold", "duckdb_steps_cold", "pandas_best_cold"),
        ("query on a v1 lab (no tool_seq), warm", "duckdb_v1_warm", "pandas_steps_warm"),
        ("first query on new steps (build tool_usage + gaps.sql over it)", "build_plus_usage_warm", "pandas_steps_warm"),
        ("repeat query on precomputed tool_usage vs pandas over raw steps", "duckdb_usage_warm", "pandas_steps_warm"),
        ("repeat query on precomputed tool_usage vs pandas over tool_usage", "duckdb_usage_warm", "pandas_usage_warm"),
    )  # fmt: skip
    for label, ours, base in goals:
        w, x = med[ours][0], med[base][0] / med[ours][0]
        print(
            f"goal, {label}: < 1 s {'met' if w < 1.0 else 'NOT met'} ({w:.2f} s wall); "
            f">= 10x pandas {'met' if x >= 10 else 'NOT met'} ({x:.1f}x wall)"
        )
    if args.json_out:
        out = {"calls": n_calls, "trajectories": n_traj, "tool_usage_rows": usage.rows, "runs": figures,
               "medians": med, "ratios": ratios, "cpus": os.cpu_count(), "load": [load_before, load_after]}  # fmt: skip
        Path(args.json_out).write_text(json.dumps(out, indent=2))
    if args.investigate:
        investigate(lab, r)


if __name__ == "__main__":
    main()
