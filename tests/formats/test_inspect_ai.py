from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from format_checks import check_wrong_types, claimed_by, claimed_folders, parse_detected

from trajlab.formats import ParseContext, detect, get_adapter, head
from trajlab.formats.inspect_ai import SCORER_ENV
from trajlab.ingest import ingest
from trajlab.store import Lab

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "inspect_ai"
LOG = json.loads((FIX / "omni_eval_log.json").read_text())


def parse(path: Path, name: str) -> tuple[list[tuple[dict, list[dict]]], ParseContext]:
    return parse_detected(path, name)


def write_eval(path: Path, samples: list, extra: dict[str, bytes] | None = None) -> Path:
    header = {k: v for k, v in LOG.items() if k != "samples"}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("_journal/start.json", json.dumps({"version": 2, "eval": header["eval"]}))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        for name, data in (extra or {}).items():
            z.writestr(name, data)
        z.writestr("header.json", json.dumps(header))
    return path


def check_sample_v1(t: dict, steps: list[dict]) -> None:
    assert t["source_locator"] == "sample=v1;epoch=1" and t["native_id"] == "SmplUUIDv1e1"
    assert t["runner"] == "inspect_ai" and t["harness"] == "inspect-ai" and t["runner_version"] == "0.3.130"
    assert (
        t["task"] == "How many people speak in /task/clip.mp4? Answer with a number."
    )  # attachment resolved
    assert t["task_id"] == "v1" and t["benchmark"] == "omni-video" and t["model"] == "openai/gpt-4o"
    assert t["expected_answer"] == "41" and t["final_answer"] == "ANSWER: 42"
    # first scorer of the eval spec decides: match = I
    assert t["outcome"] == "failure" and t["reward"] == 0.0 and t["outcome_source"] == "scores.match"
    assert (t["input_tokens"], t["output_tokens"], t["cached_tokens"], t["reasoning_tokens"]) == (
        1000,
        200,
        300,
        50,
    )
    assert t["duration_s"] == 47.5
    assert [s["kind"] for s in steps] == [
        "system",
        "user",
        "reasoning",
        "assistant",
        "tool_call",
        "tool_call",
        "assistant",
        "tool_call",
        "assistant",
    ]
    assert steps[1]["text"].endswith("\n[image]")
    assert steps[2]["text"] == "First probe the video." and steps[2]["input_tokens"] == 400
    assert steps[2]["duration_s"] == 1.5 and steps[2]["model"] == "gpt-4o-2024-08-06"
    probe, py, whisper = steps[4], steps[5], steps[7]
    assert probe["call_id"] == "call_1" and probe["tool"] == "ffprobe" and probe["exit_code"] == 0
    assert (
        probe["duration_s"] == 0.8
        and probe["output"].endswith("duration=30.0")
        and probe["is_error"] is False
    )
    assert str(probe["timestamp"]) == "2025-06-01 10:00:03+00:00"
    assert py["is_error"] is True and py["timed_out"] is True and py["exit_code"] == 124
    assert py["output"] == "Command timed out before completing." and py["input_tokens"] == 300
    assert json.loads(py["metadata"])["error_type"] == "timeout"
    # nested `transcriber` agent span; the tool-support probe does not hide the real exit code
    assert steps[6]["agent_id"] == "transcriber" and steps[6]["depth"] == 1
    assert (
        whisper["agent_id"] == "transcriber" and whisper["exit_code"] == 127 and whisper["is_error"] is True
    )
    assert t["n_subagents"] == 1 and t["n_tool_calls"] == 3 and t["n_errors"] == 2
    meta = json.loads(t["metadata"])
    assert meta["scores"] == {"match": "I", "model_graded_qa": "C"} and meta["epoch"] == 1
    assert (
        meta["score_explanation"] == "42 != 41"
        and meta["sandbox"] == "docker"
        and meta["solvers"] == ["react"]
    )
    assert t["anomalies"] == []


def check_others(out: list[tuple[dict, list[dict]]]) -> None:
    by = {t["source_locator"]: (t, s) for t, s in out}
    t2, s2 = by["sample=v1;epoch=2"]
    assert [s["kind"] for s in s2] == ["user", "assistant"]
    assert (
        t2["outcome"] == "success"
        and t2["reward"] == 1.0
        and t2["trajectory_id"] != by["sample=v1;epoch=1"][0]["trajectory_id"]
    )
    assert (t2["input_tokens"], t2["output_tokens"]) == (
        10,
        3,
    )  # from the model event when model_usage is empty
    t3, s3 = by["sample=2;epoch=1"]
    assert t3["outcome"] == "unknown" and t3["exit_status"] == "error"
    assert t3["error"] == "RuntimeError: sandbox container exited" and t3["task"] == "Transcribe speech.wav"
    assert [s["kind"] for s in s3] == ["user", "reasoning"] and s3[1]["text"] == "[redacted reasoning]"
    t4, s4 = by["sample=3;epoch=1"]
    assert "messages rebuilt from the last model event (message_pool)" in t4["anomalies"]
    assert [s["kind"] for s in s4] == ["user", "tool_call", "assistant"]
    assert s4[1]["output"] == "a.txt" and s4[2]["text"] == "7" and t4["exit_status"] == "limit:message"
    assert t4["outcome"] == "success" and t4["reward"] == 1.0


