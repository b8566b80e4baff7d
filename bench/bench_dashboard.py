"""Benchmark: the dashboard's runs page over 100k synthesized trajectories and a 2,000-step DAG.

    python bench/bench_dashboard.py                     # 100k runs; lab cached in /tmp/trajlab-bench-dashboard
    python bench/bench_dashboard.py --n 20000 --repeat 5
    python bench/bench_dashboard.py --no-browser        # server side only
    python bench/bench_dashboard.py --baseline-ref deda22a  # and the Cytoscape renderer, same run
    python bench/bench_dashboard.py --rebuild           # synthesize the lab again

Server time (medians over --repeat runs, in this process, warm):

- runs-page      : `fetch_page` on the app's snapshot (the runs callback's query): one page of 25 plus the
                   summary counts, for six requests (no filter, outcome+model, tool+category, a deep page,
                   text search, sort by tokens). Goal: under 300 ms.
- baseline-views : the same filters answered straight from the lab's views, i.e. the per-trajectory tools,
                   modalities and labels aggregated from `steps`/`judge_labels` on every request (what the
                   runs index saves).
- baseline-pandas: read `trajectories` into pandas, filter, sort and slice in Python (no tools/labels).
- dag-view       : `build_view` of the 2,000-step DAG (folded by default, and fully unfolded) and its
                   JSON size.

Browser time-to-render (headless Debian Chromium via Playwright; medians over --repeat fresh page loads,
measured in the page from navigation start):

- runs page      : until the first page of rows and the summary ("100,000 runs") are on screen; then the
                   latency of choosing `outcome = failure` in its dropdown until the counts change.
- DAG            : /trajectory/<2,000-step run>?fold=0&agents=none until every one of the 2,000 nodes is
                   drawn (the page's "drawn N of N" and the renderer's own count agree) and a frame was
                   painted (goal: under 2 s); first nodes drawn; the same drawn in one go (`chunked=0`); and
                   the default folded view. Each is reported from navigation start and from data arrival
                   (the moment assets/dag.js gets the DAG), with the load's timeline (scripts loaded,
                   DOMContentLoaded, /_dash-layout, the page callback's response, data in the page), the
                   number of callback round trips before the data, the JavaScript bytes transferred vs
                   decoded, the page's main-thread CPU time (Chrome's ThreadTime in thread ticks, which a busy
                   machine inflates much less than wall time) and one redraw at the widest view (as far
                   out as the zoom goes: what a pan or zoom frame costs at most).
- baseline       : `--baseline-ref REF` loads the same DAG pages served by commit REF's trajlab (extracted
                   with `git archive`, run by this script in a subprocess) in the same run, e.g. deda22a,
                   the last Cytoscape renderer, and prints ratios (REF / this tree).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

from trajlab.store import Lab

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
RUNNERS = ["codex", "claude_code", "atif", "openhands"]
MODELS = [
    "gpt-5.1-codex",
    "gpt-5-mini",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "qwen3-coder-30b",
    "gpt-oss-120b",
    "glm-4.6",
    "kimi-k2",
]
HARNESSES = ["codex-exec", "claude-code", "terminus-2", "openhands"]
BENCHMARKS = ["omni-synth", "terminal-bench-core", "swe-bench-verified", "gaia", "omnigaia"]
DOMAINS = ["video", "audio", "image", "mixed", "swe"]
TOOLS = [
    ("ffmpeg", "video"),
    ("ffprobe", "video"),
    ("whisper", "audio"),
    ("sox", "audio"),
    ("tesseract", "image"),
    ("convert", "image"),
    ("curl", "web"),
    ("wget", "web"),
    ("python", "compute"),
    ("bash", "compute"),
    ("cat", "file"),
    ("ls", "file"),
    ("grep", "file"),
    ("sed", "file"),
    ("apply_patch", "file"),
]
CATEGORIES = [
    "audio_perception",
    "video_perception",
    "insufficient_exploration",
    "knowledge_retrieval",
    "reasoning_calculation",
    "tool_infrastructure",
]
LONG_TID = "t_bench_long_dag"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# -- synthesis --------------------------------------------------------------------------------------


def synth_runs(n: int, seed: int = 0) -> tuple[pa.Table, pa.Table, pa.Table]:
    """n trajectories (vectorized), their steps (~12 per run) and judge labels of the failures."""
    rng = np.random.default_rng(seed)
    ids = np.array([f"t_{i:016x}" for i in range(n)])
    runner = rng.integers(0, len(RUNNERS), n)
    model = rng.integers(0, len(MODELS), n)
    outcome = np.where(rng.random(n) < 0.6, "success", "failure")
    n_calls = np.clip(rng.lognormal(2.0, 0.6, n).astype(int), 1, 200)
    n_steps = n_calls + 3
    tokens = (n_steps * rng.integers(800, 2500, n)).astype(np.int64)
    trajs = pa.table(
        {
            "trajectory_id": ids,
            "runner": np.array(RUNNERS)[runner],
            "format": np.array(RUNNERS)[runner],
            "source_path": np.char.add("/bench/", ids),
            "source_digest": np.char.add("xxh3_128:", ids),
            "task_id": np.char.add("task-", (np.arange(n) % 5000).astype(str)),
            "task": np.char.add(
                np.char.add("Task ", (np.arange(n) % 5000).astype(str)),
                ": read the code shown in the clip and count how often the sign appears.",
            ),
            "benchmark": np.array(BENCHMARKS)[rng.integers(0, len(BENCHMARKS), n)],
            "domain": np.array(DOMAINS)[rng.integers(0, len(DOMAINS), n)],
            "model": np.array(MODELS)[model],
            "harness": np.array(HARNESSES)[runner],
            "reasoning_effort": np.array(["low", "medium", "high"])[rng.integers(0, 3, n)],
            "outcome": outcome,
            "n_steps": n_steps.astype(np.int64),
            "n_tool_calls": n_calls.astype(np.int64),
            "n_errors": rng.integers(0, 4, n).astype(np.int64),
            "total_tokens": tokens,
            "duration_s": rng.random(n) * 300,
            "started_at": pa.array(
                [T0 + timedelta(seconds=int(s)) for s in rng.integers(0, 90 * 86400, n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "ingested_at": pa.array([T0] * n, pa.timestamp("us", tz="UTC")),
        }
    )
    # steps: user + reasoning + calls + answer per trajectory
    tid = np.repeat(ids, n_steps)
    offsets = np.concatenate([[0], np.cumsum(n_steps)[:-1]])
    idx = np.arange(len(tid)) - np.repeat(offsets, n_steps)
    last = np.repeat(n_steps - 1, n_steps)
    kind = np.where(
        idx == 0, "user", np.where(idx == 1, "reasoning", np.where(idx == last, "assistant", "tool_call"))
    )
    tool_i = rng.integers(0, len(TOOLS), len(tid))
    is_call = kind == "tool_call"
    tool = np.where(is_call, np.array([t for t, _ in TOOLS])[tool_i], None)
    modality = np.where(is_call, np.array([m for _, m in TOOLS])[tool_i], None)
    steps = pa.table(
        {
            "trajectory_id": tid,
            "step_index": idx.astype(np.int64),
            "step_id": np.char.add(np.char.add(tid, ":"), idx.astype(str)),
            "kind": kind,
            "tool": pa.array(tool, pa.string()),
            "modality": pa.array(modality, pa.string()),
            "command": pa.array(
                np.where(is_call, np.char.add(np.where(is_call, tool, "").astype(str), " input.mp4"), None),
                pa.string(),
            ),
            "output": pa.array(np.where(is_call, "ok", None), pa.string()),
            "is_error": rng.random(len(tid)) < 0.05,
        }
    )
    fail = np.nonzero(outcome == "failure")[0]
    judge = np.where(rng.random(len(fail)) < 0.5, "llm", "rules")
    labels = pa.table(
        {
            "label_id": np.char.add("jl_", ids[fail]),
            "trajectory_id": ids[fail],
            "judge": judge,
            "model": np.where(judge == "llm", "judge-model", "rules-1"),
            "taxonomy_id": ["omni-failure"] * len(fail),
            "taxonomy_version": ["1.0.0"] * len(fail),
            "status": ["labeled"] * len(fail),
            "category": np.array(CATEGORIES)[rng.integers(0, len(CATEGORIES), len(fail))],
            "decisive_step_index": np.ones(len(fail), dtype=np.int64),
            "confidence": rng.random(len(fail)),
            "created_at": pa.array([T0] * len(fail), pa.timestamp("us", tz="UTC")),
        }
    )
    return trajs, steps, labels


def long_run(n_steps: int, seed: int = 1) -> tuple[dict, list[dict]]:
    """A 2,000-step run: bursts of frame extractions, reasoning, failures, 3 sub-agents of OCR calls."""
    rng = random.Random(seed)
    rows: list[dict] = []

    def add(kind: str, agent: str = "main", depth: int = 0, parent: int | None = None, **f) -> None:
        i = len(rows)
        rows.append(
            {
                "trajectory_id": LONG_TID,
                "step_index": i,
                "step_id": f"{LONG_TID}:{i}",
                "agent_id": agent,
                "depth": depth,
                "parent_step_index": parent,
                "kind": kind,
                "timestamp": T0 + timedelta(seconds=2 * i),
                **f,
            }
        )

    add("user", text="Count how often the sign appears in clip.mp4 and read its code.")
    frame, sub = 0, 0
    while len(rows) < n_steps - 1:
        if sub < 3 and len(rows) > (sub + 1) * n_steps // 4:
            sub += 1
            spawn = len(rows)
            add(
                "tool_call",
                tool_name="Task",
                tool="task",
                modality="compute",
                arguments='{"prompt": "ocr"}',
                output="report: ORBIT-42",
                exit_code=0,
            )
            for _ in range(min(25, n_steps - 1 - len(rows))):
                frame += 1
                add(
                    "tool_call",
                    agent=f"sub-{sub}",
                    depth=1,
                    parent=spawn,
                    tool="tesseract",
                    modality="image",
                    command=f"tesseract frames/{frame:05d}.png -",
                    output=f"frame {frame}",
                    exit_code=0,
                )
            continue
        for _ in range(min(rng.randint(6, 14), n_steps - 1 - len(rows))):
            frame += 1
            add(
                "tool_call",
                tool="ffmpeg",
                modality="video",
                command=f"ffmpeg -ss {frame} -i clip.mp4 -frames:v 1 frames/{frame:05d}.png",
                output="ok",
                exit_code=0,
            )
        if len(rows) < n_steps - 1:
            if rng.random() < 0.2:
                add(
                    "tool_call",
                    tool="whisper",
                    modality="audio",
                    command="whisper clip.wav",
                    output="",
                    stderr="whisper: command not found",
                    exit_code=127,
                    is_error=True,
                )
            else:
                add("reasoning", text=f"Checked frames up to {frame}.")
    add("assistant", text="The code is ORBIT-42.")
    traj = {
        "trajectory_id": LONG_TID,
        "runner": "bench",
        "format": "bench",
        "source_path": "/bench/long",
        "source_digest": "xxh3_128:long",
        "task": rows[0]["text"],
        "model": "model-long",
        "outcome": "failure",
        "n_steps": len(rows),
        "n_tool_calls": sum(r["kind"] == "tool_call" for r in rows),
        "n_subagents": sub,
        "started_at": T0,
        "ingested_at": T0,
    }
    return traj, rows


def complete(table: pa.Table, name: str) -> pa.Table:
    """Add the table's other columns, filled with their documented defaults (or nulls)."""
    from trajlab.schema import TABLES, arrow_schema, default_row

    defaults = default_row(TABLES[name])
    for f in arrow_schema(TABLES[name]):
        if f.name not in table.column_names:
            table = table.append_column(f, pa.array([defaults.get(f.name)] * table.num_rows, f.type))
    return table


