from __future__ import annotations

import json
from pathlib import Path

import pytest
from format_checks import check_wrong_types, claimed_by, claimed_folders, parse_detected

from trajlab.formats import ParseContext, detect, get_adapter, head
from trajlab.ingest import ingest
from trajlab.store import Lab

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "chat_messages"


def parse(path: Path) -> tuple[list[tuple[dict, list[dict]]], ParseContext]:
    return parse_detected(path, "chat-messages")


def kinds(steps: list[dict]) -> list[str]:
    return [s["kind"] for s in steps]


def test_openai_rows_tool_calls_errors_and_bad_rows():
    out, ctx = parse(FIX / "openai_rows.jsonl")
    assert ctx.records_seen == 5 and ctx.records_ingested == 3
    assert [(q.line, q.error_type) for q in ctx.quarantined] == [(3, "schema"), (4, "json")]
    (t0, s0), (t1, s1), (t4, s4) = out
    assert [t["source_locator"] for t in (t0, t1, t4)] == ["row=0", "row=1", "row=4"]
    assert t0["task_id"] == "media__probe-101_0" and t0["model"] == "gpt-4o-2024-08-06"
    assert t0["native_id"] == "gpt-4o_maxiter_30_run_1/media__probe-101_0"
    assert t0["outcome"] == "failure" and t0["reward"] == 0.0 and t0["outcome_source"] == "resolved"
    assert t0["harness"] == "openhands"
    assert kinds(s0) == [
        "system",
        "user",
        "assistant",
        "tool_call",
        "tool_call",
        "tool_call",
        "assistant",
        "tool_call",
    ]
    probe, view, whisper, finish = s0[3], s0[4], s0[5], s0[7]
    assert probe["call_id"] == "call_A1" and probe["tool"] == "ffprobe" and probe["exit_code"] == 0
    assert probe["is_error"] is False and "duration=12.48" in probe["output"]
    assert view["is_error"] is True and view.get("exit_code") is None
    assert whisper["exit_code"] == 127 and whisper["is_error"] is True and whisper["modality"] == "audio"
    assert finish["tool"] == "submit" and finish.get("output") is None
    assert t0["anomalies"] == ["call without result call_A4"]
    assert t0["final_answer"] == "The clip is 12.48 s long; I could not transcribe it."
    meta = json.loads(t0["metadata"])
    assert "resolved" not in meta and json.loads(meta["test_result"]) == {"report": {"resolved": False}}
    # legacy function_call + function message, `text` instead of `content`, numeric reward
    assert kinds(s1) == ["user", "reasoning", "tool_call", "assistant"]
    assert s1[2]["tool"] == "tesseract" and s1[2]["output"] == "OPEN 9 TO 5" and s1[2].get("call_id") is None
    assert t1["reward"] == 0.75 and t1["outcome"] == "failure" and t1["outcome_source"] == "reward"
    assert t1["native_id"] == "legacy-7"
    # developer role, unknown role, orphan tool result
    assert kinds(s4) == ["system", "system", "tool_result", "assistant"]
    assert s4[2]["call_id"] == "call_missing" and s4[2]["output"] == "42"
    assert t4["anomalies"] == [
        "message 1: unknown role 'critic' stored as system",
        "result without call call_missing",
    ]


def test_sharegpt_function_call_and_observation():
    [(t0, s0), (t1, s1)], _ = parse(FIX / "sharegpt.json")
    assert kinds(s0) == ["system", "user", "tool_call", "assistant"]
    call = s0[2]
    assert call["tool_name"] == "run_python" and call["output"] == "16000"
    assert "soundfile" in json.loads(call["arguments"])["code"]
    assert t0["outcome"] == "success" and t0["outcome_source"] == "is_correct" and t0["native_id"] == "sg-1"
    assert t1["outcome"] == "unknown" and kinds(s1) == ["user", "assistant"] and t1["task"] == "hi"


