from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from format_checks import check_wrong_types, claimed_by, claimed_folders, parse_detected

from trajlab.formats import ParseContext, detect, get_adapter, head
from trajlab.ingest import ingest
from trajlab.store import Lab

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "who_and_when"


def parse(path: Path) -> tuple[list[tuple[dict, list[dict]]], ParseContext]:
    return parse_detected(path, "who-and-when")


def test_hand_crafted_one_step_per_message_and_annotation():
    [(t, steps)], ctx = parse(FIX / "hand_crafted_silence.json")
    assert ctx.records_seen == 1 and not ctx.quarantined
    history = json.loads((FIX / "hand_crafted_silence.json").read_text())["history"]
    assert len(steps) == len(history) == 13
    assert [s["step_index"] for s in steps] == list(range(13))
    assert t["task"].startswith("How many seconds of silence")
    assert t["expected_answer"] == "3.4"
    assert t["final_answer"] == "0.02"
    assert t["outcome"] == "failure" and t["outcome_source"] == "who_and_when:annotated_failure"
    assert t["reward"] is None  # an annotated failure, no graded answer
    assert t["n_subagents"] == 0  # the Orchestrator's peers take turns in one chat: no sub-agents
    assert t["difficulty"] == "1" and t["harness"] == "magentic-one"
    meta = json.loads(t["metadata"])
    assert meta["who_and_when"] == {
        "mistake_agent": "Assistant",
        "mistake_step": 3,
        "mistake_reason": meta["who_and_when"]["mistake_reason"],
        "is_corrected": False,
    }
    assert meta["subset"] == "Hand-Crafted"
    # the annotated step is the Assistant's message, by index
    assert steps[3]["agent_id"] == "Assistant" and "soundfile" in steps[3]["text"]
    assert steps[0]["kind"] == "user" and steps[0]["agent_id"] == "main"
    assert steps[1]["kind"] == "reasoning" and steps[1]["agent_id"] == "Orchestrator"
    assert json.loads(steps[2]["metadata"]) == {"to": "Assistant"}
    # terminal messages are executions of the latest code block
    run1, run2, nocode = steps[5], steps[8], steps[10]
    assert run1["kind"] == "tool_call" and run1["tool_name"] == "python" and run1["exit_code"] == 0
    assert "np.argmax" in json.loads(run1["arguments"])["code"]
    assert run1["is_error"] is False and run1["output"].endswith("0.02\n")
    assert json.loads(run1["metadata"]) == {"executes_step": 3}
    assert run2["tool_name"] == "bash" and run2["exit_code"] == 127 and run2["is_error"] is True
    assert run2["tool"] == "ffmpeg" and run2["modality"] == "audio"
    # "no code to execute" is the chat's notice that nothing ran: a message, no call and no failure
    assert nocode["kind"] == "assistant" and nocode["agent_id"] == "ComputerTerminal"
    assert nocode["text"].startswith("No code block detected") and json.loads(nocode["metadata"]) == {
        "ran": False
    }
    assert not nocode.get("is_error") and nocode.get("arguments") is None
    assert t["n_tool_calls"] == 2 and t["n_errors"] == 1
    assert (
        t["n_subagents"] == 0
    )  # Orchestrator, Assistant, ComputerTerminal: peers of one chat, no sub-agents
    assert not any("without a preceding code block" in a for a in t["anomalies"])


