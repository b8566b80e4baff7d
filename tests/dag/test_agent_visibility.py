"""What each agent saw: values and paths an output showed link only steps of the agent that saw it
(a sub-agent sees its prompt, its parent only its report), while files are shared by every agent."""

from __future__ import annotations

from dagfix import Run, edge_set

SUB = {"agent_id": "a1", "depth": 1}


def _run(report: str, prompt: str = "Find the server port in config/dev.exs") -> tuple[Run, dict[str, int]]:
    r = Run()
    ix = {}
    ix["task"] = r.user("Put the dev server port into the docs")
    ix["spawn"] = r.call("Task", {"prompt": prompt}, report, tool="subagent")
    sub = {**SUB, "parent_step_index": ix["spawn"]}
    ix["prompt"] = r.user(prompt, **sub)
    ix["sub_grep"] = r.bash("grep -rn port config/dev.exs", "config/dev.exs:13:  http: [port: 4242]", **sub)
    ix["sub_write"] = r.bash("echo 'notes' > notes/found.txt", "", **sub)
    ix["report"] = r.say(report, **sub)
    return r, ix


def test_a_value_only_a_sub_agent_saw_does_not_feed_its_parent() -> None:
    r, _ = _run("The port is set in the dev config.")  # the report does not state it
    typed = r.bash("python3 serve.py --port 4242", "")
    d = r.dag()
    assert not [e for e in d.edges if e["dst"] == typed and e["artifact"] == "value:4242"]


def test_the_parent_takes_the_value_from_the_report() -> None:
    r, ix = _run("The dev server listens on port 4242.")
    typed = r.bash("python3 serve.py --port 4242", "")
    d = r.dag()
    srcs = {e["src"] for e in d.edges if e["dst"] == typed and e["artifact"] == "value:4242"}
    assert srcs and srcs <= {ix["report"], ix["spawn"]} and ix["sub_grep"] not in srcs
    # the report itself takes it from the sub-agent's own grep
    assert (ix["sub_grep"], ix["report"], "data") in edge_set(d, "data")


def test_a_sub_agent_does_not_see_its_parents_outputs_but_its_prompt() -> None:
    r = Run()
    r.user("Deploy build 731904")
    root_ls = r.bash("ls builds", "731904\n731905")
    spawn = r.call("Task", {"prompt": "Check the logs"}, "checked", tool="subagent")
    sub = {**SUB, "parent_step_index": spawn}
    r.user("Check the logs", **sub)
    guess = r.bash("./deploy --build 731905", "ok", **sub)  # 731905 was only in the parent's listing
    r.say("checked", **sub)
    d = r.dag()
    assert not [e for e in d.edges if e["src"] == root_ls and e["dst"] == guess]

    r2 = Run()
    r2.user("Deploy build 731904")
    r2.bash("ls builds", "731904\n731905")
    spawn = r2.call("Task", {"prompt": "Check logs/731905.log"}, "checked", tool="subagent")
    sub = {**SUB, "parent_step_index": spawn}
    prompt = r2.user("Deploy build 731905", **sub)
    guess = r2.bash("./deploy --build 731905", "ok", **sub)
    r2.say("checked", **sub)
    d2 = r2.dag()
    srcs = {e["src"] for e in d2.edges if e["dst"] == guess and e["type"] == "data"}
    assert prompt in srcs


def test_files_are_shared_by_every_agent() -> None:
    r, ix = _run("Wrote my notes.")
    read = r.bash("cat notes/found.txt", "notes")
    assert (ix["sub_write"], read, "data") in edge_set(r.dag(), "data")


def test_a_summarization_agent_sees_the_history_it_summarizes() -> None:
    r = Run()
    r.user("How long is clip.mp4?")
    probe = r.bash("ffprobe -count_frames clip.mp4", "nb_read_frames=2250")
    comp = r.compaction("Performed context summarization and handoff")
    sub = {"agent_id": "summary", "depth": 1, "parent_step_index": comp}
    r.user("Summarize your work so far", **sub)
    summary = r.say("Probed clip.mp4: it has 2250 frames.", **sub)
    d = r.dag()
    assert (probe, summary, "data") in edge_set(d, "data")


def test_terminus_handoff_questioner_sees_only_the_summary() -> None:
    # Terminus-2's handoff: the summary and answers agents get the history, the questioner (the next
    # agent) only the task and the summary, so a value it restates is not from the old history
    r = Run()
    r.user("Create test_dir with two files")
    made = r.bash("echo 'run-4711' > test_dir/file1.txt && cat test_dir/file1.txt", "run-4711")
    comp = r.compaction("Performed context summarization and handoff")
    base = "t-summarization-1-"
    s = {"depth": 1, "parent_step_index": comp}
    r.user("Summarize your work", agent_id=base + "summary", **s)
    r.say("Created test_dir.", agent_id=base + "summary", **s)
    r.user("You are picking up work. Ask questions.", agent_id=base + "questions", **s)
    q = r.say("Does test_dir/file1.txt hold run-4711?", agent_id=base + "questions", **s)
    r.user("Answer the next agent's questions", agent_id=base + "answers", **s)
    a = r.say("Yes: file1.txt holds run-4711.", agent_id=base + "answers", **s)
    d = r.dag()
    data = edge_set(d, "data")
    assert (made, a, "data") in data
    assert (made, q, "data") not in data
