from __future__ import annotations

import json
from pathlib import Path

import pytest
from format_checks import check_wrong_types, claimed_by, claimed_folders, parse_detected

from trajlab.formats import ParseContext, detect, get_adapter, head
from trajlab.ingest import ingest
from trajlab.store import Lab

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "claude_stream_json"


def parse(path: Path) -> tuple[list[tuple[dict, list[dict]]], ParseContext]:
    return parse_detected(path, "claude-stream-json")


def test_subagent_session():
    [(t, steps)], ctx = parse(FIX / "subagent_session.jsonl")
    # 15 lines: one is not JSON, one is a JSON list; the control_response is read and dropped
    assert ctx.records_seen == 14 and ctx.records_ingested == 12
    assert sorted(q.error_type for q in ctx.quarantined) == ["json", "schema"]
    assert [q.line for q in ctx.quarantined] == [8, 12]
    assert t["native_id"] == "3f1c2a9e-5b7d-4e21-9c0a-7d2f1e6b8a41"
    assert t["runner"] == "claude_code" and t["format"] == "claude-stream-json"
    assert t["runner_version"] == "2.1.63" and t["model"] == "claude-sonnet-4-6"
    assert [s["kind"] for s in steps] == [
        "reasoning",
        "tool_call",
        "user",
        "tool_call",
        "assistant",
        "assistant",
    ]
    agent_call, sub_prompt, bash, sub_text, final = steps[1], steps[2], steps[3], steps[4], steps[5]
    assert agent_call["tool"] == "subagent" and agent_call["call_id"] == "toolu_agent_1"
    assert agent_call["output"] == "whisper failed: ffmpeg is missing." and agent_call["duration_s"] == 5.3
    for s in (sub_prompt, bash, sub_text):
        assert s["agent_id"] == "a9e8f7d6c5b4" and s["depth"] == 1 and s["parent_step_index"] == 1
    assert bash["tool"] == "whisper" and bash["modality"] == "audio"
    assert bash["is_error"] is True and bash["exit_code"] == 1 and "ffmpeg was not found" in bash["output"]
    assert bash["model"] == "claude-haiku-4-5"
    assert final["agent_id"] == "main" and final["depth"] == 0
    # usage once per message id: the two lines of msg_main_1 count once
    assert steps[0]["input_tokens"] == 17003 and steps[1].get("input_tokens") is None
    # trajectory totals come from result.modelUsage (all models, cache included)
    assert t["input_tokens"] == 4 + 300 + 34100 + 10 + 24100
    assert t["output_tokens"] == 82 and t["cached_tokens"] == 58200
    assert t["cost_usd"] == pytest.approx(0.0456) and t["duration_s"] == pytest.approx(9.12)
    assert t["exit_status"] == "success" and t.get("error") is None and t["outcome"] == "unknown"
    assert t["final_answer"] == "I could not transcribe talk.mp3: ffmpeg is not installed."
    assert t["n_subagents"] == 1 and t["n_tool_calls"] == 2 and t["n_errors"] == 1
    meta = json.loads(t["metadata"])
    assert meta["num_turns"] == 2 and meta["models"] == ["claude-sonnet-4-6", "claude-haiku-4-5"]
    assert t["anomalies"] == []


def test_stream_event_deltas_rebuild_only_missing_messages():
    [(t, steps)], ctx = parse(FIX / "partial_messages.jsonl")
    assert not ctx.quarantined
    assert [(s["kind"], s.get("text")) for s in steps] == [
        ("assistant", "Let me probe the video."),
        ("tool_call", None),
        ("assistant", "The clip lasts 12.5 s."),
    ]
    call = steps[1]
    assert json.loads(call["arguments"]) == {"command": "ffprobe -v error clip.mp4"}
    assert call["tool"] == "ffprobe" and call["output"] == "duration=12.5"
    assert steps[0]["input_tokens"] == 20 and steps[0]["output_tokens"] == 25
    assert t["anomalies"] == ["message msg_p1 rebuilt from stream_event deltas"]


def test_two_sessions_error_result_and_cut_stream():
    [(t1, s1), (t2, s2)], _ = parse(FIX / "two_sessions.jsonl")
    assert t1["native_id"] == "c0ffee00-2222-4333-8444-555566667777"
    assert t1["exit_status"] == "error_max_turns" and t1["error"] == "Reached maximum number of turns (30)"
    assert t1["outcome"] == "unknown" and t1["cost_usd"] == 1.25
    assert [s["kind"] for s in s1] == ["tool_call", "compaction"]
    assert json.loads(s1[1]["metadata"]) == {"trigger": "auto", "pre_tokens": 160000}
    assert s1[0]["tool"] == "image_read" and s1[0]["modality"] == "image"
    assert "call without result tu_1" in t1["anomalies"]
    assert t1["source_locator"] != t2["source_locator"] and t1["trajectory_id"] != t2["trajectory_id"]
    assert t2.get("exit_status") is None and len(s2) == 1
    assert t2["anomalies"] == ["no result line: the run did not finish (or the stream was cut)"]