def test_algorithm_generated_names_and_is_correct():
    [(t, steps)], _ = parse(FIX / "algorithm_generated_frames.json")
    assert len(steps) == 6
    assert t["outcome"] == "failure" and t["outcome_source"] == "who_and_when:is_correct"
    assert t["reward"] == 0.0  # is_correct: false
    assert t["task_id"] == "7b2c9d10-1111-4222-8333-444455556666"
    assert t["harness"] == "captain-agent" and t["difficulty"] == "2"
    assert [s["agent_id"] for s in steps] == [
        "Video_Expert",
        "Computer_terminal",
        "Math_Expert",
        "Computer_terminal",
        "Verification_Expert",
        "Verification_Expert",
    ]
    assert steps[0]["kind"] == "assistant"
    assert (
        steps[1]["kind"] == "tool_call" and steps[1]["exit_code"] == 0 and "ffprobe" in steps[1]["arguments"]
    )
    assert steps[3]["exit_code"] == 1 and steps[3]["is_error"] is True
    assert json.loads(steps[3]["metadata"]) == {"executes_step": 2}
    meta = json.loads(t["metadata"])
    assert meta["who_and_when"]["mistake_agent"] == "Video_Expert"
    assert meta["who_and_when"]["mistake_step"] == 0
    assert meta["subset"] == "Algorithm-Generated" and "Video_Expert" in meta["system_prompt"]
    assert t["final_answer"] is None
    assert t["anomalies"] == []


def _parse_log(tmp_path, name: str, history: list, mistake_agent: str, mistake_step: str, **fields):
    """Write a Who&When log (history, question, annotation and `fields`) and parse it."""
    d = {
        "history": history,
        "question": history[0]["content"] if history[0].get("role") == "human" else "Which album?",
        "mistake_agent": mistake_agent,
        "mistake_step": mistake_step,
        "mistake_reason": "x",
        **fields,
    }
    p = tmp_path / name
    p.write_text(json.dumps(d))
    [(t, steps)], _ = parse(p)
    return t, steps


def test_code_quoted_in_an_orchestrator_thought_is_not_executed(tmp_path):
    """Shape of corpus Hand-Crafted/47.json steps 51-55: a new plan (a `(thought)`) quotes the team
    list in a code block, the instruction to the terminal has none, and the terminal still runs."""
    t, steps = _parse_log(
        tmp_path,
        "47.json",
        [
            {"content": "Which countries...?", "role": "human"},
            {
                "content": "New plan:\n\n```\nFileSurfer: An agent that can handle local files.\n```",
                "role": "Orchestrator (thought)",
            },
            {
                "content": "unzip /workspace/data.zip -d /workspace/out",
                "role": "Orchestrator (-> ComputerTerminal)",
            },
            {
                "content": "The script ran, then exited with Unix exit code: 0\nIts output was:\nArchive:  /workspace/data.zip\n",
                "role": "ComputerTerminal",
            },
        ],
        "Orchestrator",
        "2",
        ground_truth="Brunei, China",
    )
    run = steps[3]
    assert run["kind"] == "tool_call" and run["exit_code"] == 0
    assert run["arguments"] is None and run["tool_name"] == "execute_code"  # not the team list as python
    assert run["is_error"] is False  # the terminal reports a clean exit
    assert "history[3]: execution output without a preceding code block" in t["anomalies"]


def test_captain_agent_terminal_runs_only_the_last_messages_code(tmp_path):
    """Shape of corpus Algorithm-Generated runs: an expert's message carries code, a second expert answers
    in prose, and the terminal says there is no code in the last message: it ran nothing, and that is
    no error of the agents' work."""
    t, steps = _parse_log(
        tmp_path,
        "1.json",
        [
            {
                "content": "Run this:\n```python\nprint('Harbinger')\n```",
                "name": "Music_Expert",
                "role": "assistant",
            },
            {
                "content": "exitcode: 0 (execution succeeded)\nCode output: Harbinger\n",
                "name": "Computer_terminal",
                "role": "user",
            },
            {
                "content": "I verified the list by hand; no code needed.",
                "name": "Verify_Expert",
                "role": "assistant",
            },
            {
                "content": "There is no code from the last 1 message for me to execute. Group chat manager should "
                "let other participants to continue the conversation.",
                "name": "Computer_terminal",
                "role": "user",
            },
        ],
        "Music_Expert",
        "0",
        is_correct=False,
        system_prompt={"Music_Expert": "..."},
    )
    assert steps[1]["arguments"] is not None and json.loads(steps[1]["metadata"]) == {"executes_step": 0}
    notice = steps[3]  # not the first message's code again: nothing ran
    assert notice["kind"] == "assistant" and json.loads(notice["metadata"]) == {"ran": False}
    assert not notice.get("is_error") and t["n_errors"] == 0 and t["n_tool_calls"] == 1


