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


def test_find_links_to_the_frames_it_searches_not_to_any_png() -> None:
    from dagfix import edge_set

    r = Run()
    r.user("Read the text in clip.mp4")
    frames = r.bash("mkdir -p frames && ffmpeg -i clip.mp4 -vf fps=1 frames/%04d.png", "done")
    shots = r.bash("ffmpeg -i other.mp4 shots/%03d.png", "done")
    ocr = r.bash("find frames -name '*.png' -exec tesseract {} - \\;", "TOTAL 42")
    d = r.dag()
    data = edge_set(d, "data")
    assert (frames, ocr, "data") in data
    assert (shots, ocr, "data") not in data  # before: `-name '*.png'` matched the latest png writer
    assert edge(d, frames, ocr, "data")["artifact"] == "frames/*.png"
