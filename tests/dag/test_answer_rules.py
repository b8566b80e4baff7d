"""Answer-step and answer-claim rules found by an audit of Who&When, Terminal-Bench, SWE-agent, ATIF and
OTel runs (DAG_VERSION 29)."""

from __future__ import annotations

from dagfix import Run, edge_set

from trajlab.dag._nodes import node_status

_NOISE = (
    "Error processing publish message\nTraceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.11/site-packages/autogen_core/_runtime.py", line 410, in _process\n'
    "UserWarning: Resolved model mismatch: gpt-4o-2024-08-06 != gpt-4o-2024-05-13.\n"
    "Max rounds (30) reached.\n"
)


def _node(d, i: int) -> dict:
    return next(n for n in d.nodes if n["node_id"] == i)


def test_only_the_final_answer_line_is_claimed() -> None:
    # Who&When t_089375e967302956: "Max rounds (30) reached." in the last message linked a `30` to it
    r = Run(final_answer="3")
    r.user("How many albums?")
    rounds = r.call("web_search", {"query": "rounds 30"}, output="the 30 rounds of the contest")
    count = r.bash("python3 count.py", "3")
    ans = r.say(_NOISE + "FINAL ANSWER: 3\nSCENARIO.PY COMPLETE !#!#")
    d = r.dag()
    answer = {(e["src"], e["artifact"]) for e in d.edges if e["type"] == "answer"}
    assert d.metrics["answer_step"] == ans
    assert (count, "value:3") in answer and not any(src == rounds for src, _ in answer)


def test_the_final_answer_appended_to_the_last_record_makes_it_the_answer_step() -> None:
    # Magentic-One t_4a22c4c026250197: the last record (a WebSurfer's) ends "FINAL ANSWER: 1976"
    r = Run(final_answer="1976")
    r.user("When was it founded?")
    r.say("Let me look it up.")
    page = r.call("web_browser", {"url": "https://x.org"}, output="Founded in 1976 in Ohio")
    last = r.call("web_browser", {"url": "https://x.org/about"}, output="About us\nFINAL ANSWER: 1976")
    d = r.dag()
    assert d.metrics["answer_step"] == last
    assert (page, last, "answer") in edge_set(d, "answer")


def test_a_code_runner_turn_with_no_code_is_no_action_after_the_answer() -> None:
    # Who&When t_c825281b...: the conclusion, "There is no code ... to execute", then a bare TERMINATE
    r = Run()
    r.user("Solve the coin puzzle")
    concl = r.say("I agree with the steps: the minimum is 16 coins.")
    r.call(
        "execute_code",
        "",
        output="There is no code from the last 1 message for me to execute.",
        exit_code=None,
    )
    r.say("TERMINATE")
    assert r.dag().metrics["answer_step"] == concl


def test_terminal_bench_keystrokes_are_sequential_claim_nothing_and_setup_is_no_dead_end() -> None:
    r = Run()
    r.trajectory["runner"] = "terminal_bench"
    r.trajectory["outcome"] = "success"
    r.user("Write 42 to /app/a.txt")
    setup = '{"phase": "setup"}'
    rec = r.bash("asciinema rec --stdin /logs/agent.cast", "", exit_code=None, metadata=setup)
    w = r.bash("echo 42 > /app/a.txt", "", exit_code=None, parallel=True)
    c = r.bash("cat /app/a.txt", "42", exit_code=None, parallel=True)
    keys = r.call("terminal_keys", {"keys": ["mini -m anthropic/claude-sonnet-4-0", "Enter"]}, output="")
    d = r.dag()
    assert all(n["parallel_batch"] is None for n in d.nodes)  # 0.0 s apart, yet one after the other
    assert (w, c, "data") in edge_set(d, "data")
    assert d.metrics["answer_step"] == keys
    assert not _node(d, rec)["is_dead_end"]
    assert not any(c["signal"] in ("answer_unsupported", "unobserved_source") for c in d.candidates)


