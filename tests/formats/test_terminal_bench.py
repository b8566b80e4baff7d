from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from format_checks import parse_tree

from trajlab.formats.terminal_bench import strip_ansi
from trajlab.ingest import ingest
from trajlab.store import Lab, query

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "terminal_bench" / "runs"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
RUN = "2025-04-01__09-00-00"
HELLO = f"{RUN}/hello-world/hello-world.1-of-1.{RUN}/results.json"
FRAMES = f"{RUN}/count-frames/count-frames.1-of-1.{RUN}/results.json"


@pytest.fixture(scope="module")
def parsed():
    return parse_tree(FIX)


def test_units(parsed):
    disc, units = parsed
    assert not disc.unknown
    # the run-level results.json is a companion when trial folders exist, a unit of its own otherwise
    assert sorted(units) == [FRAMES, HELLO, "2025-04-02__lonely/results.json"]
    claimed = {p.name for u, _, _ in units.values() for p in u.companions}
    assert {
        "commands.txt",
        "agent.cast",
        "agent.log",
        "post-test.txt",
        "run_metadata.json",
        "results.json",
    } <= claimed


def test_cast_alignment_and_outcome(parsed):
    _, units = parsed
    _, ctx, [(t, steps)] = units[HELLO]
    # results.json + 11 command lines + 19 cast lines; one bad command line, one bad cast line
    assert (ctx.records_seen, ctx.records_ingested, ctx.records_quarantined) == (31, 29, 2)
    assert sorted(q.line for q in ctx.quarantined) == [6, 19]
    assert (t["runner"], t["harness"], t["model"], t["benchmark"]) == (
        "terminal_bench",
        "terminus",
        "openai/gpt-4.1",
        "terminal-bench-core",
    )
    assert (t["outcome"], t["reward"], t["outcome_source"]) == ("success", 1.0, "results.json:is_resolved")
    assert (t["input_tokens"], t["output_tokens"], t["task_id"]) == (1500, 200, "hello-world")
    assert (t["n_steps"], t["n_tool_calls"], t["n_errors"]) == (7, 5, 0)
    calls = [s for s in steps if s["kind"] == "tool_call"]
    assert [s.get("command") for s in calls] == [
        "asciinema rec --stdin /logs/agent.cast",
        "clear",
        "ls -la",
        "echo 'Hello, world!' > hello.txt",
        "cat hello.txt",
    ]
    assert [s["role"] for s in calls] == ["harness", "harness", "assistant", "assistant", "assistant"]
    ls = calls[2]
    assert ls["output"] == "total 8\ndrwxr-xr-x 2 root root 4096 Apr  1 09:00 ."
    assert ls["timestamp"] == datetime(2025, 4, 1, 9, 0, 6, tzinfo=timezone.utc)
    assert ls["duration_s"] == pytest.approx(1.0)
    assert calls[4]["output"] == "Hello, world!" and calls[3]["output"] == ""
    assert json.loads(ls["arguments"]) == {"keys": ["ls -la\n"], "command": "ls -la"}
    verifier = steps[-1]
    assert (verifier["kind"], verifier["role"], verifier["is_error"]) == ("system", "verifier", False)
    assert "2 passed" in verifier["text"] and "test_hello_file_content: passed" in verifier["text"]
    assert json.loads(verifier["metadata"])["commands"][2] == ["bash ", "/tests/run-tests.sh", "Enter"]


def test_log_alignment_failure_mode_and_control_keys(parsed):
    _, units = parsed
    _, ctx, [(t, steps)] = units[FRAMES]
    assert ctx.records_quarantined == 0
    assert (t["outcome"], t["exit_status"]) == ("failure", "agent_timeout")
    calls = [s for s in steps if s["kind"] == "tool_call"]
    probe, count, ctrl_c = calls[2], calls[3], calls[4]
    assert (probe["tool"], probe["exit_code"], probe["is_error"]) == ("ffprobe", 127, True)
    assert probe["output"] == "bash: ffprobe: command not found"
    # carriage-return progress lines keep their last state
    assert count["output"] == "frame 300\n^C\nKeyboardInterrupt"
    assert (ctrl_c["tool"], ctrl_c.get("command"), json.loads(ctrl_c["arguments"])) == (
        "terminal_keys",
        None,
        {"keys": ["C-c"]},
    )
    assert steps[-1]["is_error"] is True and "test_count: failed" in steps[-1]["text"]


