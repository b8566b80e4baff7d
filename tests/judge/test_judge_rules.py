"""The offline rules judge: what it decides, what it abstains on, coverage, taxonomy routing."""

from __future__ import annotations

import pytest
from judge_labs import make_lab

from trajlab.judge import CAPABILITIES, decide, detect, load_view, rules_judge
from trajlab.taxonomy import load_taxonomy

OMNI = load_taxonomy("omni-failure")
MULTI = load_taxonomy("multi-agent")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return make_lab(
        tmp_path_factory.mktemp("rules") / "lab", "omni_runs", "adversarial", "secrets", "who_and_when_mini"
    )


def test_network_failure_after_missing_asr_is_infrastructure(lab) -> None:
    v = decide(load_view(lab, "t_audio_infra"), OMNI.detector_map())
    assert v.category == "tool_infrastructure"
    assert v.decisive_step == 3  # the pip install that failed for lack of network; the agent then gave up
    assert v.used[0].detector == "network_error"
    assert [h.detector for h in v.used] == ["network_error", "command_not_found"]
    assert v.coverage.startswith("rule network_error: unrecovered network error in pip (#3)")


def test_video_never_extracted_is_insufficient_exploration(lab) -> None:
    v = decide(load_view(lab, "t_video_skip"), OMNI.detector_map())
    assert v.category == "insufficient_exploration"
    assert v.decisive_step == 3  # the final answer, given without looking at a frame
    assert v.used[0].detector == "frames_never_extracted"
    assert "video needed (domain=video) but no frames extracted" in v.rationale


def test_wrong_transcript_from_a_working_tool_is_not_decided(lab) -> None:
    v = decide(load_view(lab, "t_misheard"), OMNI.detector_map())
    assert v.category is None and v.decisive_step is None
    assert v.coverage.startswith("abstained: no rule applies (audio processed without a detectable failure)")
    assert CAPABILITIES in v.coverage


def test_permission_denied_single_frame(lab) -> None:
    v = decide(load_view(lab, "t_adversarial"), OMNI.detector_map())
    assert v.category == "tool_infrastructure" and v.decisive_step == 2
    assert v.used[0].detector == "permission_denied"


def test_execution_step_points_at_the_code_author(lab) -> None:
    view = load_view(lab, "t_ww_exec")
    v = decide(view, MULTI.detector_map())
    assert v.category == "execution_error"
    assert v.decisive_step == 1  # the Data_Expert message whose code the terminal ran (executes_step)
    assert v.used[0].detector == "code_exception"
    # Under the omni taxonomy the same signal means a reasoning/calculation bug.
    assert decide(view, OMNI.detector_map()).category == "reasoning_calculation"


def test_unmapped_detectors_are_reported(lab) -> None:
    hits = {h.detector for h in detect(load_view(lab, "t_video_skip"))}
    assert hits == {"frames_never_extracted"}
    v = decide(load_view(lab, "t_video_skip"), MULTI.detector_map())
    assert v.category is None
    assert "fired but not in this taxonomy: frames_never_extracted" in v.coverage


def _claims_lab(path):
    def run(tid: str, task: str, output: str, claim: str, final: str) -> dict:
        return {
            "trajectory_id": tid,
            "runner": "fixture",
            "format": "fixture",
            "outcome": "failure",
            "domain": "audio",
            "task": task,
            "final_answer": final,
            "steps": [
                {"kind": "user", "text": task},
                {
                    "kind": "tool_call",
                    "tool_name": "bash",
                    "tool": "whisper",
                    "modality": "audio",
                    "command": "whisper clip.wav",
                    "arguments": '{"command": "whisper clip.wav"}',
                    "output": output,
                    "exit_code": 0,
                    "is_error": False,
                    "call_id": "c1",
                },
                {"kind": "assistant", "text": claim},
                {"kind": "assistant", "text": f"The answer is {final}."},
            ],
        }

    heard = "[00:01] first 130 dollars [00:04] then 89 dollars [00:07] and 54 dollars"
    return make_lab(
        path,
        extra=[
            run(
                "t_expr", "What do the amounts in clip.wav add up to?", heard, "Roughly 4 x 65 = 260.", "260"
            ),
            run("t_word", "What do the amounts in clip.wav add up to?", heard, "Their sum is 263.", "263"),
            run(
                "t_evid",
                "What do the amounts in clip.wav add up to?",
                heard,
                "From 130 and 89 it is 219.",
                "219",
            ),
            run(
                "t_claim",
                "Who composed the clip's theme?",
                "[00:01] music",
                "It is by Marguerite Monnot.",
                "Marguerite Monnot",
            ),
            run(
                "t_shown",
                "What do the amounts in clip.wav add up to?",
                heard + " 273 in all",
                "So 273.",
                "273",
            ),
        ],
    )