def test_sniff_is_specific(tmp_path):
    a = get_adapter("claude-stream-json")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps(
            {"type": "user", "sessionId": "s", "uuid": "u", "message": {"role": "user", "content": "hi"}}
        )
        + "\n"
    )
    assert not a.sniff(transcript, head(transcript))
    init_only = tmp_path / "i.jsonl"
    init_only.write_text(
        json.dumps({"type": "system", "subtype": "init", "session_id": "s", "uuid": "u"}) + "\n"
    )
    adapter, _ = detect(init_only, head(init_only))
    assert adapter is not None and adapter.name == "claude-stream-json"  # not the transcript adapter


@pytest.mark.corpus
def test_corpus_claude_stream_json(corpus_dir, tmp_path):
    src = corpus_dir / "claude_stream_json"
    jsonl = sorted(src.glob("*.jsonl"))
    assert len(jsonl) == 2
    for f in jsonl:
        adapter, tried = detect(f, head(f))
        assert adapter is not None and adapter.name == "claude-stream-json", (f, tried)
    report = ingest(jsonl, tmp_path / "lab", workers=1, progress=False)
    assert report.records_quarantined == 0 and report.records_seen == 17
    lab = Lab.open(tmp_path / "lab")
    t = {r["native_id"]: r for r in lab.read("trajectories").to_pylist()}
    sub = t["05555ce4-068a-4334-a6e3-b5bea2e8cc2e"]
    tool = t["493eec35-215c-4b7b-a7e3-94cce106a7f5"]
    assert (sub["n_steps"], sub["n_tool_calls"], sub["n_subagents"]) == (5, 2, 1)
    assert (tool["n_steps"], tool["n_tool_calls"], tool["n_subagents"]) == (2, 1, 0)
    assert sub["input_tokens"] == 8 + 59771 + 306 and sub["output_tokens"] == 373
    assert sub["cost_usd"] == pytest.approx(0.041163) and tool["cost_usd"] == pytest.approx(0.0210585)
    assert {sub["exit_status"], tool["exit_status"]} == {"success"}
    calls = lab.read("steps", filter=None).to_pylist()
    calls = [s for s in calls if s["kind"] == "tool_call"]
    assert len(calls) == 3 and all(c["output"] for c in calls)  # every call found its result
    bash = [c for c in calls if c["tool_name"] == "Bash"]
    assert {c["tool"] for c in bash} == {"wc"}
    assert [c["agent_id"] for c in calls if c["tool_name"] == "Bash" and c["depth"] == 1] == [
        "a7da442314ff745d1"
    ]


@pytest.mark.corpus
def test_corpus_sniff_claims_only_own_files(corpus_dir):
    """Sniff alone (priority aside) says yes to this format's corpus files and to nothing else."""
    claimed = claimed_by(corpus_dir, ["claude-stream-json"])
    assert claimed_folders(corpus_dir, claimed) == {"claude_stream_json"}
    assert len(claimed) == 2


@pytest.mark.parametrize("name", ["subagent_session.jsonl", "partial_messages.jsonl"])
def test_wrong_types_never_break_a_file(tmp_path, name):
    check_wrong_types("claude-stream-json", FIX / name, tmp_path)


def test_split_response_carries_its_final_output_count(tmp_path):
    # One response split into one line per block repeats `usage`; only the last line has the final
    # output count (as in the corpus's Claude Code transcripts: 8, 8, ..., 780). It counts once.
    sid = "5e1f0c2a-1b2c-4d3e-8f40-123456789abc"

    def line(mid: str, block: dict, out: int) -> dict:
        usage = {"input_tokens": 5, "output_tokens": out, "cache_read_input_tokens": 100}
        msg = {
            "id": mid,
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [block],
            "usage": usage,
        }
        return {"type": "assistant", "message": msg, "session_id": sid, "parent_tool_use_id": None}

    bash = {"type": "tool_use", "id": "tu_1", "name": "Bash", "input": {"command": "ffprobe a.mp4"}}
    result = {"type": "tool_result", "tool_use_id": "tu_1", "content": "duration=3.0"}
    lines = [
        {"type": "system", "subtype": "init", "session_id": sid, "model": "claude-sonnet-4-6", "uuid": "i"},
        line("msg_1", {"type": "thinking", "thinking": "Probe it."}, 8),
        line("msg_1", {"type": "text", "text": "Probing."}, 8),
        line("msg_1", bash, 441),
        {"type": "user", "message": {"role": "user", "content": [result]}, "session_id": sid},
        line("msg_2", {"type": "text", "text": "It lasts 3 s."}, 19),
        line("msg_2", {"type": "text", "text": "Done."}, 12),  # a smaller count later is not the final one
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "It lasts 3 s.",
            "session_id": sid,
        },
    ]
    path = tmp_path / "split.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    [(_t, steps)], _ = parse(path)
    assert [(s["kind"], s.get("output_tokens")) for s in steps] == [
        ("reasoning", 441),
        ("assistant", None),
        ("tool_call", None),
        ("assistant", 19),
        ("assistant", None),
    ]
    assert steps[0]["input_tokens"] == 105 and steps[3]["input_tokens"] == 105
