from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from format_checks import parse_tree

from trajlab.formats import get_adapter
from trajlab.ingest import discover, ingest
from trajlab.store import Lab, query

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "atif"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
TRIAL = "jobs/job-2025-03-01__10-00/audio-count__a1b2c3d"


@pytest.fixture(scope="module")
def parsed():
    return parse_tree(FIX)


def test_units_and_companions(parsed):
    disc, units = parsed
    assert not disc.unknown
    assert sorted(units) == [
        f"{TRIAL}/agent/trajectory.json",
        "jobs/job-2025-03-01__10-00/video-frames__e5f6a7b/result.json",
        "malformed/badstep.trajectory.json",
        "malformed/truncated.trajectory.json",
    ]
    u, _, _ = units[f"{TRIAL}/agent/trajectory.json"]
    assert {p.name for p in u.companions} == {
        "trajectory.cont-1.json",
        "trajectory.summarization-1-summary.json",
        "result.json",
        "reward.txt",
        "config.json",
        "debug.json",
    }


def test_trial_merges_continuation_subagent_and_reward(parsed):
    _, units = parsed
    _, ctx, rows = units[f"{TRIAL}/agent/trajectory.json"]
    assert ctx.records_seen == 14 and ctx.records_quarantined == 0  # 4 + 4 + 5 steps + result.json
    [(t, steps)] = rows
    assert (t["runner"], t["format"], t["harness"], t["model"]) == (
        "atif",
        "atif",
        "terminus-2",
        "openai/gpt-5",
    )
    assert (t["outcome"], t["reward"], t["task_id"], t["benchmark"]) == (
        "success",
        1.0,
        "audio-count",
        "omni-bench",
    )
    assert t["outcome_source"] == "result.json:verifier_result.rewards.reward"
    assert t["task"] == "Count the beeps in /app/beeps.wav and write the number to /app/answer.txt."
    assert t["reasoning_effort"] == "high"
    # final_metrics of the last segment are the run totals (cumulative, sub-agent included)
    assert (t["input_tokens"], t["output_tokens"], t["cached_tokens"], t["cost_usd"]) == (
        4300,
        370,
        1100,
        0.016,
    )
    assert (t["n_steps"], t["n_tool_calls"], t["n_subagents"], t["n_errors"]) == (18, 6, 1, 2)
    assert t["started_at"] == datetime(2025, 3, 1, 9, 59, 50, tzinfo=timezone.utc)
    assert sorted(t["anomalies"]) == ["call without result call_x", "result without call call_ghost"]
    kinds = [s["kind"] for s in steps]
    assert kinds.count("compaction") == 1
    # copied-context steps of the continuation and the sub-agent are dropped
    assert sum(1 for s in steps if s.get("text") == "Probed beeps.wav (12 s); count.py printed 7.") == 1
    comp = kinds.index("compaction")
    sub = [s for s in steps if s["agent_id"] != "main"]
    assert [s["kind"] for s in sub] == ["user", "assistant"]
    assert all(s["parent_step_index"] == comp and s["depth"] == 1 for s in sub)
    assert sub[1]["input_tokens"] == 500


def test_terminus_batch_output_goes_to_last_command(parsed):
    _, units = parsed
    [(_, steps)] = units[f"{TRIAL}/agent/trajectory.json"][2]
    by_id = {s["call_id"]: s for s in steps if s["kind"] == "tool_call"}
    probe, count = by_id["call_0_1"], by_id["call_0_2"]
    assert probe["tool"] == "ffprobe" and probe["modality"] == "audio"
    assert probe.get("output") is None and json.loads(probe["metadata"])["output_shared_with"] == "call_0_2"
    assert count["output"].endswith("7\n") and count["command"] == "python3 count.py /app/beeps.wav"
    assert by_id["call_c"]["exit_code"] == 2 and by_id["call_c"]["is_error"] is True
    assert by_id["call_w"]["output"] == "" and by_id["call_w"].get("exit_code") is None
    assert by_id["call_x"]["tool"] == "image_read" and by_id["call_x"].get("output") is None
    # the parse-error feedback with no call is an environment message flagged as an error
    env = [s for s in steps if s.get("role") == "environment"]
    assert (
        len(env) == 1
        and env[0]["is_error"]
        and env[0]["text"].startswith("Previous response had parsing errors")
    )
    # tokens of one model call land on its first step (reasoning here)
    first = steps[1]
    assert first["kind"] == "reasoning" and (
        first["input_tokens"],
        first["output_tokens"],
        first["cached_tokens"],
    ) == (1000, 120, 200)