def test_an_answer_value_no_tool_showed_is_a_claim_or_head_arithmetic(tmp_path) -> None:
    lab = _claims_lab(tmp_path / "lab")
    for tid in ("t_expr", "t_word", "t_evid"):
        v = decide(load_view(lab, tid), OMNI.detector_map())
        assert (v.category, v.decisive_step, v.used[0].detector) == (
            "reasoning_calculation",
            2,
            "mental_arithmetic",
        ), tid
        assert decide(load_view(lab, tid), MULTI.detector_map()).category == "reasoning_error"
    v = decide(load_view(lab, "t_claim"), OMNI.detector_map())
    assert (v.category, v.decisive_step, v.used[0].detector) == (
        "knowledge_retrieval",
        2,
        "unsupported_claim",
    )
    assert "#2 stated Marguerite" in v.coverage and v.confidence < 0.5
    assert decide(load_view(lab, "t_claim"), MULTI.detector_map()).category == "wrong_information"
    # the answer value is in the transcript: nothing unevidenced, the rules abstain
    assert decide(load_view(lab, "t_shown"), OMNI.detector_map()).category is None
    # a candidate without its term (a DAG built before DAG_VERSION 13) decides nothing
    view = load_view(lab, "t_claim")
    view.metrics = {
        **view.metrics,
        "decisive_candidates": [{k: v for k, v in c.items() if k != "term"} for c in view.candidates()],
    }
    assert "unsupported_claim" not in {h.detector for h in detect(view)}


def test_rules_judge_writes_labels_and_reports_coverage(tmp_path) -> None:
    lab = make_lab(tmp_path / "lab", "omni_runs", "adversarial")
    rep = rules_judge(lab, "omni-failure", progress=False)
    assert rep.selected == 4 and rep.judged == 4
    assert rep.statuses == {"labeled": 3, "unjudgeable": 1}
    assert rep.coverage == 0.75
    assert rep.rules_fired == {"network_error": 1, "frames_never_extracted": 1, "permission_denied": 1}
    text = rep.format()
    assert "coverage: 75% labeled" in text and "Cannot decide (abstains)" in text
    rows = {r["trajectory_id"]: r for r in lab.read("judge_labels").to_pylist()}
    a = rows["t_audio_infra"]
    assert (a["judge"], a["model"], a["status"], a["category"]) == (
        "rules",
        "rules-2",
        "labeled",
        "tool_infrastructure",
    )
    assert a["decisive_step_index"] == 3 and a["evidence_steps"] == [3, 2]
    assert a["prompt_hash"].startswith("rh_") and a["coverage"].startswith("rule network_error")
    assert a["n_requests"] == 0
    m = rows["t_misheard"]
    assert m["status"] == "unjudgeable" and m["status_reason"].startswith("rules: abstained: no rule applies")
    # Running again replaces the rules labels instead of adding rows.
    rules_judge(lab, "omni-failure", progress=False)
    assert lab.rows("judge_labels") == 4


def test_rules_judge_dry_run_writes_nothing(tmp_path) -> None:
    lab = make_lab(tmp_path / "lab", "omni_runs")
    rep = rules_judge(lab, "omni-failure", progress=False, dry_run=True)
    assert rep.judged == 3 and not lab.has("judge_labels")
    assert [p["category"] for p in rep.plan] == [
        "tool_infrastructure",
        None,
        "insufficient_exploration",
    ]  # id order


@pytest.mark.slow
def test_rules_judge_on_generated_examples(tmp_path) -> None:
    """On the generated example runs the rules judge is right whenever it decides (planted ground truth)."""
    examples = pytest.importorskip("trajlab.examples")
    from trajlab.ingest import ingest
    from trajlab.judge import evaluate

    ex = examples.generate_examples(tmp_path / "ex", n_tasks=24, seed=11)
    ingest([ex.runs_dir], tmp_path / "lab", progress=False, workers=1)
    rep = rules_judge(tmp_path / "lab", "omni-failure", progress=False)
    assert rep.judged == ex.failures
    res = evaluate(tmp_path / "lab", tmp_path / "ex" / "ground_truth.jsonl", judge="rules")
    assert res["n_gold"] == ex.failures
    assert 0.25 <= res["coverage"] <= 0.7
    assert res["on_labeled"]["category"]["accuracy"] >= 0.9
    assert res["on_labeled"]["decisive_step"]["within_1"] >= 0.9