def test_annotation_at_the_end_of_a_long_file_is_found(tmp_path):
    d = json.loads((FIX / "hand_crafted_silence.json").read_text())
    d["history"].insert(1, {"content": "x" * 100_000, "role": "Orchestrator (thought)"})
    d["mistake_step"] = "99"  # now out of range
    p = tmp_path / "long.json"
    p.write_text(json.dumps(d, indent=4))  # `history` first, annotation after 100 KB
    assert b"mistake_agent" not in head(p)
    [(t, steps)], _ = parse(p)
    assert len(steps) == 14
    assert "mistake_step '99' is not an index into history" in t["anomalies"]


def test_mistake_agent_mismatch_is_an_anomaly(tmp_path):
    d = json.loads((FIX / "algorithm_generated_frames.json").read_text())
    d["mistake_step"] = "2"
    p = tmp_path / "mismatch.json"
    p.write_text(json.dumps(d))
    [(t, _)], _ = parse(p)
    assert "mistake_step 2 was said by 'Math_Expert', not 'Video_Expert'" in t["anomalies"]


def test_non_object_history_entry_keeps_indices(tmp_path):
    d = json.loads((FIX / "algorithm_generated_frames.json").read_text())
    d["history"][2] = "not a message"
    p = tmp_path / "entry.json"
    p.write_text(json.dumps(d))
    [(t, steps)], _ = parse(p)
    assert len(steps) == 6 and steps[2]["kind"] == "system" and steps[2]["text"] == "not a message"
    assert "history[2] is not a message object" in t["anomalies"]


@pytest.mark.parametrize(("name", "etype"), [("bad_history.json", "schema"), ("truncated.json", "truncated")])
def test_malformed_files_are_quarantined(name, etype):
    out, ctx = parse(FIX / name)
    assert out == []
    assert [q.error_type for q in ctx.quarantined] == [etype]
    assert ctx.records_seen == 1 and ctx.records_ingested == 0
    assert ctx.quarantined[0].raw == (FIX / name).read_bytes()  # kept as the file was, not by path only


def test_sniff_leaves_other_json_alone(tmp_path):
    a = get_adapter("who-and-when")
    p = tmp_path / "x.json"
    p.write_bytes(orjson.dumps({"history": [{"role": "user", "content": "hi"}], "other": 1}))
    assert not a.sniff(p, head(p))
    p.write_bytes(orjson.dumps([{"role": "user", "content": "hi"}]))
    assert not a.sniff(p, head(p))


