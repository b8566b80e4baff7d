from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from format_checks import parse_tree

from trajlab.ingest import ingest
from trajlab.store import Lab, query

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "llm_in_sandbox"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
SINGLE = "output/20250301_101500/trajectory.json"
BENCH = "benchmark/20250302_090000_math/trajectory.json"


@pytest.fixture(scope="module")
def parsed():
    return parse_tree(FIX)


def test_units_and_companions(parsed):
    disc, units = parsed
    assert not disc.unknown
    assert sorted(units) == [
        BENCH,
        SINGLE,
        "output/20250303_000000/trajectory.json",
        "output/20250304_000000/trajectory.json",
    ]
    u = units[SINGLE][0]
    assert sorted(p.name for p in u.companions) == [
        "answer.txt",
        "request_001.json",
        "request_002.json",
        "response_001.json",
        "response_002.json",
    ]
    u = units[BENCH][0]
    assert sorted(p.name for p in u.companions) == [
        "p1.txt",
        "p3.txt",
        "request_001.json",
        "response_001.json",
        "results.json",
    ]


def test_single_run(parsed):
    _, units = parsed
    _, ctx, [(t, steps)] = units[SINGLE]
    assert (ctx.records_seen, ctx.records_quarantined) == (5, 0)
    assert (t["runner"], t["harness"], t["outcome"], t["final_answer"]) == (
        "llm_in_sandbox",
        "llm-in-sandbox",
        "unknown",
        "3:07",
    )
    assert t["task"] == "How long is the song in /testbed/input? Answer as m:ss."
    assert t["model"] == "Qwen3-Coder-30B" and t["started_at"] == datetime(
        2025, 3, 1, 10, 15, tzinfo=timezone.utc
    )
    # the system prompt and token usage only exist in the litellm logs
    assert steps[0]["kind"] == "system" and steps[0]["text"] == "You are a helpful agent in a sandbox."
    assert (t["input_tokens"], t["output_tokens"]) == (3000, 120)
    assert (t["n_steps"], t["n_tool_calls"], t["n_errors"]) == (13, 4, 2)
    calls = [s for s in steps if s["kind"] == "tool_call"]
    assert [c["call_id"] for c in calls] == ["call_1", "call_2", "step-4", "step-5"]
    ls, probe, edit, submit = calls
    assert (ls["exit_code"], ls["output"], ls["tool"]) == (0, "song.mp3\n", "ls")
    assert (probe["exit_code"], probe["is_error"], probe["modality"]) == (127, True, "audio")
    assert edit.get("exit_code") is None and edit["output"].startswith(
        "File created at /testbed/output/answer.txt"
    )
    assert submit["output"] == "<<< Finished >>>" and submit["tool"] == "submit"
    reasoning = steps[2]
    assert reasoning["kind"] == "reasoning" and reasoning["input_tokens"] == 1000
    assert steps[3]["duration_s"] == 2.5  # model latency of the step's LLM call
    fmt = [s for s in steps if s.get("role") == "format_error"]
    assert len(fmt) == 1 and fmt[0]["text"].startswith("You forgot to use a function call")


def test_benchmark_run(parsed):
    _, units = parsed
    _, ctx, rows = units[BENCH]
    assert (ctx.records_seen, ctx.records_ingested, ctx.records_quarantined) == (4, 3, 1)
    assert "p4" in ctx.quarantined[0].reason
    by_id = {t["task_id"]: (t, s) for t, s in rows}
    assert sorted(by_id) == ["p1", "p2", "p3"]
    t, steps = by_id["p1"]
    assert (t["outcome"], t["reward"], t["outcome_source"], t["benchmark"]) == (
        "success",
        1.0,
        "trajectory.json:reward",
        "math",
    )
    assert (t["model"], t["final_answer"], t["expected_answer"], t["source_locator"]) == (
        "openai/Qwen3-Coder-30B",
        "391",
        "391",
        "problem=p1",
    )
    assert (t["input_tokens"], t["n_tool_calls"]) == (800, 2) and steps[0]["text"] == "Math sandbox."
    assert [c["call_id"] for c in steps if c["kind"] == "tool_call"] == ["call_p1_1", "step-2"]
    t, _ = by_id["p2"]
    assert (t["outcome"], t["reward"], t["expected_answer"], t["final_answer"]) == (
        "failure",
        0.0,
        "1024",
        "1000",
    )
    t, steps = by_id["p3"]
    assert (t["exit_status"], t["error"], t["n_steps"]) == (
        "error",
        "Docker container exited unexpectedly",
        1,
    )
    assert json.loads(t["metadata"])["max_steps"] == 30


def test_malformed(parsed):
    _, units = parsed
    _, ctx, [(t, _)] = units["output/20250303_000000/trajectory.json"]
    assert (ctx.records_seen, ctx.records_quarantined) == (2, 1)
    assert t["anomalies"] == ["files/answer.txt missing"] and t["final_answer"] == "hi"
    _, ctx, rows = units["output/20250304_000000/trajectory.json"]
    assert rows == [] and ctx.quarantined[0].error_type == "truncated"


def test_ingest_into_lab(tmp_path: Path):
    rep = ingest([FIX], tmp_path / "lab", workers=1, progress=False)
    r = rep.runners["llm_in_sandbox"]
    assert (r.files, r.trajectories, r.records_seen, r.records_ingested, r.records_quarantined) == (
        4,
        5,
        12,
        9,
        3,
    )
    lab = Lab.open(tmp_path / "lab")
    got = query(lab, "select outcome, count(*) n from trajectories group by 1 order by 1").to_pylist()
    assert got == [
        {"outcome": "failure", "n": 2},
        {"outcome": "success", "n": 1},
        {"outcome": "unknown", "n": 2},
    ]
