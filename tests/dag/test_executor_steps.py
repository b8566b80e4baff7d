"""Code executors (Who&When's Computer_terminal): the step that wrote the code is the decision."""

from __future__ import annotations

import json

from dagfix import Run, edge


def _groupchat(exit_code: int) -> Run:
    r = Run(final_answer=None)
    r.user("How many rows does data.csv have, minus the header?")
    r.say("Plan: count the rows with Python.", agent_id="Planner")
    code = r.say(
        "```python\nimport csv\nprint(len(list(csv.reader(open('data.csv')))) - 2)\n```", agent_id="Coder"
    )
    run = r.call(
        "execute_code",
        {"code_blocks": [["python", "import csv\n..."]]},
        "exitcode: 1 (execution failed)\nTraceback: FileNotFoundError" if exit_code else "exitcode: 0\n41",
        exit_code=exit_code,
        agent_id="Computer_terminal",
        metadata=json.dumps({"executes_step": code}),
    )
    assert (code, run) == (2, 3)
    r.say("The answer is 41.", agent_id="Coder")
    return r


def test_the_execution_depends_on_the_message_whose_code_it_ran() -> None:
    d = _groupchat(0).dag()
    e = edge(d, 2, 3, "data")
    assert e["rule"] == "executes" and e["artifact"] == "code:step2"


def test_a_failed_execution_names_the_author_of_the_code_as_the_candidate() -> None:
    d = _groupchat(1).dag()
    top = d.candidates[0]
    assert top["step_index"] == 2, d.candidates
    assert "written by step 2" in top["reason"]
    assert 3 not in [c["step_index"] for c in d.candidates if c["signal"] != "first_error"]


def test_a_bad_executes_step_is_ignored() -> None:
    for bad in (3, 7, -1, "2", True, None):
        r = _groupchat(1)
        r.steps[3]["metadata"] = json.dumps({"executes_step": bad})
        d = r.dag()
        assert d.candidates[0]["step_index"] == 3, (bad, d.candidates)
        assert not [e for e in d.edges if e["rule"] == "executes"]
    r = _groupchat(1)
    r.steps[3]["metadata"] = '{"executes_step": 2'  # torn JSON
    assert r.dag().candidates[0]["step_index"] == 3