def test_trial_without_trajectory_and_malformed_files(parsed):
    _, units = parsed
    _, _, [(t, steps)] = units["jobs/job-2025-03-01__10-00/video-frames__e5f6a7b/result.json"]
    assert steps == []
    assert (t["outcome"], t["reward"], t["exit_status"]) == ("failure", 0.0, "AgentTimeoutError")
    assert t["error"] == "Agent execution timed out after 900 seconds"
    assert (t["input_tokens"], t["output_tokens"], t["model"]) == (800, 40, "gpt-5")
    _, ctx, rows = units["malformed/truncated.trajectory.json"]
    assert rows == [] and ctx.records_seen == 1 and ctx.quarantined[0].error_type == "truncated"
    _, ctx, [(t, steps)] = units["malformed/badstep.trajectory.json"]
    assert (ctx.records_seen, ctx.records_ingested, ctx.records_quarantined) == (3, 2, 1)
    assert "step 1" in ctx.quarantined[0].reason
    assert t["final_answer"] == "42" and [s["kind"] for s in steps] == ["user", "assistant", "tool_call"]


def test_references_outside_the_folder_are_not_read(tmp_path: Path):
    secret = tmp_path / "secret.json"
    secret.write_text(
        '{"schema_version": "ATIF-v1.5", "steps": [{"step_id": 1, "source": "user", "message": "x"}]}'
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / "trajectory.json").write_text(
        json.dumps(
            {
                "schema_version": "ATIF-v1.5",
                "steps": [
                    {"step_id": 1, "source": "user", "message": "go"},
                    {
                        "step_id": 2,
                        "source": "system",
                        "message": "summarized",
                        "observation": {
                            "results": [{"subagent_trajectory_ref": [{"trajectory_path": "../secret.json"}]}]
                        },
                    },
                ],
                "continued_trajectory_ref": "/etc/passwd",
            }
        )
    )
    _, units = parse_tree(run)
    _, ctx, [(t, steps)] = units["trajectory.json"]
    assert ctx.records_seen == 2 and not ctx.quarantined  # nothing outside run/ was opened
    assert sorted(t["anomalies"]) == [
        "continuation reference outside the trajectory folder: not read",
        "sub-agent trajectory '../secret.json' outside the trajectory folder: not read",
    ]
    assert len(steps) == 2


def test_example_runs_match_their_ground_truth(tmp_path: Path):
    """The example generator's ATIF trials read back with the outcome, answer and calls it planted."""
    from trajlab.examples import generate_examples, load_ground_truth

    generate_examples(tmp_path / "ex", n_tasks=8, seed=3, runners=("atif",), runs_per_task=1)
    truth = {g["source"]: g for g in load_ground_truth(tmp_path / "ex") if g["runner"] == "atif"}
    runs = tmp_path / "ex" / "runs"
    _, units = parse_tree(runs / "atif")  # without the sidecar: outcome from result.json only
    assert len(units) == len(truth) >= 8
    for rel, (_, ctx, [(t, steps)]) in units.items():
        g = truth[f"atif/{rel}"]
        assert ctx.records_quarantined == 0 and t["anomalies"] == []
        assert (t["outcome"], t["task_id"], t["model"], t["native_id"]) == (
            g["outcome"],
            g["task_id"],
            g["model"],
            g["native_id"],
        )
        assert g["final_answer"] in t["final_answer"]  # the last message states the answer
        calls = {s["call_id"]: s for s in steps if s["kind"] == "tool_call"}
        assert all(calls[c].get("output") is not None for c in g["evidence_call_ids"])