def build_lab(path: Path, n: int, dag_steps: int) -> Lab:
    from trajlab.dag import build_lab as build_dags

    t0 = time.perf_counter()
    if path.exists():
        shutil.rmtree(path)
    trajs, steps, labels = synth_runs(n)
    traj, rows = long_run(dag_steps)
    lab = Lab.create(path)
    with lab.write("bench") as txn:
        txn.append("trajectories", complete(trajs, "trajectories"))
        txn.append("trajectories", [traj])
        txn.append("steps", complete(steps, "steps"))
        txn.append("steps", rows)
        txn.append("judge_labels", complete(labels, "judge_labels"))
    build_dags(path, trajectory_ids=[LONG_TID], progress=False, workers=1)
    print(
        f"synthesized {n:,} trajectories, {steps.num_rows + len(rows):,} steps, {labels.num_rows:,} judge labels "
        f"and a {len(rows):,}-step run in {time.perf_counter() - t0:.1f}s -> {path}"
    )
    return Lab.open(path)


# -- server side ------------------------------------------------------------------------------------

QUERIES = {
    "no filter": {},
    "outcome+model": {"filters": {"outcome": ["failure"], "model": ["gpt-5-mini", "glm-4.6"]}},
    "tool+category": {"filters": {"tool": ["whisper"], "category": ["audio_perception", "(none)"]}},
    "deep page": {"page": 2000},
    "search": {"search": "task 4321:"},
    "sort tokens": {"sort": "total_tokens", "descending": True, "filters": {"runner": ["codex"]}},
}


