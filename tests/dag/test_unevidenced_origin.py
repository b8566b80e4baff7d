"""`unevidenced_origin`: an answer value that no tool output, argument or input shows is traced to the
first message that states it (a claim from memory, a misread page retold, head arithmetic)."""

from __future__ import annotations

from dagfix import Run

from trajlab.dag._candidates import ORIGIN_MAX_STATEMENTS, SIGNALS


def _origins(run: Run) -> list[dict]:
    return [c for c in run.dag().candidates if c["signal"] == "unevidenced_origin"]


def _chat(
    claim: str, output: str = "Results: the 2019 keynote page", final: str = "FINAL ANSWER: 1987"
) -> Run:
    r = Run(final_answer=final.removeprefix("FINAL ANSWER: "))
    r.user("In which year did the lighthouse open?")
    r.say("I will look it up.", agent_id="Planner")
    r.call("web_search", {"query": "lighthouse opening year"}, output, agent_id="WebSurfer")
    r.say(claim, agent_id="Historian")
    r.say("Checked.", agent_id="Verifier")
    r.say(f"Summary of the discussion.\n{final}", agent_id="Planner")
    return r


def test_a_value_first_stated_by_a_message_is_traced_to_it() -> None:
    r = _chat("From what I remember it opened in 1987.")
    [c] = _origins(r)
    assert c["step_index"] == 3 and c["score"] == SIGNALS["unevidenced_origin"]
    assert "'1987'" in c["reason"] and "step 5" in c["reason"] and c["term"] == "1987"
    assert r.dag().candidates[0]["step_index"] == 3


def test_a_value_a_tool_output_shows_has_evidence() -> None:
    assert not _origins(_chat("It opened in 1987.", output="The lighthouse opened in 1987."))
    # not inside a longer number or name: 1987 in 19870 or v1987x is not the value
    assert _origins(_chat("It opened in 1987.", output="ids 19870 and v1987x"))


def test_shown_texts_are_searched_apart() -> None:
    """Each shown text is searched on its own: a value is not made of the end of one text and the start
    of the next, and a text's edge is a boundary like a string's."""

    def run(output: str, reply: str) -> Run:
        r = Run(final_answer="1987")
        r.user("In which year did the lighthouse open?")
        r.call("web_search", {"query": "lighthouse"}, output, agent_id="WebSurfer")
        r.user(reply)  # shown right after the output
        r.say("It opened in 1987.", agent_id="Historian")
        r.say("Summary.\nFINAL ANSWER: 1987", agent_id="Planner")
        return r

    [c] = _origins(run("the archive lists 19", "87 pages more?"))
    assert c["step_index"] == 3
    assert not _origins(run("opened: 1987", "more?"))
    assert not _origins(run("more", "1987, it says"))


def test_a_value_typed_into_a_tool_argument_has_evidence() -> None:
    r = _chat("It opened in 1987.")
    r.steps[2]["arguments"] = '{"query": "lighthouse opened 1987"}'
    assert not _origins(r)


def test_values_of_the_task_and_words_said_only_by_the_answer_are_not_traced() -> None:
    r = _chat("It opened in 1987.")
    r.trajectory["task"] = r.steps[0]["text"] = "Did the lighthouse open in 1987?"
    assert not _origins(r)
    only_answer = _chat("I do not know yet.")
    assert not _origins(only_answer)  # the answer alone states it: answer_unsupported's case
    assert only_answer.dag().candidates[0]["signal"] == "answer_unsupported"


def test_only_the_final_answer_line_of_a_long_message_counts() -> None:
    chatter = " ".join(["Many experts discussed Boston and Chicago at length in 2020."] * 10)
    r = _chat("Boston is the answer, from memory; 1987 too.", final="FINAL ANSWER: 1987")
    r.steps[5]["text"] = chatter + "\nFINAL ANSWER: 1987"
    [c] = _origins(r)
    assert "'1987'" in c["reason"]  # Boston, Chicago and 2020 are in the message, not the final answer


def test_names_are_traced_in_any_case_of_evidence_and_plain_words_are_not() -> None:
    r = _chat("The keeper was Marguerite.", final="FINAL ANSWER: Marguerite, tall")
    r.steps[4]["text"] = "Checked: the tower is tall."
    [c] = _origins(r)  # a plain word (tall) is no claim to trace
    assert c["step_index"] == 3 and "'Marguerite'" in c["reason"]
    assert not _origins(
        _chat("It was Marguerite.", output="KEEPER: MARGUERITE", final="FINAL ANSWER: Marguerite")
    )


def test_a_term_stated_by_too_many_messages_is_common_talk() -> None:
    r = Run(final_answer="42")
    r.user("How many stones are in the wall?")
    r.call("web_search", {"query": "stones"}, "no results")
    for _ in range(ORIGIN_MAX_STATEMENTS + 1):
        r.say("Maybe 42.", agent_id="Guesser")
    r.say("FINAL ANSWER: 42")
    assert not _origins(r)
    r.steps = r.steps[: 2 + ORIGIN_MAX_STATEMENTS] + r.steps[-1:]
    for i, s in enumerate(r.steps):
        s["step_index"] = i
    [c] = _origins(r)
    assert c["step_index"] == 2


def test_no_answer_or_an_action_answer_gives_no_origin() -> None:
    r = _chat("It opened in 1987.")
    r.bash("echo done", "done")  # the run acted after its last message: it never answered
    assert not _origins(r)
    sub = Run(final_answer="1987")
    sub.user("In which year did the lighthouse open?")
    sub.say("It opened in 1987.")
    sub.call("submit", {"answer": "1987"}, "")
    assert not _origins(sub)


def test_statements_after_the_model_viewed_an_image_are_not_traced() -> None:
    r = _chat("It opened in 1987.")
    r.steps.insert(
        3,
        {
            **r.steps[2],
            "tool_name": "view_image",
            "tool": "image_read",
            "modality": "image",
            "arguments": '{"path": "plaque.png"}',
            "output": "[image: image/png]",
        },
    )
    for i, s in enumerate(r.steps):
        s["step_index"] = i
    assert not _origins(r)  # the year may be read off the plaque, which the log holds as no text


def test_a_value_worked_out_in_a_message_outranks_the_unused_branch_it_leaves() -> None:
    """The answer's number is the message's, so the audio branch never reaches the answer: the message
    that produced the number is the decision, not the answer that repeats it."""
    r = Run(domain="audio", final_answer="219")
    r.user("What do the two amounts in clip.wav add up to?")
    r.bash("whisper clip.wav --output_format txt && cat clip.txt", "first 130 dollars, then 88 dollars")
    said = r.say("Adding them up: 130 + 88 = 219.")
    r.say("The answer is 219.")
    cands = r.dag().candidates
    assert (cands[0]["step_index"], cands[0]["signal"]) == (said, "unevidenced_origin")
    assert "answer_without_modality" in [c["signal"] for c in cands]
