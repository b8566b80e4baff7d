from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from format_checks import parse_tree

from trajlab.ingest import ingest
from trajlab.store import Lab, query

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "swe_agent"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
RUN = "gpt4o__swe-bench-lite__default__t-0.00__p-0.95__c-3.00"


@pytest.fixture(scope="module")
def parsed():
    return parse_tree(FIX)


def test_units_claim_run_files(parsed):
    disc, units = parsed
    assert not disc.unknown
    assert sorted(units) == [
        f"{RUN}/calc__calc-1/calc__calc-1.traj",
        f"{RUN}/parser__parser-7.traj",
        "malformed/cut.traj",
        "malformed/wrong.traj",
    ]
    claimed = {p.name for u, _, _ in units.values() for p in u.companions}
    assert {"all_preds.jsonl", "results.json", "calc__calc-1.pred"} <= claimed


def test_v1_tool_calls_history_before_submit(parsed):
    _, units = parsed
    _, ctx, [(t, steps)] = units[f"{RUN}/calc__calc-1/calc__calc-1.traj"]
    assert ctx.records_quarantined == 0
    assert (t["runner"], t["harness"], t["model"], t["runner_version"]) == (
        "swe_agent",
        "swe-agent",
        "gpt-4o",
        "1.0.1",
    )
    assert (t["task_id"], t["exit_status"]) == ("calc__calc-1", "submitted")
    # `submitted` is not success: the outcome comes from the SWE-bench report next to the run
    assert (t["outcome"], t["reward"], t["outcome_source"]) == ("success", 1.0, "results.json:resolved_ids")
    assert (t["input_tokens"], t["output_tokens"], t["cost_usd"]) == (4000, 200, 0.05)
    assert t["final_answer"].startswith("\ndiff --git a/calc.py")
    assert (t["n_steps"], t["n_tool_calls"], t["n_errors"]) == (11, 4, 1)
    assert sorted(t["anomalies"]) == [
        "1 trajectory entries after the saved history (taken from trajectory)",
        "result without call call_404",
    ]
    calls = [s for s in steps if s["kind"] == "tool_call"]
    assert [c["tool_name"] for c in calls] == ["find_file", "bash", "str_replace_editor", "submit"]
    assert [c["duration_s"] for c in calls] == [0.25, 30.0, 0.5, 0.75]
    assert [c["tool"] for c in calls] == ["find", "sleep", "edit", "submit"]  # str_replace edits
    assert json.loads(calls[0]["arguments"]) == {"file_name": "calc.py"}
    sleep = calls[1]
    assert (sleep["tool"], sleep["timed_out"], sleep["is_error"]) == ("sleep", True, True)
    assert (
        calls[3]["output"].startswith("\ndiff --git")
        and json.loads(calls[3]["metadata"])["from"] == "trajectory"
    )


def test_v0_text_actions(parsed):
    _, units = parsed
    _, ctx, [(t, steps)] = units[f"{RUN}/parser__parser-7.traj"]
    assert (ctx.records_seen, ctx.records_quarantined) == (14, 0)  # 10 history + 4 trajectory entries
    # no replay_config in 0.x: the model comes from the run name in all_preds.jsonl
    assert (t["model"], json.loads(t["metadata"])["model_from"]) == ("gpt4o", "run name")
    assert (t["outcome"], t["outcome_source"]) == ("failure", "results.json:resolved_ids")
    assert [s["kind"] for s in steps[:3]] == ["system", "system", "user"]
    assert steps[1]["role"] == "demonstration"
    calls = [s for s in steps if s["kind"] == "tool_call"]
    assert [(c["tool_name"], c["call_id"]) for c in calls] == [
        ("bash", "action-1"),
        ("open", "action-2"),
        ("bash", "action-3"),
        ("submit", "action-4"),
    ]
    assert calls[0]["output"].startswith("parser.py\ntests/") and calls[1]["tool"] == "read"
    assert calls[2]["is_error"] is True and "syntax errors" in calls[2]["output"]
    # the last action has no observation in history: it comes from trajectory[3]
    assert calls[3]["output"] == "\ndiff --git a/parser.py b/parser.py\n"


def test_malformed(parsed):
    _, units = parsed
    for name, etype in (("malformed/cut.traj", "truncated"), ("malformed/wrong.traj", "schema")):
        _, ctx, rows = units[name]
        assert rows == [] and (ctx.records_seen, ctx.records_quarantined) == (1, 1)
        assert ctx.quarantined[0].error_type == etype


@pytest.mark.corpus
def test_corpus_swe_agent(corpus_dir: Path, tmp_path: Path):
    rep = ingest([corpus_dir / "swe_agent"], tmp_path / "lab", workers=1, progress=False)
    assert not rep.unknown
    r = rep.runners["swe_agent"]
    assert (r.files, r.trajectories, r.steps, r.tool_calls, r.records_quarantined) == (5, 5, 88, 38, 0)
    lab = Lab.open(tmp_path / "lab")
    rows = query(
        lab,
        "select task_id, model, n_steps, n_tool_calls, outcome, exit_status from trajectories order by task_id",
        as_="polars",
    ).rows()
    assert rows == [
        ("SWE-agent__test-repo-i1", "gpt-4o", 12, 5, "unknown", "submitted"),
        ("function_calling_simple", None, 12, 5, "unknown", None),
        ("marshmallow-code__marshmallow-1867", "gpt-4o", 24, 11, "unknown", "submitted"),
        ("pydicom__pydicom-1458", "gpt4", 27, 12, "unknown", "submitted"),
        ("swe-agent__test-repo-i1", None, 13, 5, "unknown", "submitted"),
    ]
    # tool_call_ids (1.x) and the following user message (0.x) give every call its observation
    assert (
        query(lab, "select count(*) from steps where kind = 'tool_call' and output is null")
        .column(0)[0]
        .as_py()
        == 0
    )
    assert query(lab, "select count(*) from steps where kind = 'tool_result'").column(0)[0].as_py() == 0


def test_an_edit_the_editor_refused_is_an_error():
    # SWE-agent's linter refused the edit (pydicom__pydicom-1458 in the corpus, three times): the file is
    # unchanged and the run goes on; it was `is_error` False and the run counted no error
    from trajlab.formats.swe_agent import _obs_fields

    refused = (
        "Your proposed edit has introduced new syntax error(s). Please read this error message carefully "
        "and then retry editing the file.\n\nERRORS:\n- E999 IndentationError: unexpected indent\n\n"
        "This is how your edit would have looked if applied\n-------------------------------------------------\n"
        + "    x = 1\n"
        * 40
        + "-------------------------------------------------\nYour changes have NOT been applied. Please fix "
        "your edit command and try again.\nYou either need to 1) Specify the correct start/end line "
        "arguments or 2) Correct your edit code.\nDO NOT re-run the same failed edit command. Running it "
        "again will lead to the same error."
    )
    assert _obs_fields(refused)["is_error"] is True
    # a file that merely quotes the sentence, far from the end of the output, is no refusal
    assert _obs_fields("# Your changes have NOT been applied\n" + "line\n" * 200)["is_error"] is None
