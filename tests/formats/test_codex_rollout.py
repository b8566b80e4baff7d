"""Codex CLI rollout adapter: a hand-written fixture with every tricky record kind, and the real samples."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from trajlab.formats import ParseContext, SourceUnit, detect, finish_trajectory, get_adapter, head
from trajlab.formats.codex_rollout import _split_any_header, split_exec_output
from trajlab.ingest import unit_digest

FIXTURE = "codex/rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-000000000001.jsonl"


def parse(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], ParseContext]:
    adapter = get_adapter("codex-rollout")
    unit = SourceUnit(primary=path, adapter=adapter.name)
    unit.digest = unit_digest(unit.files)
    ctx = ParseContext(unit, adapter.runner)
    (pt,) = list(adapter.parse(unit, ctx))
    t, steps = finish_trajectory(pt, unit, adapter.runner, adapter.name, datetime.now(timezone.utc))
    return t, steps, ctx


@pytest.fixture()
def fixture_run(fixtures_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]], ParseContext]:
    return parse(fixtures_dir / FIXTURE)


def test_detects_rollouts(fixtures_dir: Path) -> None:
    path = fixtures_dir / FIXTURE
    adapter, _ = detect(path, head(path))
    assert adapter is not None and adapter.name == "codex-rollout"


def test_trajectory_fields(fixture_run) -> None:
    t, _steps, ctx = fixture_run
    assert (ctx.records_seen, ctx.records_ingested, ctx.records_quarantined) == (41, 41, 0)
    assert (t["n_steps"], t["n_tool_calls"], t["n_errors"], t["n_subagents"]) == (15, 8, 1, 0)
    assert t["native_id"] == "0199aaaa-1111-7000-8000-000000000001"
    assert (t["model"], t["reasoning_effort"], t["runner_version"], t["harness"]) == (
        "gpt-5.5",
        "high",
        "0.125.0",
        "codex-cli",
    )
    assert t["task"] == "How many words are spoken in clip.mp4?"
    assert t["final_answer"] == "4"
    assert t["exit_status"] == "completed"
    assert t["outcome"] == "unknown"  # a rollout records no success signal
    # cumulative totals from the last token_count, not a sum of the duplicated events
    assert (t["input_tokens"], t["output_tokens"], t["cached_tokens"], t["total_tokens"]) == (
        9700,
        175,
        100,
        9875,
    )
    assert t["anomalies"] == []
    assert t["duration_s"] == pytest.approx(18.5)  # session start to the last step


def test_step_kinds_in_order(fixture_run) -> None:
    _, steps, _ = fixture_run
    assert [s["kind"] for s in steps] == [
        "system",  # base instructions
        "system",  # developer permissions
        "system",  # injected <environment_context>
        "user",  # the prompt (its user_message event copy is dropped)
        "reasoning",
        *["tool_call"] * 8,
        "assistant",  # commentary (agent_message copies dropped)
        "assistant",  # final answer
    ]
    assert [s["step_index"] for s in steps] == list(range(15))
    assert steps[4]["text"] == "Probe the video, then transcribe."


def test_parallel_calls_polls_and_exec_end(fixture_run) -> None:
    _, steps, _ = fixture_run
    probe, asr, poll1, poll2 = steps[5:9]
    assert (probe["call_id"], probe["tool"], probe["modality"], probe["exit_code"]) == (
        "call_probe",
        "ffprobe",
        "video",
        0,
    )
    assert probe["output"] == "12.480000\n"  # header stripped
    assert probe["duration_s"] == pytest.approx(0.25)
    # the still-running call gets the aggregated output and exit code of exec_command_end
    assert asr["output"] == "[00:00.000 --> 00:04.000] hello there general kenobi\n"
    assert (asr["exit_code"], asr["duration_s"], asr["tool"]) == (0, 9.0, "ffmpeg")
    assert asr["programs"] == ["ffmpeg", "whisper"] and asr["modality"] == "audio"
    assert orjson.loads(asr["metadata"]) == {"session_id": "777"}
    for poll in (poll1, poll2):
        assert (poll["tool_name"], poll["tool"], poll["modality"]) == ("write_stdin", "poll", "audio")
        assert orjson.loads(poll["metadata"]) == {"polls": "call_asr", "session_id": "777"}
    assert poll1["output"] == "" and poll1.get("exit_code") is None
    assert poll2["exit_code"] == 0 and poll2["output"].endswith("general kenobi\n")
    assert not any(s.get("is_error") for s in (probe, asr, poll1, poll2))


def test_failure_patch_search_and_shell_command(fixture_run) -> None:
    _, steps, _ = fixture_run
    fail, patch, search, ocr = steps[9:13]
    assert (fail["exit_code"], fail["is_error"], fail["tool"]) == (2, True, "python")
    assert fail["stderr"] == "python3: can't open file 'count_words.py'\n"
    assert fail["duration_s"] == pytest.approx(0.05)
    assert (patch["tool"], patch["modality"], patch["exit_code"], patch.get("is_error")) == (
        "apply_patch",
        "file",
        0,
        None,
    )
    assert orjson.loads(patch["metadata"]) == {"changes": ["/work/task/count_words.py"]}
    assert patch["output"].startswith("Success. Updated")
    assert (search["call_id"], search["tool"], search["modality"]) == ("ws_0001", "web_search", "web")
    assert orjson.loads(search["arguments"])["query"] == "general kenobi quote"
    assert (ocr["tool"], ocr["modality"], ocr["exit_code"], ocr["output"]) == (
        "tesseract",
        "image",
        0,
        "HELLO THERE\n",
    )


def test_tokens_once_per_model_call(fixture_run) -> None:
    _, steps, _ = fixture_run
    per_step = {
        s["step_index"]: (s["input_tokens"], s["output_tokens"]) for s in steps if s.get("input_tokens")
    }
    assert per_step == {
        6: (1000, 40),
        7: (1200, 10),
        8: (1300, 10),
        9: (1400, 20),
        10: (1500, 60),
        12: (1600, 30),
        14: (1700, 5),
    }
    assert sum(v[0] for v in per_step.values()) == 9700


def test_trimmed_rollout_uses_event_messages(tmp_path: Path) -> None:
    """Rollouts trimmed to assistant items still get their user prompts from user_message events."""
    lines = [
        {
            "timestamp": "2026-01-01T00:00:00Z",
            "type": "session_meta",
            "payload": {"id": "s1", "cli_version": "0.1"},
        },
        {
            "timestamp": "2026-01-01T00:00:01Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "hi"},
        },
        {
            "timestamp": "2026-01-01T00:00:02Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hello"}],
            },
        },
        {
            "timestamp": "2026-01-01T00:00:02Z",
            "type": "event_msg",
            "payload": {"type": "agent_message", "message": "hello"},
        },
    ]
    p = tmp_path / "rollout-x.jsonl"
    p.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    t, steps, _ = parse(p)
    assert [(s["kind"], s["text"]) for s in steps] == [("user", "hi"), ("assistant", "hello")]
    assert t["task"] == "hi" and t["final_answer"] == "hello"


def test_bad_lines_are_quarantined_with_line_and_offset(tmp_path: Path, fixtures_dir: Path) -> None:
    good = (fixtures_dir / FIXTURE).read_bytes().splitlines(keepends=True)
    data = [
        *good[:5],
        b'{"timestamp": "x", "type": "event_msg", "payload": 5}\n',
        b"[1, 2]\n",
        b"{oops\n",
        *good[5:],
    ]
    p = tmp_path / "rollout-bad.jsonl"
    p.write_bytes(b"".join(data))
    t, _steps, ctx = parse(p)
    assert (ctx.records_seen, ctx.records_ingested, ctx.records_quarantined) == (44, 41, 3)
    q = {x.line: x for x in ctx.quarantined}
    assert set(q) == {6, 7, 8}
    assert q[8].error_type == "json" and q[8].byte_offset == sum(len(x) for x in data[:7])
    assert "line 8" in q[8].reason and "rollout-bad.jsonl" in q[8].reason
    assert q[6].error_type == "schema" and "payload" in q[6].reason
    assert t["n_steps"] == 15


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Chunk ID: a\nWall time: 1.5 seconds\nProcess exited with code 3\nOriginal token count: 2\nOutput:\nboom",
            ("boom", 3, 1.5, None),
        ),
        (
            "Chunk ID: a\nWall time: 1.0 seconds\nProcess running with session ID 9\nOutput:\n",
            ("", None, 1.0, "9"),
        ),
        ("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nx", ("x", 1, 0.2, None)),
        ("plain text", ("plain text", None, None, None)),
    ],
)
def test_split_exec_output(text: str, expected: tuple) -> None:
    assert split_exec_output(text) == expected


def _outcome(f: Any, text: str) -> Any:
    try:
        return f(text)
    except ValueError as e:  # `Wall time: .` fails alike on both paths
        return type(e)


@pytest.mark.parametrize(
    "text",
    [
        "Chunk ID: a1\nWall time: 1.0021 seconds\nProcess running with session ID 51202\nOriginal token count: 0\nOutput:\n",
        "Chunk ID: a1\nWall time: 2.5 seconds\nProcess exited with code -3\nOriginal token count: 9\nOutput:\nbody\nExit code: 4\n",
        "Chunk ID: a\nWall time: \u0661.5 s\nProcess exited with code \u0663\nOriginal token count: 0\nOutput:\n",
        "Chunk ID: a\nWall time: 1.2.3\nProcess running with session ID x\r\nOriginal token count: 0\nOutput:\n",
        "Chunk ID: a\nWall time: .\nProcess exited with code 1\nOriginal token count: 0\nOutput:\n",
        "Chunk ID: a\nWall time: 1\nProcess exited with code -\nOriginal token count: 0\nOutput:\n",
        "Chunk ID: a\nWall time: 1\nProcess exited with code 2\nOriginal token count: 0\n",
        "Exit code: 0\nWall time: 0.5 seconds\nOutput:\nok\n",
        "Exit code: -3x\nWall time: 7 s\nOutput:\n",
        "Exit code: 3\nWall time: x\nOutput:\n",
    ],
)
def test_split_exec_output_common_headers_read_as_any_header(text: str) -> None:
    """The one-regex path for the two usual headers gives what the general header reader gives."""
    assert _outcome(split_exec_output, text) == _outcome(_split_any_header, text)


# -- the real samples ----------------------------------------------------------------------------------

# file stem prefix -> (records, steps, tool calls, errors, user prompts, final answer start)
CORPUS = {
    "rollout-2026-05-11T11-26-55": (386, 148, 105, 5, 2, "Implemented the default context compaction"),
    "rollout-2026-05-11T13-28-45": (99, 61, 38, 1, 3, "I couldn’t directly inspect"),
}


@pytest.mark.corpus
@pytest.mark.parametrize("prefix", sorted(CORPUS))
def test_corpus_rollouts(corpus_dir: Path, prefix: str) -> None:
    (path,) = sorted((corpus_dir / "codex").glob(prefix + "*.jsonl"))
    t, steps, ctx = parse(path)
    records, n_steps, n_calls, n_errors, n_user, final = CORPUS[prefix]
    assert (ctx.records_seen, ctx.records_quarantined) == (records, 0)
    assert (t["n_steps"], t["n_tool_calls"], t["n_errors"]) == (n_steps, n_calls, n_errors)
    assert sum(s["kind"] == "user" for s in steps) == n_user
    assert t["final_answer"].startswith(final)
    assert t["native_id"] == path.stem[-36:]  # the file name carries the session id
    # every call found its result (output item, exec_command_end, or a logged web search)
    assert t["anomalies"] == []
    calls = [s for s in steps if s["kind"] == "tool_call"]
    assert all(s["call_id"] for s in calls)
    assert len({s["call_id"] for s in calls}) == len(calls)
    assert all(s["tool"] for s in calls)
    no_output = [s["call_id"] for s in calls if s.get("output") is None and s["tool"] != "web_search"]
    assert no_output == []


@pytest.mark.corpus
def test_corpus_unified_exec_details(corpus_dir: Path) -> None:
    (path,) = sorted((corpus_dir / "codex").glob("rollout-2026-05-11T11-26-55*.jsonl"))
    t, steps, _ = parse(path)
    calls = [s for s in steps if s["kind"] == "tool_call"]
    by_tool: dict[str, int] = {}
    for s in calls:
        by_tool[s["tool_name"]] = by_tool.get(s["tool_name"], 0) + 1
    assert by_tool == {
        "exec_command": 43,
        "write_stdin": 54,
        "apply_patch": 3,
        "web_search": 3,
        "update_plan": 2,
    }
    polls = [s for s in calls if s["tool"] == "poll"]
    assert polls and all(orjson.loads(s["metadata"])["polls"].startswith("call_") for s in polls)
    assert (t["model"], t["input_tokens"], t["output_tokens"]) == ("gpt-5.5", 6055836, 9118)
    # no harness header is left in any output
    assert not any((s.get("output") or "").startswith("Chunk ID:") for s in calls)
    # a failing command polled to its end: the command carries the error, the poll the exit code
    failed = [s for s in calls if s.get("is_error") and s["tool_name"] == "exec_command"]
    assert len(failed) == 4 and sorted(s["exit_code"] for s in failed) == [1, 1, 1, 2]
    # and a write_stdin the harness refused ("write_stdin failed: stdin is closed for this session")
    refused = [s for s in calls if s.get("is_error") and s["tool_name"] != "exec_command"]
    assert [(s["tool_name"], s.get("exit_code")) for s in refused] == [("write_stdin", None)]
    assert refused[0]["output"].startswith("write_stdin failed: stdin is closed")


def test_a_tool_that_failed_without_running_a_command_is_an_error(tmp_path: Path) -> None:
    """Codex answers a call it could not carry out with `<tool> failed: why` and no exit-code header
    (`write_stdin failed: stdin is closed for this session`, in the corpus): the call failed."""

    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item", "payload": payload}

    call = {"type": "function_call", "name": "write_stdin"}
    lines = [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s1"}},
        item({**call, "call_id": "c1", "arguments": '{"session_id": 7, "chars": "y\\n"}'}),
        item(
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true",
            }
        ),
        item({**call, "call_id": "c2", "arguments": '{"session_id": 7, "chars": "n\\n"}'}),
        item({"type": "function_call_output", "call_id": "c2", "output": "the job failed: see log"}),
    ]
    p = tmp_path / "rollout-x.jsonl"
    p.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    _, steps, _ = parse(p)
    failed, other = (s for s in steps if s["kind"] == "tool_call")
    assert failed["is_error"] is True and failed.get("exit_code") is None
    assert not other.get("is_error")  # a program's own words, not the harness's
