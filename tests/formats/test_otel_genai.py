from __future__ import annotations

import json
from pathlib import Path

import pytest
from format_checks import check_wrong_types, claimed_by, claimed_folders, parse_detected

from trajlab.formats import ParseContext, detect, get_adapter, head
from trajlab.ingest import ingest
from trajlab.store import Lab

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "otel_genai"


def parse(path: Path) -> tuple[list[tuple[dict, list[dict]]], ParseContext]:
    return parse_detected(path, "otel-genai")


def kinds(steps: list[dict]) -> list[str]:
    return [s["kind"] for s in steps]


def test_otlp_semconv_agents_tools_and_dedup():
    out, ctx = parse(FIX / "otlp_agent.json")
    assert ctx.records_seen == 10 and ctx.records_ingested == 9
    [q] = ctx.quarantined
    assert q.error_type == "schema" and q.reason == "item 0: not a span (str)"
    [(t, steps)] = out  # the embeddings-only trace yields no trajectory
    assert (
        t["native_id"] == "5b8aa5a2d2c872e8321cf37308d69df2"
        and t["source_locator"] == f"trace={t['native_id']}"
    )
    assert t["runner"] == "otel_genai" and t["harness"] == "video-agent" and t["model"] == "gpt-4o-2024-08-06"
    # four chat spans re-send their history: every message appears once
    assert kinds(steps) == [
        "system",
        "user",
        "tool_call",
        "user",
        "assistant",
        "tool_call",
        "assistant",
        "assistant",
    ]
    assert steps[0]["text"] == "You answer questions about media files."
    delegate, sub_call = steps[2], steps[5]
    assert delegate["call_id"] == "c1" and delegate["output"] == "could not transcribe: whisper missing"
    assert delegate["duration_s"] == pytest.approx(9.5) and delegate["input_tokens"] == 120
    for s in steps[3:7]:
        assert s["agent_id"] == "transcriber" and s["depth"] == 1 and s["parent_step_index"] == 2
    assert (
        sub_call["tool"] == "whisper"
        and sub_call["is_error"] is True
        and sub_call["output"] == "whisper: not found"
    )
    assert sub_call["duration_s"] == pytest.approx(2.0)
    assert steps[7]["agent_id"] == "main" and steps[7]["text"] == "I could not transcribe talk.mp4."
    assert (t["input_tokens"], t["output_tokens"]) == (120 + 50 + 80 + 200, 30 + 12 + 9 + 15)
    assert (
        t["task"] == "What is said in talk.mp4?" and t["final_answer"] == "I could not transcribe talk.mp4."
    )
    assert t["duration_s"] == pytest.approx(20.0) and t["n_subagents"] == 1
    assert t["anomalies"] == ["span execute_tool run_shell failed: exit status 127"]
    meta = json.loads(t["metadata"])
    assert meta["conventions"] == ["gen_ai"] and meta["conversation_id"] == "conv-77" and meta["n_spans"] == 8


def test_openllmetry_jsonl():
    [(t, steps)], ctx = parse(FIX / "openllmetry.jsonl")
    assert ctx.records_seen == 4 and ctx.records_ingested == 2
    assert [(q.line, q.error_type) for q in ctx.quarantined] == [(2, "json"), (4, "schema")]
    assert kinds(steps) == ["system", "user", "tool_call", "assistant"]
    ocr = steps[2]
    assert (
        ocr["call_id"] == "call_ocr" and ocr["output"] == "EXIT ONLY"
    )  # from the next prompt's tool message
    assert json.loads(ocr["arguments"]) == {"image_path": "frame.png"}
    assert (t["input_tokens"], t["output_tokens"]) == (110, 19)
    assert t.get("harness") is None  # unknown_service:python is not a harness name
    assert json.loads(t["metadata"])["conventions"] == ["openllmetry"]


def test_openinference_console_exporter_objects():
    [(t, steps)], ctx = parse(FIX / "openinference_console.json")
    assert ctx.records_seen == 4 and not ctx.quarantined
    assert t["native_id"] == "1234567890abcdef1234567890abcdef"  # 0x prefix dropped
    assert kinds(steps) == ["user", "tool_call", "assistant"]
    call = steps[1]
    assert call["tool"] == "ffprobe" and call["output"] == "nb_read_frames=750" and call["duration_s"] == 2.0
    assert steps[2]["text"] == "750 frames."
    assert t["cost_usd"] == pytest.approx(0.003) and t["cached_tokens"] == 10
    assert t["harness"] == "oi-demo" and "span llm failed: error" in t["anomalies"]
    assert str(t["started_at"]) == "2025-07-01 09:00:00+00:00"