def median_ms(fn, repeat: int) -> float:
    fn()  # warm
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def baseline_views_sql(q) -> tuple[str, list]:
    """The runs query answered from the lab's views: per-trajectory aggregates computed per request."""
    from trajlab.dashboard._runs import where_clause
    from trajlab.dashboard._source import RUNS_BASE_SQL

    base = (
        RUNS_BASE_SQL.replace("CREATE TABLE runs_base AS", "")
        .replace("$taxonomy", "'omni-failure'")
        .replace("$dataset", "''")
    )
    view = (
        "SELECT *, NULL AS human_category, coalesce(gold_category, lab_human_category, judge_category, "
        "predicted_category) AS category, CASE WHEN gold_category IS NOT NULL THEN 'gold' WHEN "
        "lab_human_category IS NOT NULL THEN 'human' WHEN judge_category IS NOT NULL THEN judge_source "
        "WHEN predicted_category IS NOT NULL THEN 'predicted' END AS label_source FROM (" + base + ")"
    )
    where, params = where_clause(q)
    sql = (
        f"WITH runs AS ({view}) SELECT trajectory_id, runner, model, outcome, category, n_steps, total_tokens "
        f"FROM runs {where} ORDER BY {q.sort} {'DESC' if q.descending else 'ASC'} NULLS LAST, trajectory_id "
        f"LIMIT {q.page_size} OFFSET {q.page * q.page_size}"
    )
    return sql, params