def test_surfer_action_reports_are_tool_calls():
    [(t, steps)], ctx = parse(FIX / "hand_crafted_surfers.json")
    assert ctx.records_seen == 1 and not ctx.quarantined and len(steps) == 14
    kinds = [s["kind"] for s in steps]
    assert kinds == ["user", "reasoning", "assistant", "tool_call", "assistant"] + ["tool_call"] * 7 + [
        "assistant",
        "assistant",
    ]
    args = [json.loads(s["arguments"]) if s.get("arguments") else None for s in steps]
    # FileSurfer: the address is the path (URL-decoded); a failed transcription is an error
    opened = steps[3]
    assert opened["tool_name"] == "open_local_file" and args[3] == {"path": "/workspace/talk one.mp3"}
    assert opened["tool"] == "read" and opened["modality"] == "audio" and opened["is_error"] is True
    assert opened["agent_id"] == "FileSurfer" and "Could not transcribe" in opened["output"]
    # WebSurfer: the search box (by its character counter) is a web search
    assert steps[5]["tool_name"] == "web_search" and args[5] == {"query": "PyCon US 2019 keynote speakers"}
    assert steps[5]["tool"] == "web_search" and steps[5]["modality"] == "web"
    # a clicked label may span lines; page_url is the page clicked on: the search results the
    # previous report showed, not the page the click led to
    assert args[6] == {
        "action": "click",
        "target": "PyCon US 2019\nKeynotes",
        "page_url": "https://www.bing.com/search?q=PyCon+US+2019+keynote+speakers&form=QBLH",
    }
    assert args[7] == {"action": "scroll_down", "page_url": "https://us.pycon.org/2019/events/keynotes/"}
    # a visit goes to the typed address, whatever the page before was
    assert args[8] == {"action": "visit", "url": "https://us.pycon.org/2019/schedule/"}
    # a typed text with an apostrophe, into a named field
    assert (args[9]["action"], args[9]["text"], args[9]["field"]) == (
        "type",
        "Russell's keynote",
        "Search the schedule",
    )
    assert args[9]["page_url"] == "https://us.pycon.org/2019/schedule/"
    assert args[10] == {
        "action": "back",
        "page_url": "https://us.pycon.org/2019/schedule/?q=Russell%27s+keynote",
    }
    assert all(steps[i]["tool_name"] == "web_browser" and steps[i]["tool"] == "browser" for i in range(6, 11))
    assert all(steps[i]["is_error"] is False and steps[i]["output"] for i in range(5, 11))
    # FileSurfer that could not read its arguments: an error call without arguments, recorded
    assert steps[11]["tool_name"] == "open_local_file" and args[11] is None and steps[11]["is_error"] is True
    assert "history[11]: FileSurfer could not read its call's arguments" in t["anomalies"]
    # a WebSurfer summary is its text, and is the annotated step
    assert steps[12]["kind"] == "assistant" and steps[12]["agent_id"] == "WebSurfer"
    assert json.loads(t["metadata"])["who_and_when"]["mistake_step"] == 12
    assert t["final_answer"] == "3" and t["n_tool_calls"] == 8 and t["n_errors"] == 2


def test_surfer_messages_without_an_action_stay_text_and_file_contents_are_no_error(tmp_path):
    msgs = [
        {"role": "human", "content": "Q?"},
        {"role": "WebSurfer", "content": "I typed the answer carefully, then I clicked nothing."},
        {"role": "WebSurfer", "content": "FINAL ANSWER: 7"},
        {"role": "FileSurfer", "content": "The address of the file is unknown."},
        # the file's own contents may read like an error: only FileSurfer's header lines count
        {
            "role": "FileSurfer",
            "content": "Address: file:///w/log.txt\n=====\n" + "x\n" * 600 + "File not found: y",
        },
    ]
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"history": msgs, "mistake_agent": "WebSurfer", "mistake_step": 1}))
    [(t, steps)], _ = parse(f)
    assert [s["kind"] for s in steps] == ["user", "assistant", "assistant", "assistant", "tool_call"]
    assert t["final_answer"] == "7" and t["n_tool_calls"] == 1 and steps[4]["is_error"] is False


