from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from format_checks import parse_tree

from trajlab.formats import get_adapter
from trajlab.ingest import ingest
from trajlab.store import Lab, query

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "kira" / "runs" / "omnigaia_qwen"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def parsed():
    return parse_tree(FIX)


def test_units(parsed):
    disc, units = parsed
    # results.json and run_meta.json are run-level companions, not units (and not unknown)
    assert not disc.unknown
    assert sorted(units) == [f"item_000{i}/messages.json" for i in range(4)]
    u = units["item_0001/messages.json"][0]
    assert {"trajectory.json", "final_text.txt", "pre_summary_snapshots.json"} <= {
        p.name for p in u.companions
    }


def test_item_with_results_row(parsed):
    _, units = parsed
    _, ctx, [(t, steps)] = units["item_0000/messages.json"]
    assert (ctx.records_seen, ctx.records_quarantined) == (13, 0)  # 11 messages + 2 step records
    assert (t["runner"], t["harness"], t["runner_version"], t["model"]) == (
        "kira",
        "kira",
        "1.0.0",
        "openai/Qwen3.6-27B",
    )
    assert (t["task_id"], t["benchmark"], t["difficulty"], t["reasoning_effort"]) == (
        "og-101",
        "omnigaia",
        "2",
        "medium",
    )
    assert (t["outcome"], t["reward"], t["outcome_source"]) == ("success", 1.0, "results.json:is_correct")
    assert (t["final_answer"], t["expected_answer"], t["exit_status"]) == ("dog", "dog", "task_complete")
    assert (t["input_tokens"], t["output_tokens"], t["cached_tokens"]) == (4700, 100, 2000)
    assert (t["n_steps"], t["n_tool_calls"], t["native_id"]) == (10, 3, "og-101")
    calls = {s["call_id"]: s for s in steps if s["kind"] == "tool_call"}
    # execute_commands keystrokes are the shell command
    assert (calls["call_a"]["tool"], calls["call_a"]["modality"]) == ("ffprobe", "audio")
    assert (calls["call_b"]["tool"], calls["call_b"]["output"]) == ("whisper", "executed")
    assert calls["call_a"]["command"] == "ffprobe -hide_banner inputs/audios/a1.wav"
    assert calls["call_c"]["tool"] == "submit"
    # usage is only in trajectory.json: one record per tool-calling turn, on the turn's first step
    reasoning = steps[2]
    assert reasoning["kind"] == "reasoning" and (
        reasoning["input_tokens"],
        reasoning["reasoning_tokens"],
    ) == (2100, 12)
    assert calls["call_c"]["input_tokens"] == 2600
    meta = json.loads(reasoning["metadata"])
    assert meta == {"finish_reason": "tool_calls"}


def test_summarized_item_with_image(parsed):
    _, units = parsed
    _, ctx, [(t, steps)] = units["item_0001/messages.json"]
    assert ctx.records_quarantined == 0
    assert (t["outcome"], t["final_answer"], t["task_id"]) == ("failure", "17", "og-102")
    assert sorted(t["anomalies"]) == [
        "1 context summarization(s): pre-summary turns spliced from pre_summary_snapshots.json",
        "result without call call_ghost",
    ]
    kinds = [s["kind"] for s in steps]
    assert kinds == [
        "system",
        "user",
        "tool_call",
        "user",
        "tool_call",
        "compaction",
        "tool_call",
        "assistant",
        "tool_call",
        "tool_result",
    ]
    assert t["task"].endswith("What number is on the jersey?")
    assert steps[5]["text"] == "Summary of the work so far: the jersey image was viewed; OCR failed."
    img = steps[2]
    assert (img["tool"], img["modality"]) == ("image_read", "image")
    assert steps[3]["text"] == "Here is inputs/images/i7.png:\n[image]"  # pixels are never stored
    ocr = steps[4]
    assert (ocr["tool"], ocr["is_error"]) == ("tesseract", True)
    assert [s.get("input_tokens") for s in steps if s.get("input_tokens")] == [1000, 1100, 1200, 1300]
    assert json.loads(steps[2]["metadata"]) == {"pre_summary": True}


def test_malformed_and_orphan_items(parsed):
    _, units = parsed
    _, ctx, rows = units["item_0002/messages.json"]
    assert rows == [] and ctx.quarantined[0].error_type == "truncated"
    _, ctx, [(t, steps)] = units["item_0003/messages.json"]
    assert (ctx.records_seen, ctx.records_quarantined) == (4, 1)
    assert (t["outcome"], t["benchmark"], t["native_id"]) == ("unknown", "omnigaia", "item_0003")
    assert t["anomalies"] == [
        "trajectory.json missing: no per-turn token usage",
        "no results row for this item: outcome unknown",
    ]
    assert len(steps) == 3


def test_sniff():
    a = get_adapter("kira")
    assert a.sniff(Path("/r/item_0007/messages.json"), b'[{"role": "system", "content": "x"}]')
    assert a.sniff(
        Path("/r/x/messages.json"),
        b'[{"role": "assistant", "tool_calls": [{"function": {"name": "execute_commands"}}]}]',
    )
    assert not a.sniff(Path("/r/x/messages.json"), b'[{"role": "user", "content": "hi"}]')
    assert not a.sniff(Path("/r/item_0007/trajectory.json"), b'[{"step": 1}]')


def test_ingest_counts(tmp_path: Path):
    rep = ingest([FIX], tmp_path / "lab", workers=1, progress=False)
    assert not rep.unknown
    r = rep.runners["kira"]
    assert (r.files, r.trajectories, r.steps, r.tool_calls) == (4, 3, 23, 7)
    assert r.records_seen == r.records_ingested + r.records_quarantined == 30
    lab = Lab.open(tmp_path / "lab")
    rows = query(lab, "select task_id, outcome from trajectories order by 1 nulls last", as_="polars").rows()
    assert rows == [("og-101", "success"), ("og-102", "failure"), (None, "unknown")]