def test_git_hunk_context_is_no_claim_of_a_diff_answer() -> None:
    # SWE-agent t_a9bf4b23699a8f4b: `@@ -285,9 +285,10 @@ def get_pixeldata(...) -> "np.ndarray":`
    r = Run()
    r.user("Fix the pixel data bug")
    r.call("open", {"command": "open pkg/h.py"}, "[File: /r/pkg/h.py]\n285:x = 1", exit_code=None)
    shows = r.bash("grep -rn pixels docs/", "docs/a.md:3: returns an ndarray of pixels")
    diff = (
        "diff --git a/pkg/h.py b/pkg/h.py\n--- a/pkg/h.py\n+++ b/pkg/h.py\n"
        "@@ -285,9 +285,10 @@ def get_pixeldata(ds) -> ndarray:\n-    x = 1\n+    x = 2\n"
    )
    sub = r.call("submit", {"command": "submit"}, output=diff, exit_code=None)
    d = r.dag()
    assert d.metrics["answer_step"] == sub
    assert (shows, sub, "answer") not in edge_set(d, "answer")


def test_a_sub_agent_report_links_to_the_directory_it_names() -> None:
    # ATIF t_d0b4637cf8ffcfe4: "All test files are located in /app/test_dir/" had no edge from `mkdir`
    r = Run()
    r.user("Create test files")
    mk = r.bash("mkdir /app/test_dir", "")
    r.bash("echo test1 > /app/test_dir/file1.txt", "")
    r.steps.append(
        {
            **r.steps[-1],
            "step_index": len(r.steps),
            "kind": "assistant",
            "agent_id": "summary-1",
            "parent_step_index": 2,
            "depth": 1,
            "text": "All test files are located in /app/test_dir/. The working directory is /app/.",
            "tool_name": None,
            "tool": None,
            "command": None,
        }
    )
    d = r.dag()
    e = {(x["src"], x["artifact"]) for x in d.edges if x["dst"] == 3 and x["type"] == "data"}
    assert (mk, "/app/test_dir") in e
    assert not any(a == "/app" for _, a in e)


def test_a_page_that_did_not_load_is_an_error() -> None:
    # Who&When t_b2a60884c93639ea: "This site can't be reached ... DNS_PROBE_FINISHED_NXDOMAIN"
    page = "screenshot of [www.ensembl.org](chrome-error://chromewebdata/) This site can't be reached"
    step = {"kind": "tool_call", "tool": "browser", "output": page, "exit_code": None}
    assert node_status(step) == "error"
    assert node_status({**step, "output": "Ensembl genome browser: GFF3 downloads"}) == "ok"
    assert node_status({**step, "tool": "cat"}) == "ok"  # a file that quotes the error page


def test_an_answer_with_no_evidence_step_at_all_is_not_singled_out_as_unsupported() -> None:
    # OTel t_2f9a8755...: a model answering "3 + 3 equals 6." with no tool: nothing to support it with
    r = Run(final_answer="3 + 3 equals 6.")
    r.user("What is 3 + 3?")
    r.say("3 + 3 equals 6.")
    assert not any(c["signal"].startswith("answer_") for c in r.dag().candidates)
    r2 = Run(final_answer="It is 42.")
    r2.user("What is the answer?")
    r2.bash("ls", "notes.txt")
    ans = r2.say("It is 42.")
    signals = {(c["step_index"], c["signal"]) for c in r2.dag().candidates}
    assert signals & {(ans, "answer_unsupported"), (ans, "answer_value_unsupported")}


def _executor_run(last: str) -> tuple[Run, int]:
    r = Run()
    r.user("Transcribe the audio")
    code = r.say("```python\nprint('hi')\n```")
    r.call("execute_code", "print('hi')", output="hi", exit_code=0, metadata=f'{{"executes_step": {code}}}')
    return r, r.say(last)


def test_a_cut_off_message_handing_code_to_the_executor_is_no_answer() -> None:
    # Who&When t_3027934611bf7b88: the last message asks to run an ffmpeg script; nothing ran it
    r, last = _executor_run("Please run this:\n```sh\nffmpeg -i v.mp4 a.mp3\n```")
    d = r.dag()
    assert d.metrics["answer_step"] is None
    assert any(c["signal"] == "no_final_answer" for c in d.candidates)
    r, last = _executor_run("The transcript says hi.")
    assert r.dag().metrics["answer_step"] == last