def test_run_level_results_without_trials(parsed):
    _, units = parsed
    _, ctx, rows = units["2025-04-02__lonely/results.json"]
    assert (ctx.records_seen, ctx.records_quarantined) == (3, 2)
    # the quarantined element is kept as the JSON it was (a string with its quotes, not bare text)
    bad = next(q for q in ctx.quarantined if q.reason.startswith("results[1]"))
    assert bad.raw == b'"garbage"'
    [(t, steps)] = rows
    assert (t["harness"], t["outcome"], t.get("input_tokens")) == ("claude-code", "success", None)
    assert [s["kind"] for s in steps] == ["user"]
    assert t["source_locator"] == "trial=0"


def test_commands_txt_is_never_executed(tmp_path: Path):
    trial = tmp_path / "run" / "t" / "t.1-of-1.run"
    trial.mkdir(parents=True)
    (trial / "results.json").write_text(
        json.dumps(
            {
                "id": "i",
                "trial_name": "t.1-of-1.run",
                "task_id": "t",
                "is_resolved": None,
                "failure_mode": "unset",
            }
        )
    )
    marker = tmp_path / "PWNED"
    (trial / "commands.txt").write_text(
        f"__import__('os').system('touch {marker}')\n['ls', 'Enter']\n{{'a': 1}}\n"
    )
    _, units = parse_tree(tmp_path)
    _, ctx, [(t, steps)] = units["run/t/t.1-of-1.run/results.json"]
    assert not marker.exists()
    assert [(q.line, q.error_type) for q in ctx.quarantined] == [(1, "schema"), (3, "schema")]
    assert [s.get("command") for s in steps if s["kind"] == "tool_call"] == ["ls"]
    assert (
        t["outcome"] == "unknown"
        and "no sessions/agent.cast or agent.log: keystroke outputs unknown" in t["anomalies"]
    )


def test_strip_ansi_applies_carriage_returns():
    assert strip_ansi("\x1b[01;34mdir\x1b[0m\r\n0%\r50%\r100%\n") == "dir\n100%\n"


@pytest.mark.corpus
def test_corpus_terminal_bench(corpus_dir: Path, tmp_path: Path):
    rep = ingest([corpus_dir / "terminal_bench_tb1"], tmp_path / "lab", workers=1, progress=False)
    assert not rep.unknown
    r = rep.runners["terminal_bench"]
    assert (r.files, r.trajectories, r.steps, r.tool_calls, r.records_quarantined) == (2, 2, 14, 10, 0)
    lab = Lab.open(tmp_path / "lab")
    rows = query(
        lab,
        "select task_id, outcome, model, harness, n_tool_calls from trajectories order by task_id",
        as_="polars",
    ).rows()
    assert rows == [
        ("extract-safely", "failure", "anthropic/claude-sonnet-4-0", "mini-swe-agent", 5),
        ("hello-world", "success", "anthropic/claude-sonnet-4-0", "mini-swe-agent", 5),
    ]
    # keystrokes have no ids: outputs come from the asciinema recording where there is one
    got = query(
        lab,
        "select t.task_id, count(*) filter (where s.output is not null) from steps s join trajectories t "
        "using (trajectory_id) where s.kind = 'tool_call' group by 1 order by 1",
    ).to_pylist()
    assert [tuple(d.values()) for d in got] == [("extract-safely", 4), ("hello-world", 0)]
    miss = query(lab, "select output, exit_code from steps where command like 'mini %'").to_pylist()
    assert {"output": "bash: mini: command not found", "exit_code": 127} in miss