def test_json_eval_log():
    out, ctx = parse(FIX / "omni_eval_log.json", "inspect-json")
    assert ctx.records_seen == 6 and ctx.records_ingested == 5
    [q] = ctx.quarantined
    assert q.line == 4 and q.error_type == "schema" and q.reason == "samples[4]: expected an object"
    assert len(out) == 4
    check_sample_v1(*out[0])
    check_others(out)


def test_eval_zip_streams_samples_and_quarantines_bad_entries(tmp_path):
    samples = [s for s in LOG["samples"] if isinstance(s, dict)]
    p = write_eval(tmp_path / "run.eval", samples, {"samples/9_epoch_1.json": b'{"id": 9, "epoch": 1, "mess'})
    out, ctx = parse(p, "inspect-eval")
    assert ctx.records_seen == 6 and ctx.records_ingested == 5
    [q] = ctx.quarantined
    assert q.error_type == "truncated" and q.reason.startswith("samples/9_epoch_1.json: not valid JSON")
    # samples are read in epoch then natural id order
    assert [t["source_locator"] for t, _ in out] == [
        "sample=2;epoch=1",
        "sample=3;epoch=1",
        "sample=v1;epoch=1",
        "sample=v1;epoch=2",
    ]
    check_sample_v1(*out[2])
    check_others(out)


def test_eval_in_progress_uses_journal_start(tmp_path):
    p = tmp_path / "partial.eval"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr(
            "_journal/start.json", json.dumps({"version": 2, "eval": LOG["eval"], "plan": LOG["plan"]})
        )
        z.writestr("samples/v1_epoch_2.json", json.dumps(LOG["samples"][1]))
    [(t, _)], ctx = parse(p, "inspect-eval")
    assert t["outcome"] == "success" and "eval log status is 'started'" in t["anomalies"]
    assert ctx.records_seen == 2


def test_truncated_zip_is_quarantined(tmp_path):
    good = write_eval(tmp_path / "a.eval", [LOG["samples"][1]])
    bad = tmp_path / "b.eval"
    bad.write_bytes(good.read_bytes()[:300])
    out, ctx = parse(bad, "inspect-eval")
    assert out == [] and [q.error_type for q in ctx.quarantined] == ["truncated"]


def test_scorer_can_be_chosen(monkeypatch):
    monkeypatch.setenv(SCORER_ENV, "model_graded_qa")
    out, _ = parse(FIX / "omni_eval_log.json", "inspect-json")
    t = out[0][0]
    assert t["outcome"] == "success" and t["outcome_source"] == "scores.model_graded_qa"
    monkeypatch.setenv(SCORER_ENV, "nope")
    t = parse(FIX / "omni_eval_log.json", "inspect-json")[0][0][0]
    assert t["outcome_source"] == "scores.match"
    assert "scorer 'nope' (TRAJLAB_INSPECT_SCORER) not in this sample's scores" in t["anomalies"]


@pytest.mark.parametrize(
    ("value", "reward", "outcome"),
    [
        ("P", 0.5, "failure"),
        ("N", 0.0, "failure"),
        (0.9, 0.9, "failure"),
        (True, 1.0, "success"),
        ("1", 1.0, "success"),
    ],
)
def test_score_values(tmp_path, value, reward, outcome):
    log = {**LOG, "samples": [{**LOG["samples"][1], "scores": {"match": {"value": value}}}]}
    p = tmp_path / "log.json"
    p.write_text(json.dumps(log, indent=1))
    [(t, _)], _ = parse(p, "inspect-json")
    assert t["reward"] == reward and t["outcome"] == outcome


def test_a_scorers_grader_calls_are_not_the_agents_tokens(tmp_path):
    """`model_graded_fact` asks a grader model inside the `scorer` span; `sample.model_usage` counts that
    call too (the corpus's security-guide log: 320/309 tokens for an agent that used 61/17)."""
    s0 = LOG["samples"][0]
    grader = {"input_tokens": 259, "output_tokens": 292, "total_tokens": 551}
    events = [
        *s0["events"],
        {"event": "span_begin", "id": "s_score", "type": "scorer", "name": "model_graded_fact"},
        {"event": "span_begin", "id": "s_inner", "parent_id": "s_score", "type": "solver", "name": "grade"},
        {"event": "model", "span_id": "s_inner", "output": {"usage": grader}},
    ]
    usage = {m: {**u, "input_tokens": u["input_tokens"] + 259, "output_tokens": u["output_tokens"] + 292,
                 "total_tokens": u["total_tokens"] + 551} for m, u in s0["model_usage"].items()}  # fmt: skip
    log = {**LOG, "samples": [{**s0, "events": events, "model_usage": usage}]}
    p = tmp_path / "log.json"
    p.write_text(json.dumps(log, indent=1))
    [(t, steps)], _ = parse(p, "inspect-json")
    assert (t["input_tokens"], t["output_tokens"], t["total_tokens"]) == (1000, 200, 1200)  # the agent's
    meta = t["metadata"] if isinstance(t["metadata"], dict) else json.loads(t["metadata"])
    assert meta["scorer_tokens"] == {"input_tokens": 259, "output_tokens": 292}
    assert sum(s.get("output_tokens") or 0 for s in steps) <= t["output_tokens"]