def test_embedded_subagents(tmp_path: Path):
    """ATIF >= 1.7 embeds sub-agents in `subagent_trajectories[]`, referenced by `trajectory_id`."""
    task_call = {"tool_call_id": "t1", "function_name": "Task", "arguments": {"prompt": "review"}}
    ref = {
        "source_call_id": "t1",
        "content": "Looks right.",
        "subagent_trajectory_ref": [{"trajectory_id": "sub-1"}],
    }
    doc = {
        "schema_version": "ATIF-v1.8",
        "trajectory_id": "root",
        "agent": {"name": "claude", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Make hello.txt say hi"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "tool_calls": [task_call],
                "observation": {"results": [ref]},
            },
            {"step_id": 3, "source": "agent", "message": "Done."},
        ],
        "subagent_trajectories": [
            {
                "trajectory_id": "sub-1",
                "agent": {"name": "reviewer"},
                "steps": [
                    {"step_id": 1, "source": "user", "message": "Check hello.txt"},
                    {"step_id": 2, "source": "agent", "message": "Looks right."},
                ],
            },
            {
                "trajectory_id": "sub-2",
                "steps": [{"step_id": 1, "source": "agent", "message": "Synthetic summary."}],
            },
        ],
    }
    (tmp_path / "trajectory.json").write_text(json.dumps(doc))
    _, units = parse_tree(tmp_path)
    _, ctx, [(t, steps)] = units["trajectory.json"]
    assert ctx.records_seen == 6 and t["anomalies"] == [] and t["n_subagents"] == 2
    assert [(s["agent_id"], s.get("parent_step_index")) for s in steps] == [
        ("main", None),
        ("main", None),
        ("sub-1", 1),  # spliced after the Task call that spawned it
        ("sub-1", 1),
        ("main", None),
        ("sub-2", None),  # referenced by no step: after the main steps
    ]
    assert t["final_answer"] == "Done."


def test_sniff_only_atif():
    a = get_adapter("atif")
    assert a.sniff(Path("x.json"), b'{\n  "schema_version": "ATIF-v1.7",\n  "session_id": "s"')
    assert not a.sniff(Path("trajectory.json"), b'{"problem_statement": "x", "steps": []}')
    assert not a.sniff(Path("result.json"), b'{"id": "x", "results": [{"trial_name": "t"}]}')


@pytest.mark.corpus
def test_corpus_atif(corpus_dir: Path, tmp_path: Path):
    rep = ingest([corpus_dir / "atif"], tmp_path / "lab", workers=1, progress=False)
    assert not rep.unknown
    r = rep.runners["atif"]
    assert (r.trajectories, r.steps, r.tool_calls, r.records_quarantined) == (4, 51, 15, 0)
    lab = Lab.open(tmp_path / "lab")
    per = query(
        lab,
        "select regexp_extract(source_path, '[^/]+/[^/]+$') f, n_steps, n_tool_calls, n_subagents, input_tokens "
        "from trajectories order by f",
        as_="polars",
    ).rows()
    assert per == [
        ("atif/openhands-hello-world.trajectory.json", 8, 2, 0, 220),
        ("atif/terminus2-hello-world-invalid-json.trajectory.json", 13, 3, 0, 2417),
        ("atif/terminus2-hello-world-timeout.trajectory.json", 7, 3, 0, 982),
        ("terminus2-context-summarization/trajectory.json", 23, 7, 3, 7802),
    ]
    # every call found its result (terminus by position, OpenHands by source_call_id) except `finish`
    open_calls = query(lab, "select tool_name from steps where kind = 'tool_call' and output is null").column(
        0
    )
    assert open_calls.to_pylist() == ["finish"]
    assert query(lab, "select count(*) from steps where kind = 'tool_result'").column(0)[0].as_py() == 0


# -- all adapters of this group (they share atif.py's type-safe accessors) -------------------------------

GROUP = ("atif", "terminal-bench", "openhands", "swe-agent", "mini-swe-agent", "llm-in-sandbox", "kira")
_VALUES = [None, 0, -1, 2.5, "", "x", [], {}, [None], {"a": None}, True, "ERROR:", [1, "a"], {"role": 3}]


def _mutate(o, rng, p):
    if isinstance(o, dict):
        return {k: (rng.choice(_VALUES) if rng.random() < p else _mutate(v, rng, p)) for k, v in o.items()}
    if isinstance(o, list):
        return [(rng.choice(_VALUES) if rng.random() < p else _mutate(v, rng, p)) for v in o]
    return o


