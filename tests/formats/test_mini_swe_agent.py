from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from format_checks import parse_tree

from trajlab.formats import get_adapter
from trajlab.ingest import ingest
from trajlab.store import Lab, query

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "mini_swe_agent"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
V1 = "swebench_run/sympy__sympy-1/sympy__sympy-1.traj.json"
V2 = "swebench_run/flask__flask-2/flask__flask-2.traj.json"


@pytest.fixture(scope="module")
def parsed():
    return parse_tree(FIX)


def test_units(parsed):
    disc, units = parsed
    assert not disc.unknown
    assert sorted(units) == ["malformed/binary.traj.json", "malformed/odd.traj.json", V2, V1]
    claimed = {p.name for u, _, _ in units.values() for p in u.companions}
    assert claimed == {"preds.json", "report.json"}


def test_v1_text_actions(parsed):
    _, units = parsed
    _, ctx, [(t, steps)] = units[V1]
    assert (ctx.records_seen, ctx.records_quarantined) == (12, 0)
    assert (t["runner"], t["model"], t["runner_version"], t["exit_status"]) == (
        "mini_swe_agent",
        "anthropic/claude-sonnet-4-20250514",
        "1.9.0",
        "Submitted",
    )
    assert (t["outcome"], t["outcome_source"]) == ("success", "report.json:sympy__sympy-1.resolved")
    assert t["cost_usd"] == 0.12 and t.get("input_tokens") is None  # v1 records cost, not tokens
    assert (t["n_steps"], t["n_tool_calls"], t["n_errors"]) == (12, 4, 3)
    calls = [s for s in steps if s["kind"] == "tool_call"]
    assert [json.loads(c["arguments"])["command"] for c in calls] == [
        "ls",
        "python -m pytest sympy/core -q",
        "grep -rn 'def simplify' sympy | head",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
    ]
    assert (calls[0]["exit_code"], calls[0]["output"]) == (0, "setup.py\nsympy\n")
    assert (calls[1]["timed_out"], calls[1]["is_error"], calls[1].get("exit_code")) == (True, True, None)
    assert calls[2]["exit_code"] == 1 and "[...elided...]" in calls[2]["output"]
    assert (
        calls[3]["output"] == t["final_answer"] == "diff --git a/sympy/core/power.py b/sympy/core/power.py\n"
    )
    # two code blocks in one reply: mini executes nothing and answers with a format error
    fmt = [s for s in steps if s.get("role") == "format_error"]
    assert len(fmt) == 1 and fmt[0]["is_error"] is True


def test_v2_toolcalls_and_exit(parsed):
    _, units = parsed
    _, ctx, [(t, steps)] = units[V2]
    assert ctx.records_quarantined == 0
    assert (t["model"], t["outcome"], t["exit_status"], t["runner_version"]) == (
        "openai/gpt-5-mini",
        "failure",
        "Submitted",
        "2.1.0",
    )
    assert (t["input_tokens"], t["output_tokens"], t["cached_tokens"], t["cost_usd"]) == (
        2400,
        80,
        1200,
        0.003,
    )
    assert t["started_at"] == datetime(2025, 2, 19, 21, 20, tzinfo=timezone.utc)
    assert t["anomalies"] == []
    calls = {s["call_id"]: s for s in steps if s["kind"] == "tool_call"}
    assert (calls["tc1"]["output"], calls["tc1"]["exit_code"]) == ("from flask import Flask\n", 0)
    assert (calls["tc2"]["tool"], calls["tc2"]["modality"], calls["tc2"]["exit_code"]) == (
        "ffprobe",
        "video",
        127,
    )
    # the submit call has no tool reply: its output is the exit message's submission
    assert calls["tc3"]["output"] == "diff --git a/app.py b/app.py\n"


def test_malformed_and_bare(parsed):
    _, units = parsed
    _, ctx, rows = units["malformed/binary.traj.json"]
    assert rows == [] and ctx.quarantined[0].error_type in ("binary", "utf8")
    _, ctx, [(t, steps)] = units["malformed/odd.traj.json"]
    assert (ctx.records_seen, ctx.records_ingested, ctx.records_quarantined) == (4, 3, 1)
    assert t["anomalies"] == ["call without result action-1"]
    assert json.loads(t["metadata"])["trajectory_format"] == "bare"
    assert [s["kind"] for s in steps] == ["system", "user", "assistant", "tool_call"]


def test_sniff_foreign_traj_json():
    a = get_adapter("mini-swe-agent")
    assert a.sniff(Path("x.traj.json"), b'{"info": {}, "messages": []}')
    assert a.sniff(Path("other.json"), b'{"messages": [], "trajectory_format": "mini-swe-agent-1.1"}')
    assert not a.sniff(Path("x.traj.json"), b'{"schema_version": "ATIF-v1.5", "steps": []}')
    assert not a.sniff(Path("messages.json"), b'[{"role": "user", "content": "hi"}]')


@pytest.mark.corpus
def test_corpus_mini_swe_agent(corpus_dir: Path, tmp_path: Path):
    rep = ingest([corpus_dir / "mini_swe_agent"], tmp_path / "lab", workers=1, progress=False)
    assert not rep.unknown
    r = rep.runners["mini_swe_agent"]
    assert (r.trajectories, r.steps, r.tool_calls, r.records_quarantined) == (2, 28, 12, 0)
    lab = Lab.open(tmp_path / "lab")
    rows = query(
        lab,
        "select task_id, n_steps, n_tool_calls, n_errors, exit_status from trajectories order by 1",
        as_="polars",
    ).rows()
    assert rows == [("github_issue", 22, 10, 2, "Submitted"), ("local", 6, 2, 0, "Submitted")]
    # each action's observation is the next user message: every call has its output
    assert (
        query(lab, "select count(*) from steps where kind = 'tool_call' and output is null")
        .column(0)[0]
        .as_py()
        == 0
    )
    codes = query(
        lab, "select exit_code, count(*) n from steps where kind = 'tool_call' group by 1 order by 1"
    )
    assert codes.to_pylist() == [
        {"exit_code": 0, "n": 8},
        {"exit_code": 1, "n": 2},
        {"exit_code": None, "n": 2},
    ]