def test_vercel_inmemory_dump_uses_inner_calls_only():
    [(t, steps)], _ = parse(FIX / "vercel_inmemory.json")
    assert kinds(steps) == ["system", "user", "tool_call", "assistant"]
    view = steps[2]
    assert view["tool_name"] == "viewImage" and view["output"] == "a red car" and view["call_id"] == "tc_1"
    assert json.loads(view["arguments"]) == {"path": "photo.jpg"}
    # tokens of the two doGenerate spans only; the ai.generateText wrapper repeats their sum
    assert (t["input_tokens"], t["output_tokens"]) == (90, 14)
    assert json.loads(t["metadata"])["function_id"] == "describe"


def test_content_not_recorded_still_keeps_the_call(tmp_path):
    p = tmp_path / "spans.json"
    span = {
        "spanContext": {"traceId": "ab" * 16, "spanId": "cd" * 8},
        "name": "chat",
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": 7,
        },
        "startTime": [1, 0],
        "endTime": [2, 0],
    }
    p.write_text(json.dumps([span]))
    [(t, steps)], _ = parse(p)
    assert kinds(steps) == ["assistant"] and json.loads(steps[0]["metadata"]) == {
        "content_not_recorded": True
    }
    assert steps[0]["input_tokens"] == 7 and t["model"] == "m"


def test_openinference_text_part_that_is_not_a_string(tmp_path):
    # `message.contents` text parts are flattened like any content (a number used to fail the file)
    p = tmp_path / "spans.json"
    prefix = "llm.input_messages.0.message.contents"
    span = {
        "spanContext": {"traceId": "ab" * 16, "spanId": "cd" * 8},
        "name": "llm",
        "attributes": {
            "openinference.span.kind": "LLM",
            "llm.model_name": "m",
            "llm.input_messages.0.message.role": "user",
            f"{prefix}.0.message_content.type": "text",
            f"{prefix}.0.message_content.text": 42,
            f"{prefix}.1.message_content.type": "text",
            f"{prefix}.1.message_content.text": "frames?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "12",
        },
        "startTime": [1, 0],
        "endTime": [2, 0],
    }
    p.write_text(json.dumps([span]))
    [(_, steps)], ctx = parse(p)
    assert kinds(steps) == ["user", "assistant"] and not ctx.quarantined
    assert steps[0]["text"] == "42\nframes?" and steps[1]["text"] == "12"


def test_sniff():
    a = get_adapter("otel-genai")
    for f in FIX.iterdir():
        assert a.sniff(f, head(f)), f.name


@pytest.mark.corpus
def test_corpus_otel(corpus_dir, tmp_path):
    src = corpus_dir / "otel_genai"
    files = sorted(src.glob("*.json"))
    assert len(files) == 4
    for f in files:
        adapter, tried = detect(f, head(f))
        assert adapter is not None and adapter.name == "otel-genai", (f, tried)
    report = ingest([src], tmp_path / "lab", workers=1, progress=False)
    assert report.records_quarantined == 0 and report.records_seen == 14
    lab = Lab.open(tmp_path / "lab")
    t = lab.read("trajectories").to_pylist()
    by_file: dict[str, list[dict]] = {}
    for r in t:
        by_file.setdefault(Path(r["source_path"]).name, []).append(r)
    assert len(by_file["vercel-ai-v6.all-spans.json"]) == 8  # 10 traces, 2 of them embeddings only
    assert len(by_file["vercel-ai-v6.ai-generateText-doGenerate.json"]) == 2
    [chat] = by_file["openinference-genai.otel_genai_client_span_tool_calls.json"]
    [tool] = by_file["openinference-genai.otel_genai_tool_execution_span.json"]
    assert (chat["n_steps"], chat["n_tool_calls"], chat["input_tokens"], chat["output_tokens"]) == (
        4,
        1,
        97,
        52,
    )
    assert (tool["n_steps"], tool["n_tool_calls"]) == (1, 1)
    assert sum(r["n_steps"] for r in t) == 4 + 1 + 2 + 5 + (2 + 2 + 5 + 5 + 2 + 2 + 2 + 2)
    steps = lab.read("steps").to_pylist()
    calls = [s for s in steps if s["kind"] == "tool_call"]
    assert len(calls) == 2 and all(c["output"] for c in calls)  # each call found its result
    assert {c["call_id"] for c in calls} == {"1234"}


@pytest.mark.corpus
def test_corpus_sniff_claims_only_own_files(corpus_dir):
    """Sniff alone (priority aside) says yes to this format's corpus files and to nothing else."""
    claimed = claimed_by(corpus_dir, ["otel-genai"])
    assert claimed_folders(corpus_dir, claimed) == {"otel_genai"}
    assert len(claimed) == 4


@pytest.mark.parametrize("name", ["otlp_agent.json", "vercel_inmemory.json", "openllmetry.jsonl"])
def test_wrong_types_never_break_a_file(tmp_path, name):
    check_wrong_types("otel-genai", FIX / name, tmp_path)