def test_degenerate_runs(tmp_path) -> None:
    """No steps, control characters, a 3 MB output: each gets a status, nothing crashes."""
    weird = {
        "trajectory_id": "t_weird",
        "runner": "x",
        "format": "x",
        "outcome": "failure",
        "task": "bad \x00 \x1b[31m",
        "steps": [
            {"kind": "user", "text": "hello \x00"},
            {
                "kind": "tool_call",
                "tool": "python",
                "modality": "compute",
                "command": "python3 x.py",
                "output": "\x00\x01 binary " * 1000 + "Traceback (most recent call last):\nValueError: boom",
                "exit_code": 1,
                "is_error": True,
            },
            {"kind": "assistant", "text": "done"},
        ],
    }
    empty = {
        "trajectory_id": "t_empty",
        "runner": "x",
        "format": "x",
        "outcome": "failure",
        "domain": "video",
        "task": "In a.mp4 what appears?",
        "steps": [],
    }
    huge = {
        "trajectory_id": "t_huge",
        "runner": "x",
        "format": "x",
        "outcome": "failure",
        "task": "t",
        "steps": [
            {"kind": "user", "text": "t"},
            {
                "kind": "tool_call",
                "tool": "cat",
                "modality": "file",
                "command": "cat big",
                "output": "y" * 3_000_000,
                "exit_code": 1,
                "is_error": True,
            },
            {"kind": "assistant", "text": "a"},
        ],
    }
    lab = make_lab(tmp_path / "lab", extra=[weird, empty, huge])
    rep = rules_judge(lab, "omni-failure", progress=False)
    assert rep.judged == 3
    rows = {r["trajectory_id"]: r for r in lab.read("judge_labels").to_pylist()}
    assert (
        rows["t_empty"]["status"] == "unjudgeable"
        and rows["t_empty"]["status_reason"] == "rules: abstained: no steps recorded"
    )
    assert (
        rows["t_weird"]["category"] == "reasoning_calculation" and rows["t_weird"]["decisive_step_index"] == 1
    )
    assert rows["t_huge"]["status"] == "unjudgeable"


def test_rules_judge_without_force_judges_only_what_is_not_done(tmp_path) -> None:
    """force=False resumes: a label already done (labeled or unjudgeable) is skipped and its row kept
    as it was; a label that ended in error, and a trajectory never judged, are judged."""
    lab = make_lab(tmp_path / "lab", "omni_runs")
    first = rules_judge(lab, "omni-failure", progress=False)
    assert first.judged == 3 and first.skipped_done == 0
    before = {r["trajectory_id"]: r for r in lab.refresh().read("judge_labels").to_pylist()}
    assert {t: r["status"] for t, r in before.items()} == {
        "t_audio_infra": "labeled",
        "t_misheard": "unjudgeable",
        "t_video_skip": "labeled",
    }
    failed = {**before["t_video_skip"], "status": "error", "status_reason": "timeout", "category": None}
    with lab.write("test") as txn:  # one label ended in error, one trajectory was never judged
        txn.delete("judge_labels", "trajectory_id", ["t_video_skip", "t_misheard"])
        txn.append("judge_labels", [failed])
    rep = rules_judge(lab.refresh(), "omni-failure", force=False, progress=False)
    assert (rep.selected, rep.skipped_done, rep.judged) == (3, 1, 2)
    assert sorted(p["trajectory_id"] for p in rep.plan) == ["t_misheard", "t_video_skip"]
    after = {r["trajectory_id"]: r for r in lab.refresh().read("judge_labels").to_pylist()}
    assert lab.rows("judge_labels") == 3
    assert after["t_audio_infra"] == before["t_audio_infra"]  # not rewritten: same run, same time
    assert after["t_video_skip"]["status"] == "labeled" and after["t_video_skip"]["run_id"] == rep.run_id
    assert after["t_video_skip"]["category"] == "insufficient_exploration"
    assert after["t_misheard"]["status"] == "unjudgeable" and after["t_misheard"]["run_id"] == rep.run_id
    # Nothing left to do: everything is skipped and nothing is written.
    gen = lab.refresh().generation
    again = rules_judge(lab.refresh(), "omni-failure", force=False, progress=False)
    assert (again.skipped_done, again.judged) == (3, 0) and lab.refresh().generation == gen
