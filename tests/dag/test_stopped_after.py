"""`stopped_after`: a run that acted and never answered gets its last action as a (weak) candidate."""

from __future__ import annotations

import json

from dagfix import Run

from trajlab.dag._candidates import SIGNALS


def _stopped(run: Run) -> list[dict]:
    return [c for c in run.dag().candidates if c["signal"] == "stopped_after"]


def test_the_last_action_of_a_run_without_an_answer_is_a_candidate() -> None:
    r = Run()
    r.user("Find the opening hours of the cafe.")
    r.say("Searching.")
    r.call("web_search", {"query": "cafe hours"}, "Cafe - opening hours vary")
    last = r.call("web_browser", {"action": "click", "target": "Cafe"}, "Cafe home page")
    [c] = _stopped(r)
    assert c["step_index"] == last and c["score"] == SIGNALS["stopped_after"]
    assert "stopped without an answer after step 3" in c["reason"]
    signals = [x["signal"] for x in r.dag().candidates]
    assert "no_final_answer" in signals and signals.index("no_final_answer") < signals.index("stopped_after")


def test_an_execution_the_run_stopped_after_names_the_author_of_its_code() -> None:
    r = Run()
    r.user("How many rows does data.csv have?")
    code = r.say("```python\nprint(len(open('data.csv').readlines()))\n```", agent_id="Coder")
    r.call(
        "python",
        {"code": "print(len(open('data.csv').readlines()))"},
        "exitcode: 0\n42",
        agent_id="Computer_terminal",
        metadata=json.dumps({"executes_step": code}),
    )
    [c] = _stopped(r)
    assert c["step_index"] == code and "written by step 1" in c["reason"]


def test_a_run_that_answered_or_never_acted_gets_none() -> None:
    r = Run()
    r.user("How many rows does data.csv have?")
    r.bash("wc -l data.csv", "42 data.csv")
    r.say("42")
    assert not _stopped(r)
    quiet = Run()
    quiet.user("Hello?")
    assert not _stopped(quiet) and not quiet.dag().candidates