def test_the_answering_agents_own_messages_are_no_support_and_idle_executors_no_dead_ends() -> None:
    # Who&When t_a65ddb7aa95613b9: the Orchestrator's own "search for 'Ethan Zohn birthdate'" supported
    # its "FINAL ANSWER: Ethan Zohn"; the WebSurfer page showing the name did not
    r = Run(final_answer="Ethan Zohn")
    r.user("Which winner was born in May?")
    page = r.call("web_browser", {"url": "https://x.org/survivor"}, output="Winner: Ethan Zohn (born 1973)")
    own = r.say("Please search specifically for 'Ethan Zohn birthdate' to verify.", agent_id="Orchestrator")
    idle = r.call(
        "execute_code",
        "",
        output="There is no code from the last 1 message for me to execute.",
        exit_code=None,
    )
    ans = r.say("FINAL ANSWER: Ethan Zohn", agent_id="Orchestrator")
    d = r.dag()
    answer = {(e["src"], e["dst"]) for e in d.edges if e["type"] == "answer"}
    assert (page, ans) in answer and (own, ans) not in answer
    assert not _node(d, idle)["is_dead_end"]


def test_a_failed_program_wrote_nothing_and_a_click_elsewhere_is_no_retry() -> None:
    # Who&When t_3027934611bf7b88: `ffmpeg` not found (127) was credited with writing the mp3
    r = Run()
    r.user("Transcribe v.mp4")
    ff = r.bash("ffmpeg -i v.mp4 a.mp3 > ff.log 2>&1", "sh: 1: ffmpeg: not found", exit_code=127)
    wh = r.bash("whisper a.mp3", "Error: a.mp3 not found", exit_code=1)
    log = r.bash("cat ff.log", "sh: 1: ffmpeg: not found")
    # t_b2a60884c93639ea: a failed click on 'Ensembl' was "retried" by a click on another site
    bad = r.call("web_browser", {"action": "click", "target": "Ensembl"}, output="This site can't be reached")
    other = r.call("web_browser", {"action": "click", "target": "NCBI Genome"}, output="NCBI genome page")
    d = r.dag()
    data = edge_set(d, "data")
    assert (ff, wh, "data") not in data and (ff, log, "data") in data
    assert (bad, other, "retry") not in edge_set(d, "retry")


def test_an_executor_run_of_code_blocks_reads_and_writes_what_its_blocks_do() -> None:
    # Who&When t_d45074a429b6e73d: the unzip printed `inflating: /workspace/unzipped_data/a.csv`; the next
    # run's Python block reads it (stored as `{"code_blocks": [...]}`, which was not parsed)
    r = Run()
    r.user("Which countries grew?")
    unzip = r.call(
        "execute_code",
        {"code_blocks": [{"language": "sh", "code": "unzip data.zip -d /workspace/unzipped_data"}]},
        output="inflating: /workspace/unzipped_data/a.csv",
    )
    code = "import pandas as pd\ndf = pd.read_csv('/workspace/unzipped_data/a.csv')\ndf.to_csv('out.csv')"
    read = r.call("execute_code", {"code_blocks": [{"language": "python", "code": code}]}, output="done")
    d = r.dag()
    assert (unzip, read, "data") in edge_set(d, "data")


def test_a_question_with_an_expected_answer_hands_in_no_files() -> None:
    # Who&When (GAIA questions): a CaptainAgent run wrote a download script on the way to a number; the
    # script was an answer edge (`answer-final-write`) as if the run had handed in a diff
    for expected in ("17", None):
        r = Run(final_answer="17")
        if expected:
            r.trajectory["expected_answer"] = expected
        r.user("How many studio albums did the band release?")
        w = r.bash("cat > fetch.py <<'EOF'\nprint(17)\nEOF", "")
        run = r.bash("python3 fetch.py", "17")
        ans = r.say("FINAL ANSWER: 17")
        answers = {(e["src"], e["rule"]) for e in r.dag().edges if e["type"] == "answer" and e["dst"] == ans}
        assert (run, "answer-value") in answers
        # a code task (no expected answer) still hands in the file it wrote
        assert ((w, "answer-final-write") in answers) is (expected is None)


def test_the_session_recorder_is_no_call_without_result() -> None:
    """Terminal-Bench's harness starts `asciinema rec` first: it records until the session ends, so the
    cast holds no result of it (every Terminal-Bench run of the corpus had this anomaly). Another call
    whose result is missing still is one."""
    r = Run()
    r.trajectory["runner"] = "terminal_bench"
    r.user("Write 42 to /app/a.txt")
    setup = '{"phase": "setup"}'
    r.bash("asciinema rec --stdin /logs/agent.cast", None, exit_code=None, metadata=setup)  # type: ignore[arg-type]
    lost = r.bash("echo 42 > /app/a.txt", None, exit_code=None)  # type: ignore[arg-type]
    d = r.dag()
    assert [a for a in d.anomalies if a.startswith("call without result")] == [
        f"call without result at step {lost} (call id call_{lost})"
    ]