def test_sniff():
    j = get_adapter("inspect-json")
    e = get_adapter("inspect-eval")
    p = FIX / "omni_eval_log.json"
    assert j.sniff(p, head(p)) and not e.sniff(p, head(p))


@pytest.mark.corpus
def test_corpus_inspect(corpus_dir, tmp_path):
    src = corpus_dir / "inspect_ai"
    files = sorted([*src.glob("*.eval"), *src.glob("*.json")])
    assert len(files) == 5
    for f in files:
        adapter, tried = detect(f, head(f))
        assert adapter is not None and adapter.name.startswith("inspect-"), (f, tried)
    report = ingest([src], tmp_path / "lab", workers=1, progress=False)
    assert report.records_quarantined == 0 and report.records_seen == 21
    lab = Lab.open(tmp_path / "lab")
    t = lab.read("trajectories").to_pylist()
    by_file: dict[str, list[dict]] = {}
    for r in t:
        by_file.setdefault(Path(r["source_path"]).name, []).append(r)
    pop = by_file["2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"]
    assert len(pop) == 10 and sum(r["outcome"] == "success" for r in pop) == 8  # accuracy 0.8
    assert {r["n_steps"] for r in pop} == {3}
    [dedup] = by_file["log_message_deduplication.eval"]
    assert (dedup["n_steps"], dedup["n_tool_calls"], dedup["outcome"]) == (12, 5, "failure")
    [browser] = by_file["2025-05-12T20-27-36-04-00_browser.json"]
    assert (browser["n_steps"], browser["n_tool_calls"], browser["input_tokens"]) == (6, 4, 15235)
    guide = by_file["2025-05-12T20-28-26-04-00_security-guide.json"]
    assert len(guide) == 3 and {r["outcome"] for r in guide} == {"success"}
    # model_graded_fact's grader calls are not the agent's: 61/17 tokens, not 320/309
    by_native = {r["native_id"]: r for r in guide}
    assert (
        by_native["jejv2PukU7Xq5AJrutaZi7"]["input_tokens"],
        by_native["jejv2PukU7Xq5AJrutaZi7"]["output_tokens"],
    ) == (61, 17)
    [err] = by_file["log_tool_call_error.json"]
    assert (err["n_steps"], err["n_tool_calls"], err["n_errors"]) == (11, 0, 11)
    assert err["source_locator"] == "sample=1;epoch=4"
    steps = lab.read("steps").to_pylist()
    calls = [s for s in steps if s["kind"] == "tool_call"]
    assert len(calls) == 9 and all(c["output"] for c in calls)  # every call found its tool message
    assert {c["tool"] for c in calls} == {"ls", "browser"}  # Inspect's web_browser_go, web_browser_click
    orphans = [s for s in steps if s["kind"] == "tool_result"]
    assert len(orphans) == 11 and all(s["is_error"] for s in orphans)  # the error log has results only


@pytest.mark.corpus
def test_corpus_sniff_claims_only_own_files(corpus_dir):
    """Sniff alone (priority aside) says yes to this format's corpus files and to nothing else."""
    claimed = claimed_by(corpus_dir, ["inspect-eval", "inspect-json"])
    assert claimed_folders(corpus_dir, claimed) == {"inspect_ai"}
    assert len(claimed) == 5


@pytest.mark.parametrize("name", ["omni_eval_log.json"])
def test_wrong_types_never_break_a_file(tmp_path, name):
    check_wrong_types("inspect-json", FIX / name, tmp_path)


def test_unnamed_score_without_a_value_does_not_fail_the_file(tmp_path):
    # a scorer named "" with no numeric value: no outcome source, so no score explanation either
    # (this used to index the missing source and fail the whole log)
    scores = {"": {"value": {"a": 1}, "explanation": "why"}}
    log = {**LOG, "samples": [{**LOG["samples"][1], "scores": scores}]}
    p = tmp_path / "log.json"
    p.write_text(json.dumps(log, indent=1))
    [(t, _)], ctx = parse(p, "inspect-json")
    assert t["outcome"] == "unknown" and t["outcome_source"] is None and not ctx.quarantined
    assert "score_explanation" not in json.loads(t["metadata"])