def server_bench(lab: Lab, repeat: int) -> dict:
    import pandas as pd

    from trajlab.dag import load_dag
    from trajlab.dashboard import LabSource, RunsQuery, build_view, fetch_page
    from trajlab.dashboard._page_trajectory import chunk_payload

    out: dict = {}
    t = time.perf_counter()
    src = LabSource(lab, annotations="/tmp/trajlab-bench-dashboard-annotations")
    snap = src.snapshot()
    out["index_build_s"] = time.perf_counter() - t
    print(f"\nruns index (built once per lab generation): {out['index_build_s']:.2f}s")
    print(
        f"{'request':<16}{'runs-page ms':>14}{'baseline-views ms':>19}{'ratio':>8}{'baseline-pandas ms':>20}{'ratio':>8}  rows/total"
    )
    con = snap.cursor()
    vcon = lab.connect()
    rows = {}
    for name, kw in QUERIES.items():
        q = RunsQuery(page_size=25, **kw)
        page = fetch_page(con, q)
        ours = median_ms(lambda q=q: fetch_page(con, q), repeat)
        sql, params = baseline_views_sql(q)
        base = vcon.execute(sql, params).fetchall()
        assert [r[0] for r in base] == [r["trajectory_id"] for r in page.rows], name  # same answer
        views = median_ms(
            lambda sql=sql, params=params: vcon.execute(sql, params).fetchall(), max(3, repeat // 2)
        )
        pd_ms = None
        if "tool" not in q.filters and "category" not in q.filters and not q.search:

            def pandas_page(q=q):
                df = lab.read(
                    "trajectories",
                    ["trajectory_id", "runner", "model", "outcome", "n_steps", "total_tokens", "started_at"],
                ).to_pandas()
                for k, v in q.filters.items():
                    df = df[df[k].isin(v)]
                df = df.sort_values([q.sort, "trajectory_id"], ascending=[not q.descending, True])
                return df.iloc[q.page * q.page_size : (q.page + 1) * q.page_size], len(df)

            _, total = pandas_page()
            assert total == page.total, name
            pd_ms = median_ms(pandas_page, max(3, repeat // 2))
        rows[name] = {
            "runs_page_ms": ours,
            "baseline_views_ms": views,
            "baseline_pandas_ms": pd_ms,
            "total": page.total,
        }
        pd_txt = f"{pd_ms:>20.1f}{pd_ms / ours:>7.1f}x" if pd_ms is not None else f"{'-':>20}{'':>8}"
        print(
            f"{name:<16}{ours:>14.1f}{views:>19.1f}{views / ours:>7.1f}x{pd_txt}  {len(page.rows)}/{page.total:,}"
        )
    out["queries"] = rows
    out["runs_page_median_ms"] = statistics.median(r["runs_page_ms"] for r in rows.values())
    out["runs_page_max_ms"] = max(r["runs_page_ms"] for r in rows.values())
    _ = pd

    dag = load_dag(lab, LONG_TID)
    for label, kw in (
        ("folded (default)", {}),
        ("unfolded", {"collapse_runs": False, "collapsed_agents": []}),
    ):
        ms = median_ms(lambda kw=kw: build_view(dag, **kw), repeat)
        view = build_view(dag, **kw)
        size = len(json.dumps(chunk_payload(view)))
        print(
            f"dag-view {label:<17} {ms:8.1f} ms  {view.n_visible:,} nodes, {len(view.elements) - view.n_visible:,} edges, "
            f"{len(view.chunks)} chunks, {size / 1e6:.2f} MB JSON"
        )
        out[f"dag_view_{label.split()[0]}_ms"] = ms
    return out


# -- browser ----------------------------------------------------------------------------------------

PAINTED = (
    "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"
)


def browser_bench(lab: Lab, repeat: int, n: int) -> dict:
    from playwright.sync_api import sync_playwright

    from trajlab.dashboard import DashboardServer, create_app

    app = create_app(lab, annotations="/tmp/trajlab-bench-dashboard-annotations")
    srv = DashboardServer(app, "127.0.0.1", 0).start()
    out: dict = {}
    total = f"{n + 1:,}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)

            def fresh():
                pg = browser.new_page(viewport={"width": 1500, "height": 1000})
                pg.set_default_timeout(120_000)
                return pg

            runs, filt = [], []
            for _ in range(repeat):
                pg = fresh()
                pg.goto(srv.url)
                pg.wait_for_function(
                    "(t) => { const c = document.querySelector('#runs-summary .card-value');"
                    " return c && c.innerText === t && document.querySelectorAll('#runs-table td').length > 25; }",
                    arg=total,
                )
                runs.append(pg.evaluate(PAINTED))
                before = pg.inner_text("#runs-summary .card-value")
                pg.locator("#runs-filter-box-outcome button.dash-dropdown").click()
                pg.locator("[role=option]", has_text="failure").first.click()
                t0 = pg.evaluate("performance.now()")
                pg.wait_for_function(
                    "(b) => document.querySelector('#runs-summary .card-value').innerText !== b", arg=before
                )
                filt.append(pg.evaluate(PAINTED) - t0)
                pg.close()
            out["runs_page_render_ms"] = statistics.median(runs)
            out["runs_filter_latency_ms"] = statistics.median(filt)
            server = json.loads(_get(srv.url + "_trajlab/timings")).get("runs-page", [])
            out["runs_callback_server_ms"] = statistics.median(server) * 1000 if server else None
            print(
                f"\nbrowser: runs page over {total} trajectories drawn in {out['runs_page_render_ms']:.0f} ms "
                f"(median of {repeat} loads, from navigation start); choosing outcome=failure: "
                f"{out['runs_filter_latency_ms']:.0f} ms; runs callback server time {out['runs_callback_server_ms']:.1f} ms"
            )

            out.update(dag_bench(browser, srv, repeat))
            timings = json.loads(_get(srv.url + "_trajlab/timings"))
            for k in ("trajectory-page", "dag-view"):
                if timings.get(k):
                    print(
                        f"server: {k} median {statistics.median(timings[k]) * 1000:.1f} ms over {len(timings[k])} calls"
                    )
            browser.close()
    finally:
        srv.stop()
    return out


def dag_only(lab: Lab, repeat: int) -> dict:
    """Only the DAG page loads (what --baseline-ref runs against an older trajlab in a subprocess)."""
    from playwright.sync_api import sync_playwright

    import trajlab
    from trajlab.dashboard import DashboardServer, create_app

    print(f"trajlab from {Path(trajlab.__file__).parent}")
    app = create_app(lab, annotations="/tmp/trajlab-bench-dashboard-annotations")
    srv = DashboardServer(app, "127.0.0.1", 0).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            out = dag_bench(browser, srv, repeat)
            browser.close()
    finally:
        srv.stop()
    return out


def baseline_dag(ref: str, a: argparse.Namespace) -> dict:
    """The DAG page loads of git commit `ref`'s trajlab (e.g. the last Cytoscape renderer), measured by
    this same script in a subprocess (PYTHONPATH = that commit's `trajlab/`), on the same lab, in this run."""
    import subprocess
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="trajlab-bench-baseline-"))
    repo = Path(__file__).resolve().parents[1]
    tar = subprocess.run(
        ["git", "-C", str(repo), "archive", ref, "trajlab", "dashboards"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=tar.stdout, check=True)
    res = tmp / "baseline.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--dag-only", "--n", str(a.n)]
    cmd += ["--dag-steps", str(a.dag_steps), "--repeat", str(a.repeat), "--lab", a.lab, "--json", str(res)]
    print(f"\nbaseline: the DAG page of {ref} (trajlab extracted to {tmp})")
    subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(tmp)}, check=True)
    out = json.loads(res.read_text())
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def compare(res: dict, base: dict, ref: str) -> None:
    print(f"\nDAG page, this tree vs {ref} (medians; ratio = {ref} / this tree):")
    print(
        f"{'view':<13}{'drawn from nav ms':>19}{ref + ' ms':>16}{'ratio':>8}{'from data ms':>14}{ref + ' ms':>16}{'ratio':>8}"
    )
    for label, _ in DAG_VIEWS:
        ours, theirs = res[f"dag_{label}_ms"], base[f"dag_{label}_ms"]
        od, td = res[f"dag_{label}_from_data_ms"], base[f"dag_{label}_from_data_ms"]
        print(
            f"{label:<13}{ours:>19.0f}{theirs:>16.0f}{theirs / ours:>7.2f}x{od:>14.0f}{td:>16.0f}{td / od:>7.2f}x"
        )