def test_nebius_swe_agent_rows_parse_fenced_commands():
    [(t, steps)], _ = parse(FIX / "nebius_rows.json")
    assert t["outcome"] == "failure" and t["outcome_source"] == "target" and t["exit_status"] == "submitted"
    assert t["harness"] == "swe-agent" and t["model"] == "swe-agent-llama-70b"
    assert kinds(steps) == [
        "system",
        "user",
        "assistant",
        "tool_call",
        "assistant",
        "tool_call",
        "assistant",
        "tool_call",
    ]
    search, pytest_call, submit = steps[3], steps[5], steps[7]
    assert search["tool_name"] == "search_dir" and search["output"].startswith("Found 3 matches")
    assert pytest_call["tool_name"] == "bash" and pytest_call["tool"] == "pytest"
    assert submit["tool"] == "submit" and submit.get("output") is None
    meta = json.loads(t["metadata"])
    assert meta["generated_patch"].startswith("diff --git") and meta["actions_parsed_from_text"] == 3


def test_swe_smith_function_xml_single_row():
    [(t, steps)], ctx = parse(FIX / "swe_smith_row.json")
    assert ctx.records_seen == 1 and t["source_locator"] is None
    assert t["native_id"] == "arrow__fmt.abc.lm_rewrite__x1.q9" and t["outcome"] == "success"
    calls = [s for s in steps if s["kind"] == "tool_call"]
    assert [c["tool_name"] for c in calls] == ["bash", "str_replace_editor", "submit"]
    assert json.loads(calls[0]["arguments"]) == {"command": 'grep -n "__format__" /testbed/arrow/arrow.py'}
    assert calls[0]["tool"] == "grep" and calls[0]["output"].startswith("OBSERVATION:\n791:")
    args = json.loads(calls[1]["arguments"])
    assert args["new_str"] == "    return self.format(formatstr)" and args["command"] == "str_replace"
    assert calls[1]["is_error"] is True
    assert t["final_answer"] == "Submitting."  # the call markup is not part of the answer


def test_harbor_traces_grouped_per_trial():
    out, ctx = parse(FIX / "run.traces.jsonl")
    assert ctx.records_seen == 4
    by = {t["source_locator"]: (t, s) for t, s in out}
    ta, sa = by["run=job-1;trial=hello-world__A"]
    assert ta["native_id"] == "job-1/hello-world__A" and ta["task_id"] == "hello-world"
    assert ta["outcome"] == "success" and ta["reward"] == 1.0 and ta["outcome_source"] == "result.reward"
    assert kinds(sa) == ["user", "reasoning", "assistant", "tool_call", "tool_call", "assistant"]
    echo, cat = sa[3], sa[4]
    assert echo["tool"] == "echo" and cat["tool"] == "cat" and "hi\n" in cat["output"]
    assert (
        echo.get("output") is None
        and json.loads(echo["metadata"])["output_on_step"] == "next call of the batch"
    )
    assert json.loads(sa[5]["metadata"]) == {"task_complete": True}
    assert json.loads(ta["metadata"])["episodes"] == ["episode-0", "episode-1"]
    tb, sb = by["run=job-1;trial=hello-world__B"]
    assert "episode-1 does not continue the previous episode" in tb["anomalies"]
    assert "compaction" in kinds(sb) and tb["outcome"] == "unknown"
    first_batch = [s for s in sb[: kinds(sb).index("compaction")] if s["kind"] == "tool_call"]
    assert [s.get("output") for s in first_batch] == [None, None]  # no observation before the reset
    assert sb[kinds(sb).index("compaction") + 1]["text"].startswith("Summary of previous work")


def test_bare_conversation_and_traj_json_not_claimed():
    [(t, steps)], _ = parse(FIX / "bare_conversation.json")
    assert kinds(steps) == ["system", "user", "reasoning", "assistant"]
    assert steps[1]["text"] == "What color is the car in \n[image]"
    assert (
        steps[2]["text"] == "The car looks red."
        and steps[3]["text"] == "Red."
        and t["final_answer"] == "Red."
    )
    p = FIX / "agent.traj.json"
    assert not get_adapter("chat-messages").sniff(p, head(p))