def test_a_huge_report_full_of_quotes_parses_in_linear_time(tmp_path):
    """`' into '` 100,000 times in one typed text (1 MB): a regex with two greedy groups would backtrack
    quadratically (minutes); the string search splits at the last one. 20,000 unclosed `[` after a
    report: the page-line search looks only near the report (a search over the whole text took 30 s)."""
    typed = "I typed '" + "' into 'x" * 100_000 + "' into 'Search'."
    clicked = "I clicked '" + "'." * 200_000 + "'."
    unclosed = "I clicked 'x'.\n\n" + "Here is a screenshot of [" * 20_000  # 500 KB, no `]`
    msgs = [{"role": "human", "content": "Q?"}, {"role": "WebSurfer", "content": typed}]
    msgs += [{"role": "WebSurfer", "content": clicked}, {"role": "WebSurfer", "content": unclosed}]
    f = tmp_path / "huge.json"
    f.write_text(json.dumps({"history": msgs, "mistake_agent": "WebSurfer", "mistake_step": 1}))
    [(_, steps)], ctx = parse(f)
    assert not ctx.quarantined
    typed_args = json.loads(steps[1]["arguments"])
    assert typed_args["field"] == "Search" and len(typed_args["text"]) == 900_000
    assert json.loads(steps[2]["arguments"])["action"] == "click"
    assert json.loads(steps[3]["arguments"]) == {"action": "click", "target": "x"}


@pytest.mark.corpus
def test_corpus_who_and_when(corpus_dir, tmp_path):
    src = corpus_dir / "who_and_when"
    files = sorted(src.rglob("*.json"))
    for f in files:
        adapter, tried = detect(f, head(f))
        assert adapter is not None and adapter.name == "who-and-when", (f, tried)
    report = ingest([src], tmp_path / "lab", workers=1, progress=False)
    assert report.records_seen == report.records_ingested == len(files) == 92
    lab = Lab.open(tmp_path / "lab")
    t = lab.read("trajectories").to_pylist()
    assert len(t) == 92 and {x["outcome"] for x in t} == {"failure"}
    steps = lab.read(
        "steps", ["trajectory_id", "step_index", "agent_id", "kind", "text", "metadata"]
    ).to_pylist()
    by_t: dict[str, dict[int, dict]] = {}
    for s in steps:
        by_t.setdefault(s["trajectory_id"], {})[s["step_index"]] = s
    n_hist = 0
    agree = 0
    for row in t:
        d = json.loads(Path(row["source_path"]).read_text())
        n_hist += len(d["history"])
        assert row["n_steps"] == len(d["history"])
        ann = json.loads(row["metadata"])["who_and_when"]
        ms = ann["mistake_step"]
        assert ms == int(d["mistake_step"])
        if 0 <= ms < row["n_steps"] and by_t[row["trajectory_id"]][ms]["agent_id"] == ann["mistake_agent"]:
            agree += 1
    assert len(steps) == n_hist == 2011
    # the annotated step index points at a message of the annotated agent in nearly every log
    assert agree == 89  # 3 annotations name an agent that did not speak at that index (recorded as anomalies)
    calls = [s for s in steps if s["kind"] == "tool_call"]
    by_agent: dict[str, int] = {}
    for s in calls:
        by_agent[s["agent_id"]] = by_agent.get(s["agent_id"], 0) + 1
    # code executions, and the Magentic-One surfers' action reports (their summaries stay text); the
    # terminals' 29 "no code to execute" notices are messages
    assert by_agent == {"Computer_terminal": 117, "ComputerTerminal": 2, "WebSurfer": 266, "FileSurfer": 17}
    notices = [
        s
        for s in steps
        if s["kind"] == "assistant" and json.loads(s.get("metadata") or "{}") == {"ran": False}
    ]
    assert len(notices) == 29 and all("code" in s["text"] for s in notices)


@pytest.mark.corpus
def test_corpus_sniff_claims_only_own_files(corpus_dir):
    """Sniff alone (priority aside) says yes to this format's corpus files and to nothing else."""
    claimed = claimed_by(corpus_dir, ["who-and-when"])
    assert claimed_folders(corpus_dir, claimed) == {"who_and_when"}
    assert len(claimed) == 92


@pytest.mark.parametrize(
    "name", ["hand_crafted_silence.json", "hand_crafted_surfers.json", "algorithm_generated_frames.json"]
)
def test_wrong_types_never_break_a_file(tmp_path, name):
    check_wrong_types("who-and-when", FIX / name, tmp_path)
