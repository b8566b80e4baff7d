"""The dashboard on a lab written with schema v1 (steps parts without `tool_seq`): every page, panel,
trajectory page and step inspector renders what it renders for the same lab written today, in normal
and blind mode, without writing the lab. (Today's lab with its calls of programs the shell did not find
numbered, as a v1 part cannot tell them from uses: `count_missing_programs`.)"""

from __future__ import annotations

import json
from pathlib import Path

import plotly.utils
import pytest
from cli_harness import example_lab, run
from v1_lab import count_missing_programs, rounded, v1_copy

from trajlab.dashboard import check_pages, create_app
from trajlab.dashboard._check import _panel
from trajlab.dashboard._inspector import inspector
from trajlab.dashboard._page_trajectory import trajectory_layout
from trajlab.dashboard._panels import page_layout
from trajlab.review import review_stage
from trajlab.store import Lab, query


def _rendered(lab: Path, annotations: Path, blind: bool) -> dict[str, str]:
    app = create_app(lab, annotations=annotations, dataset="examples", reviewers=2, blind=blind)
    ctx = app.trajlab  # type: ignore[attr-defined]

    def js(tree: object) -> str:
        plain = json.loads(json.dumps(tree, cls=plotly.utils.PlotlyJSONEncoder).replace(str(lab), "LAB"))
        return json.dumps(rounded(plain), sort_keys=True)

    checks = check_pages(ctx, trajectories=2)
    assert [c.line() for c in checks if not c.ok] == []
    out = {"checks": js([(c.path, c.panel, c.kind, c.note) for c in checks])}
    for page in ctx.spec.pages:
        out[page.path] = js(page_layout(ctx, page))
        for i, panel in enumerate(page.panels):
            out[f"{page.path} panel {i}"] = js(_panel(ctx, page, i, panel))
    cur = ctx.source.snapshot().cursor()
    for (tid,) in cur.execute("SELECT trajectory_id FROM runs ORDER BY n_steps DESC, 1 LIMIT 3").fetchall():
        out[tid] = js(trajectory_layout(ctx, tid))
        data = ctx.trajectories.get(ctx, tid)
        for step in sorted(data.steps):
            out[f"{tid}:{step}"] = js(inspector(ctx, data, step))
    return out


@pytest.fixture()
def one_thread(monkeypatch):
    """DuckDB connections with one thread: a page's rows that tie under its ORDER BY (two models with
    the same accuracy) and float sums then come out in one order, so two renders can be compared."""
    import trajlab.analysis._run as run_mod
    import trajlab.store._duckdb as duck

    real = duck.connect

    def connect(lab, threads=None, extra_views=None):  # type: ignore[no-untyped-def]
        return real(lab, threads=threads or 1, extra_views=extra_views)

    monkeypatch.setattr(duck, "connect", connect)
    monkeypatch.setattr(run_mod, "connect", connect)


@pytest.mark.parametrize("blind", [False, True])
def test_every_page_of_a_v1_lab_renders_as_on_the_lab_written_today(tmp_path, blind, one_thread):
    lab = example_lab(tmp_path, tasks=4)
    assert run("judge", "run", str(lab), "--rules", "--no-progress").code == 0
    review_stage(Lab.open(lab), tmp_path / "ex", tmp_path / "annotations")
    old = v1_copy(lab, tmp_path / "v1")
    manifest = (old / "lab.json").read_bytes()
    want = _rendered(count_missing_programs(lab, tmp_path / "counted"), tmp_path / "annotations", blind)
    got = _rendered(old, tmp_path / "annotations", blind)
    assert (old / "lab.json").read_bytes() == manifest  # read, never upgraded by a write
    assert got.keys() == want.keys()
    assert [k for k in want if got[k] != want[k]] == []
    # what was compared is the real thing: every run listed, the longest failed run's DAG with all its steps
    old_lab = Lab.open(old)
    n_runs = old_lab.rows("trajectories")
    sql = "SELECT max(n_steps) AS n FROM trajectories WHERE outcome = 'failure'"
    longest = query(old_lab, sql).to_pylist()[0]["n"]
    assert f'"{n_runs} runs"' in got["checks"] and f"step DAG of {longest} steps" in got["checks"]
    assert old_lab.manifest.schema_version == 1
