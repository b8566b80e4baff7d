from __future__ import annotations

import json
from pathlib import Path

import pytest
from format_checks import check_wrong_types, claimed_by, claimed_folders, parse_detected

from trajlab.formats import ParseContext, get_adapter, head
from trajlab.ingest import ingest
from trajlab.store import Lab

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "codex_exec_json"


def parse(path: Path) -> tuple[list[tuple[dict, list[dict]]], ParseContext]:
    return parse_detected(path, "codex-exec-json")


def test_items_become_one_step_each_and_updates_do_not_duplicate():
    [(t, steps)], ctx = parse(FIX / "exec-video-audio.jsonl")
    assert ctx.records_seen == 20 and not ctx.quarantined
    assert t["native_id"] == "0199e2b1-4c1e-7a30-9b2d-5f8e1c0a7d42"
    assert t["runner"] == "codex" and t["harness"] == "codex-exec" and t["outcome"] == "unknown"
    assert [s["kind"] for s in steps] == [
        "reasoning",
        "tool_call",  # todo_list: started, updated twice, completed -> one step
        "tool_call",
        "tool_call",
        "tool_call",
        "tool_call",
        "tool_call",
        "assistant",
        "system",
        "system",
    ]
    todo = steps[1]
    assert (
        todo["tool"] == "todo"
        and todo["output"] == "[x] Probe the video\n[x] Transcribe the audio track\n[x] Answer"
    )
    probe, whisper, mcp, patch, search = steps[2:7]
    assert probe["tool"] == "ffprobe" and probe["modality"] == "video" and probe["exit_code"] == 0
    assert probe["is_error"] is False and "duration=61.2" in probe["output"] and probe["call_id"] == "item_2"
    assert whisper["tool"] == "whisper" and whisper["exit_code"] == 127 and whisper["is_error"] is True
    assert mcp["tool_name"] == "mcp__search__web_search" and mcp["output"] == "No results."
    assert json.loads(mcp["arguments"]) == {"q": "clip.mp4 speaker"}
    assert patch["tool_name"] == "apply_patch" and patch["output"] == "add notes/answer.md"
    assert (
        search["tool"] == "web_search" and json.loads(search["arguments"])["query"] == "who narrates clip.mp4"
    )
    assert t["final_answer"].startswith("The video is 61.2 s long")
    assert (t["input_tokens"], t["cached_tokens"], t["output_tokens"]) == (24763, 24448, 122)
    assert t["total_tokens"] == 24885
    assert (
        t["exit_status"] == "turn_failed"
        and t["error"] == "exceeded retry limit, last status: 429 Too Many Requests"
    )
    assert steps[8]["text"] == "stream disconnected before completion" and steps[8]["is_error"] is True
    assert t["n_tool_calls"] == 6 and t["n_errors"] == 3
    assert json.loads(t["metadata"]) == {
        "thread_id": "0199e2b1-4c1e-7a30-9b2d-5f8e1c0a7d42",
        "turns": 2,
        "failed_turns": 1,
    }


def test_early_item_type_field_and_bad_lines():
    [(t, steps)], ctx = parse(FIX / "exec-early-item-type.jsonl")
    assert ctx.records_seen == 11 and ctx.records_ingested == 7
    assert [(q.line, q.error_type) for q in ctx.quarantined] == [
        (1, "json"),
        (8, "json"),
        (9, "schema"),
        (10, "schema"),
    ]
    assert [s["kind"] for s in steps] == ["reasoning", "tool_call", "assistant"]
    assert steps[1]["tool"] == "imagemagick" and steps[1]["modality"] == "image"
    assert t["final_answer"] == "The frame is 1280x720." and t["exit_status"] == "completed"
    assert t["input_tokens"] == 2000 and t["output_tokens"] == 500


def test_resumed_stream_reuses_item_ids_and_retry_errors_are_not_fatal():
    [(t, steps)], _ = parse(FIX / "exec-resumed.jsonl")
    assert [s.get("tool_name") for s in steps] == [
        "command_execution",
        "spawn_agent",
        "command_execution",
        None,
    ]
    sleep, spawn, ffmpeg, err = steps
    assert sleep.get("output") is None and "item item_0 never completed" in t["anomalies"]
    assert spawn["tool"] == "subagent" and "wrote audio.wav" in spawn["output"]
    assert ffmpeg["exit_code"] == 124 and ffmpeg["timed_out"] is True and ffmpeg["is_error"] is True
    assert err["kind"] == "system" and err["text"] == "Reconnecting... 1/5"
    assert t["exit_status"] == "completed" and t.get("error") is None  # a turn completed after the retry
    assert (t["input_tokens"], t["cached_tokens"], t["output_tokens"]) == (400, 250, 40)


def test_sniff_rejects_rollouts_and_other_jsonl(tmp_path):
    a = get_adapter("codex-exec-json")
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}) + "\n")
    assert not a.sniff(p, head(p))
    p.write_text(json.dumps({"type": "turn.started", "extra": 1}) + "\n")
    assert not a.sniff(p, head(p))
    p.write_text(json.dumps({"type": "turn.started"}) + "\n")
    assert a.sniff(p, head(p))


def test_ingest_invariant(tmp_path):
    report = ingest([FIX], tmp_path / "lab", workers=1, progress=False)
    assert report.records_seen == 42
    assert report.records_seen == report.records_ingested + report.records_quarantined
    assert report.records_quarantined == 4
    lab = Lab.open(tmp_path / "lab")
    assert lab.rows("trajectories") == 3 and lab.rows("steps") == 17


@pytest.mark.corpus
def test_corpus_sniff_claims_only_own_files(corpus_dir):
    """Sniff alone (priority aside) says yes to this format's corpus files and to nothing else."""
    claimed = claimed_by(corpus_dir, ["codex-exec-json"])
    assert claimed_folders(corpus_dir, claimed) == set()
    assert len(claimed) == 0


@pytest.mark.parametrize("name", ["exec-video-audio.jsonl", "exec-resumed.jsonl"])
def test_wrong_types_never_break_a_file(tmp_path, name):
    check_wrong_types("codex-exec-json", FIX / name, tmp_path)