def test_sniff_rejects_non_message_json(tmp_path):
    a = get_adapter("chat-messages")
    cases = {
        "events.json": [{"id": 0, "source": "user", "action": "message", "args": {}}],
        "obj.json": {"steps": [{"step_id": 1}]},
        "rows.jsonl": None,
    }
    for name, data in cases.items():
        p = tmp_path / name
        if data is None:
            p.write_text(json.dumps({"prompt": "x", "completion": "y"}) + "\n")
        else:
            p.write_text(json.dumps(data))
        assert not a.sniff(p, head(p)), name
    big = tmp_path / "big.json"  # first row larger than the sniff head: found inside the row
    big.write_text(json.dumps([{"messages": [{"content": "x" * 200_000, "role": "user"}], "resolved": True}]))
    assert a.sniff(big, head(big))


@pytest.mark.corpus
def test_corpus_chat_messages(corpus_dir, tmp_path):
    src = corpus_dir / "chat_messages"
    files = sorted(src.glob("*.json"))
    for f in files:
        adapter, tried = detect(f, head(f))
        assert adapter is not None and adapter.name == "chat-messages", (f, tried)
    report = ingest([src], tmp_path / "lab", workers=1, progress=False)
    assert report.records_seen == report.records_ingested == 14
    lab = Lab.open(tmp_path / "lab")
    t = lab.read("trajectories").to_pylist()
    by_file: dict[str, list[dict]] = {}
    for r in t:
        by_file.setdefault(Path(r["source_path"]).name, []).append(r)
    gym = by_file["swe-gym_openhands_sampled_trajectories.sample_raw.json"]
    smith = by_file["swe-smith.sample_raw.json"]
    harbor = by_file["harbor-terminus2-hello-world-invalid-json.traces.json"]
    assert (len(gym), len(smith), len(harbor)) == (5, 5, 1)
    assert sum(r["n_steps"] for r in gym) == 144 and sum(r["n_tool_calls"] for r in gym) == 87
    assert sum(r["n_steps"] for r in smith) == 242 and sum(r["n_tool_calls"] for r in smith) == 116
    assert (harbor[0]["n_steps"], harbor[0]["n_tool_calls"]) == (12, 2)
    # the task inside the Terminus prompt, as the ATIF file of the same run gives it (not the 3 KB prompt)
    assert harbor[0]["task"].startswith('Create a file called hello.txt with "Hello, world!"')
    assert len(harbor[0]["task"]) < 100
    assert {r["outcome"] for r in gym + smith} == {"success"} and harbor[0]["outcome"] == "unknown"
    steps = lab.read("steps").to_pylist()
    tid_last = {}
    for s in steps:
        tid_last[s["trajectory_id"]] = max(tid_last.get(s["trajectory_id"], -1), s["step_index"])
    calls = [s for s in steps if s["kind"] == "tool_call"]
    unresolved = [c for c in calls if c["output"] is None]
    # every call found its result except the last step of a run: its closing finish/submit call,
    # or (one SWE-Gym row cut at its iteration limit) a call whose observation was never recorded
    assert all(c["step_index"] == tid_last[c["trajectory_id"]] for c in unresolved)
    assert len(unresolved) == 10 and sum(c["tool"] == "submit" for c in unresolved) == 9
    assert not [s for s in steps if s["kind"] == "tool_result"]


@pytest.mark.corpus
def test_corpus_sniff_claims_only_own_files(corpus_dir):
    """Sniff alone (priority aside) says yes to this format's corpus files and to nothing else."""
    claimed = claimed_by(corpus_dir, ["chat-messages"])
    assert claimed_folders(corpus_dir, claimed) == {"chat_messages"}
    assert len(claimed) == 3


@pytest.mark.parametrize(
    "name", ["openai_rows.jsonl", "run.traces.jsonl", "sharegpt.json", "nebius_rows.json"]
)
def test_wrong_types_never_break_a_file(tmp_path, name):
    check_wrong_types("chat-messages", FIX / name, tmp_path)