@pytest.mark.parametrize("seed", range(4))
def test_wrong_types_are_quarantined_never_raised(seed: int, tmp_path: Path):
    """Every field of every fixture may hold any JSON type: parse never raises and the records add up."""
    import random
    import shutil

    rng = random.Random(seed)
    fixtures = FIX.parent
    for name in (
        "atif",
        "terminal_bench",
        "openhands",
        "swe_agent",
        "mini_swe_agent",
        "llm_in_sandbox",
        "kira",
    ):
        shutil.copytree(fixtures / name, tmp_path / name)
    p = (0.03, 0.1, 0.25, 0.5)[seed]
    for f in tmp_path.rglob("*"):
        if f.suffix in (".json", ".traj", ".jsonl", ".cast"):
            try:
                if f.suffix in (".jsonl", ".cast"):
                    lines = f.read_text().splitlines()
                    f.write_text(
                        "\n".join(json.dumps(_mutate(json.loads(ln), rng, p)) for ln in lines) + "\n"
                    )
                else:
                    f.write_text(json.dumps(_mutate(json.loads(f.read_text()), rng, p)))
            except (ValueError, UnicodeDecodeError):
                pass  # the malformed fixtures stay malformed
    _, units = parse_tree(tmp_path)
    assert {u.adapter for u, _, _ in units.values()} <= set(GROUP) | {"chat-messages"}
    n = 0
    for u, ctx, rows in units.values():
        assert ctx.records_seen == ctx.records_ingested + ctx.records_quarantined, u.primary
        for t, steps in rows:
            assert t["outcome"] in ("success", "failure", "unknown")
            assert all(isinstance(s.get("input_tokens"), (int, type(None))) for s in steps)
            n += len(steps)
    assert n > 0


@pytest.mark.corpus
def test_corpus_files_claimed_by_the_right_adapter(corpus_dir: Path):
    import os

    disc = discover([corpus_dir])
    assert not disc.unknown
    folders = {
        "atif": "atif",
        "terminal-bench": "terminal_bench_tb1",
        "openhands": "openhands",
        "swe-agent": "swe_agent",
        "mini-swe-agent": "mini_swe_agent",
        "llm-in-sandbox": None,
        "kira": None,
    }
    root = os.path.realpath(corpus_dir)  # the corpus folder may be reached through a symlink
    for adapter, folder in folders.items():
        claimed = {
            os.path.relpath(os.path.realpath(f), root)
            for u in disc.units
            if u.adapter == adapter
            for f in u.files
        }
        if folder is None:
            assert claimed == set(), adapter  # no real sample: claims nothing of the corpus
            continue
        expected = {
            os.path.relpath(str(p), corpus_dir)
            for p in (corpus_dir / folder).rglob("*")
            if p.is_file() and p.name != "PROVENANCE.md"
        }
        assert claimed == expected, adapter


def test_a_trajectory_without_a_model_takes_the_trial_agents(tmp_path: Path):
    # FORMATS.md: result.json carries agent_info.model_info; a trajectory whose agent block and steps name
    # no model (agents that leave model_name out) got model NULL, though the trial says which it was
    trial = tmp_path / "jobs" / "job-1" / "count__x1"
    (trial / "agent").mkdir(parents=True)
    steps = [
        {"step_id": 1, "source": "user", "message": "count"},
        {"step_id": 2, "source": "agent", "message": "3"},
    ]
    (trial / "agent" / "trajectory.json").write_text(
        json.dumps(
            {
                "schema_version": "ATIF-v1.5",
                "session_id": "s1",
                "agent": {"name": "terminus-2"},
                "steps": steps,
            }
        )
    )
    result = {
        "id": "r1",
        "task_name": "count",
        "trial_name": "count__x1",
        "agent_info": {
            "name": "terminus-2",
            "version": "2.0",
            "model_info": {"name": "gpt-5-mini", "provider": "openai"},
        },
        "verifier_result": {"rewards": {"reward": 1.0}},
    }
    (trial / "result.json").write_text(json.dumps(result))
    _, units = parse_tree(tmp_path)
    [(t, _steps)] = next(u for k, u in units.items() if k.endswith("trajectory.json"))[2]
    assert (t["model"], t["outcome"], t["task_id"]) == ("gpt-5-mini", "success", "count")