DAG_VIEWS = (
    ("progressive", "?fold=0&agents=none"),
    ("one-shot", "?fold=0&agents=none&chunked=0"),
    ("folded", ""),
)
# The page's node count, whichever renderer drew it: assets/dag.js's canvas (window.trajlabDag) or, for
# a --baseline-ref before it, Cytoscape (window.cy).
DRAWN = "(window.trajlabDag ? window.trajlabDag.count() : (window.cy ? window.cy.nodes().length : 0))"


def dag_bench(browser, srv, repeat: int) -> dict:
    """Fresh loads of the 2,000-step DAG page in each of DAG_VIEWS; medians (see the module docstring)."""
    out: dict = {}

    def fresh():
        pg = browser.new_page(viewport={"width": 1500, "height": 1000})
        pg.set_default_timeout(120_000)
        return pg

    def dag_load(query: str) -> dict:
        pg = fresh()
        cdp = pg.context.new_cdp_session(pg)
        cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
        calls: list[float] = []
        pg.on(
            "request",
            lambda r: calls.append(time.perf_counter()) if "_dash-update-component" in r.url else None,
        )
        pg.add_init_script(
            "window.__first = null; const tick = () => { if (" + DRAWN + " && window.__first === null)"
            " { window.__first = performance.now(); } else if (window.__first === null) {"
            " requestAnimationFrame(tick); } }; requestAnimationFrame(tick);"
        )
        t_nav = time.perf_counter()
        pg.goto(srv.url + f"trajectory/{LONG_TID}{query}")
        pg.wait_for_function(
            "() => { const t = (document.querySelector('#dag-info') || {}).innerText || '';"
            " const m = t.match(/drawn ([\\d,]+) of ([\\d,]+) nodes/);"
            " return m && m[1] === m[2] && " + DRAWN + " === +m[2].replace(/,/g, ''); }"
        )
        done = pg.evaluate(PAINTED)
        marks = pg.evaluate(
            """() => {
                const res = performance.getEntriesByType('resource');
                const end = (f) => Math.max(0, ...res.filter(f).map(e => e.responseEnd));
                const js = res.filter(e => /\\.js(\\?|$)/.test(e.name));
                const nav = performance.getEntriesByType('navigation')[0];
                return {first: window.__first, data: window.__trajlabDagStart,
                        scripts: end(e => /\\.js(\\?|$)/.test(e.name) && !/async-/.test(e.name)),
                        dcl: nav.domContentLoadedEventEnd,
                        layout: end(e => e.name.includes('_dash-layout')),
                        page: Math.min(...res.filter(e => e.name.includes('_dash-update-component'))
                                       .map(e => e.responseEnd)),
                        nodes: """
            + DRAWN
            + """,
                        edges: window.trajlabDag ? window.trajlabDag.edgeCount() : window.cy.edges().length,
                        js_bytes: js.reduce((a, e) => a + e.transferSize, 0),
                        js_raw: js.reduce((a, e) => a + e.decodedBodySize, 0)}; }"""
        )
        t_data = t_nav + marks["data"] / 1000
        marks["calls_before_data"] = sum(1 for c in calls if c <= t_data)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        # one redraw at the widest view ("fit", as far out as the zoom goes): what a pan or zoom frame
        # costs at most; canvas renderer only
        marks["redraw_all"], marks["in_view"] = pg.evaluate(
            "() => { const d = window.trajlabDag; if (!d) return [null, null]; d.fit(); d.drawNow();"
            " const t = []; for (let i = 0; i < 7; i++) { t.push(d.drawNow()); }"
            " return [t.sort((a, b) => a - b)[3], d.view().inView]; }"
        )
        pg.close()
        marks["done"] = done
        marks["cpu"] = metrics.get("ThreadTime", 0.0) * 1000
        return marks

    for label, query in DAG_VIEWS:
        res = [dag_load(query) for _ in range(repeat)]

        def med(k: str, res=res) -> float:
            return statistics.median(r[k] for r in res)

        out[f"dag_{label}_ms"] = done = med("done")
        out[f"dag_{label}_first_ms"] = first = med("first")
        out[f"dag_{label}_main_thread_cpu_ms"] = cpu = med("cpu")
        out[f"dag_{label}_data_ms"] = data = med("data")
        out[f"dag_{label}_from_data_ms"] = statistics.median(r["done"] - r["data"] for r in res)
        out[f"dag_{label}_first_from_data_ms"] = statistics.median(r["first"] - r["data"] for r in res)
        out[f"dag_{label}_nodes"] = res[0]["nodes"]
        out[f"dag_{label}_edges"] = res[0]["edges"]
        redraw = [r["redraw_all"] for r in res if r["redraw_all"] is not None]
        out[f"dag_{label}_redraw_all_ms"] = statistics.median(redraw) if redraw else None
        print(
            f"browser: DAG {label:<12} {res[0]['nodes']:>5,} nodes + {res[0]['edges']:,} edges drawn in {done:6.0f} ms,"
            f" first nodes at {first:6.0f} ms, page main-thread CPU {cpu:6.0f} ms (median of {repeat}, from"
            " navigation start)"
        )
        print(
            f"         {'':<12} from data arrival: drawn in {out[f'dag_{label}_from_data_ms']:6.0f} ms, first nodes"
            f" after {out[f'dag_{label}_first_from_data_ms']:4.0f} ms; timeline: scripts loaded {med('scripts'):.0f},"
            f" DOMContentLoaded {med('dcl'):.0f}, layout {med('layout'):.0f}, page callback {med('page'):.0f},"
            f" data in the page {data:.0f} ms; {res[0]['calls_before_data']} callback round trip(s) before"
            f" the data; JS {res[0]['js_bytes'] / 1e6:.2f} MB transferred for {res[0]['js_raw'] / 1e6:.2f} MB"
            + (
                f"; one redraw at the widest view {statistics.median(redraw):.1f} ms ({res[0]['in_view']:,} nodes in view)"
                if redraw
                else ""
            )
        )
    print(
        f"ratios: one-shot / progressive total {out['dag_one-shot_ms'] / out['dag_progressive_ms']:.2f}x, "
        f"first nodes {out['dag_one-shot_first_ms'] / out['dag_progressive_first_ms']:.2f}x"
    )
    return out


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read().decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dag-steps", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--lab", default="/tmp/trajlab-bench-dashboard")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--json", default=None, help="Write the figures to this file.")
    ap.add_argument("--dag-only", action="store_true", help="Only the browser loads of the DAG page.")
    ap.add_argument(
        "--baseline-ref",
        default=None,
        help="Also load the DAG page served by this git commit's trajlab (e.g. deda22a, the last Cytoscape "
        "renderer) in the same run, and print the ratios.",
    )
    a = ap.parse_args()
    path = Path(f"{a.lab}-{a.n}")
    lab = Lab.open(path) if (path / "lab.json").exists() else None
    if (
        a.rebuild
        or lab is None
        or lab.rows("trajectories") != a.n + 1
        or lab.rows("dag_nodes") != a.dag_steps
    ):
        lab = build_lab(path, a.n, a.dag_steps)
    else:
        print(f"reusing {path} ({lab.rows('trajectories'):,} trajectories)")
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}"
    )
    if a.dag_only:
        res = dag_only(lab, a.repeat)
        if a.json:
            Path(a.json).write_text(json.dumps(res, indent=2, default=str))
        return
    res = server_bench(lab, a.repeat)
    if not a.no_browser:
        res.update(browser_bench(lab, a.repeat, a.n))
        if a.baseline_ref:
            base = baseline_dag(a.baseline_ref, a)
            res["baseline"] = {"ref": a.baseline_ref, **base}
            compare(res, base, a.baseline_ref)
    goal = "met" if res["runs_page_max_ms"] < 300 else "NOT met"
    print(
        f"\ngoal page of runs < 300 ms server time: {goal} (median {res['runs_page_median_ms']:.1f} ms, "
        f"slowest request {res['runs_page_max_ms']:.1f} ms)"
    )
    if "dag_progressive_ms" in res:
        goal = "met" if res["dag_progressive_ms"] < 2000 else "NOT met"
        print(
            f"goal 2,000-step DAG drawn < 2 s in headless Chromium: {goal} ({res['dag_progressive_ms']:.0f} ms"
            f" progressive, {res['dag_one-shot_ms']:.0f} ms in one go, every node and edge; load average now"
            f" {os.getloadavg()[0]:.1f})"
        )
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2, default=str))


if __name__ == "__main__":
    main()
