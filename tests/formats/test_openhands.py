from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from format_checks import parse_tree

from trajlab.formats import get_adapter
from trajlab.ingest import ingest
from trajlab.store import Lab, query

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "openhands"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def parsed():
    return parse_tree(FIX)


def test_event_stream(parsed):
    disc, units = parsed
    assert not disc.unknown and sorted(units) == ["output.jsonl", "transcribe.json"]
    _, ctx, [(t, steps)] = units["transcribe.json"]
    assert (ctx.records_seen, ctx.records_ingested, ctx.records_quarantined) == (17, 16, 1)
    assert (t["runner"], t["format"], t["harness"], t["model"]) == (
        "openhands",
        "openhands",
        "openhands",
        "claude-sonnet-4-20250514",
    )
    assert (t["task"], t["final_answer"], t["exit_status"]) == (
        "What does the speaker say in talk.mp3?",
        "The speaker says 'hello world'.",
        "finished",
    )
    assert t["outcome"] == "unknown"
    # totals from the last llm_metrics (accumulated), not the per-response usage
    assert (t["input_tokens"], t["output_tokens"], t["cached_tokens"], t["cost_usd"]) == (
        14400,
        210,
        10000,
        0.05,
    )
    assert (t["n_steps"], t["n_tool_calls"], t["n_errors"]) == (13, 5, 4)
    assert t["anomalies"] == ["result without call event-99"]
    calls = {s["call_id"]: s for s in steps if s["kind"] == "tool_call"}
    a, b = calls["toolu_A"], calls["toolu_B"]
    assert (a["tool"], a["modality"], a["exit_code"], a["output"]) == (
        "ffprobe",
        "audio",
        0,
        "[FORMAT]\nduration=12.5\n[/FORMAT]",
    )
    assert a["duration_s"] == pytest.approx(1.0)
    # arguments are what the model sent, taken from the response's tool call
    assert json.loads(b["arguments"]) == {"command": "view", "path": "/workspace/notes.txt"}
    assert b["is_error"] is True
    assert (b["tool_name"], b["tool"], b["modality"]) == ("str_replace_editor", "read", "file")  # view
    whisper = calls["toolu_C"]
    assert (whisper["tool"], whisper["exit_code"], whisper["timed_out"], whisper["is_error"]) == (
        "whisper",
        -1,
        True,
        True,
    )
    assert (calls["toolu_D"]["exit_code"], calls["toolu_D"]["is_error"]) == (1, True)
    assert calls["toolu_E"]["tool"] == "submit"
    # one model response with two parallel calls: one thought step, usage counted once
    thoughts = [
        s
        for s in steps
        if s["kind"] == "assistant" and s["text"] == "Let me look at the audio and the notes."
    ]
    assert len(thoughts) == 1 and thoughts[0]["input_tokens"] == 3000 and thoughts[0]["cached_tokens"] == 0
    assert sum(s.get("input_tokens") or 0 for s in steps) == 3000 + 3400 + 3900 + 4100
    assert [s["kind"] for s in steps].count("compaction") == 1
    err = [s for s in steps if s.get("role") == "error"]
    assert len(err) == 1 and err[0]["text"] == "Agent got stuck in a loop"


def test_eval_rows(parsed):
    _, units = parsed
    _, ctx, rows = units["output.jsonl"]
    assert (ctx.records_seen, ctx.records_ingested, ctx.records_quarantined) == (4, 2, 2)
    assert sorted(q.line for q in ctx.quarantined) == [2, 3]
    (t1, s1), (t2, s2) = rows
    assert (t1["task_id"], t1["outcome"], t1["outcome_source"], t1["model"]) == (
        "astropy__astropy-12907",
        "success",
        "test_result.report.resolved",
        "anthropic/claude-sonnet-4-20250514",
    )
    assert (t1["benchmark"], t1["split"], t1["cost_usd"], t1["input_tokens"]) == (
        "princeton-nlp/SWE-bench_Verified",
        "test",
        0.42,
        50000,
    )
    assert t1["final_answer"].startswith("diff --git a/x.py") and t1["source_locator"] == "line=1"
    assert t1["task"] == "Fix the separability matrix bug."
    assert [s["kind"] for s in s1] == ["user", "assistant", "tool_call", "assistant", "tool_call"]
    assert (t2["task_id"], t2["outcome"], t2["outcome_source"], t2["exit_status"]) == (
        "django__django-11099",
        "failure",
        "report.resolved",
        "error",
    )
    assert t2["error"] == "RuntimeError: Agent reached maximum iteration"
    # older rows store history as [action, observation] pairs
    [ls] = [s for s in s2 if s["kind"] == "tool_call"]
    assert (ls["tool"], ls["output"], ls["exit_code"]) == ("ls", "setup.py", 0)
    assert len({t1["trajectory_id"], t2["trajectory_id"]}) == 2


def test_sniff():
    a = get_adapter("openhands")
    assert a.sniff(
        Path("t.json"),
        b'[\n  {\n    "id": 0,\n    "timestamp": "x",\n    "source": "user",\n    "action": "message"',
    )
    assert not a.sniff(Path("t.json"), b'[{"role": "user", "content": "hi"}]')
    assert a.sniff(Path("output.jsonl"), b'{"instance_id": "a", "test_result": {}, "history": []}\n')
    assert not a.sniff(Path("rows.jsonl"), b'{"instance_id": "a", "messages": [], "history": []}\n')


@pytest.mark.corpus
def test_corpus_openhands(corpus_dir: Path, tmp_path: Path):
    rep = ingest([corpus_dir / "openhands"], tmp_path / "lab", workers=1, progress=False)
    assert not rep.unknown
    r = rep.runners["openhands"]
    assert (r.trajectories, r.steps, r.tool_calls, r.records_quarantined) == (4, 30, 11, 0)
    lab = Lab.open(tmp_path / "lab")
    rows = query(
        lab,
        "select regexp_extract(source_path, '[^/]+$') f, n_steps, n_tool_calls, exit_status, model "
        "from trajectories order by f",
        as_="polars",
    ).rows()
    assert rows == [
        ("basic.json", 5, 2, "finished", "claude-3-5-sonnet-20241022"),
        ("basic_gui_mode.json", 10, 4, "awaiting_user_input", "claude-3-5-sonnet-20241022"),
        ("basic_interactions.json", 6, 1, "finished", "gpt-4o-2024-08-06"),
        ("wrong_initial_state.json", 9, 4, "finished", "claude-3-5-sonnet-20241022"),
    ]
    # every call found its observation through `cause`, except `finish` (which has none)
    open_calls = query(
        lab, "select tool_name, count(*) n from steps where kind = 'tool_call' and output is null group by 1"
    )
    assert open_calls.to_pylist() == [{"tool_name": "finish", "n": 3}]
    assert query(lab, "select count(*) from steps where kind = 'tool_result'").column(0)[0].as_py() == 0
