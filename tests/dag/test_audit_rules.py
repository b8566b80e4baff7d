"""Rules fixed after an audit of corpus DAGs: directories a step created, line-number prefixes in
outputs, Codex router failures (each test names the run it mirrors)."""

from __future__ import annotations

import json

from dagfix import Run, edge, edge_set

from trajlab.dag._nodes import node_status


def _values(d) -> set[tuple[int, int, str]]:
    return {
        (e["src"], e["dst"], e["artifact"]) for e in d.edges if (e["artifact"] or "").startswith("value:")
    }


def _node(d, i: int) -> dict:
    return next(n for n in d.nodes if n["node_id"] == i)


# -- 1. a write or read under a directory an earlier step created -----------------------------------


def test_a_write_into_a_created_directory_links_to_the_mkdir() -> None:
    # ATIF t_d0b4637cf8ffcfe4: `mkdir test_dir` (step 2) was a dead end though step 4 writes into it
    r = Run()
    r.user("Create test_dir with two files")
    mk = r.bash("mkdir test_dir", "")
    w1 = r.bash("echo 'test1' > test_dir/file1.txt", "")
    w2 = r.bash("echo 'test2' > test_dir/file2.txt", "")
    cat = r.bash("cat test_dir/file1.txt", "test1")
    d = r.dag()
    e = edge(d, mk, w1, "data")
    assert (e["artifact"], e["rule"]) == ("test_dir", "created-dir")
    assert (mk, w2, "data") in edge_set(d, "data")
    assert edge(d, w1, cat, "data")["rule"] == "redirect"
    assert (mk, cat, "data") not in edge_set(d, "data")  # the file's own writer is the closer producer
    assert not _node(d, mk)["is_dead_end"]


def test_reads_under_created_directories_link_to_their_creator() -> None:
    r = Run()
    r.user("Count the frames of clip.mp4 and read the repo's README")
    mk = r.bash("mkdir -p frames", "")
    ff = r.bash("ffmpeg -i clip.mp4 -vf fps=1 frames/%03d.png", "")
    ls = r.bash("ls frames/", "001.png\n002.png")
    cl = r.bash("git clone https://github.com/x/y.git", "Cloning into 'y'...")
    rd = r.bash("cat y/docs/README.md", "hello")
    d = r.dag()
    assert edge(d, mk, ff, "data")["rule"] == "created-dir"  # ffmpeg writes frames/%03d.png into it
    assert (ff, ls, "data") in edge_set(d, "data")  # `ls frames/`: the directory's latest writer
    e = edge(d, cl, rd, "data")
    assert (e["artifact"], e["rule"]) == ("y", "created-dir")


def test_a_directory_written_into_is_not_a_created_directory() -> None:
    r = Run()
    r.user("Edit the sources")
    w = r.bash("echo 'x = 1' > src/a.py", "")
    rd = r.bash("cat src/b.py", "y = 2")
    assert (w, rd, "data") not in edge_set(r.dag(), "data")


# -- 2. line-number prefixes in outputs are not values ----------------------------------------------


def test_value_use_tells_line_numbers_from_values() -> None:
    from trajlab.dag._tokens import value_use

    assert value_use("src/app.ts:180:  const x = 1", "180") == 2  # grep -rn
    assert value_use("    90→  let y = 3", "90") == 2  # Claude Code Read
    assert value_use("   120\t        elif mode", "120") == 2  # cat -n, OpenHands view
    assert value_use("895:def _add_slots(ctx)", "895") == 2  # grep -n FILE, SWE-agent's editor
    assert value_use("src/a.py:12:15: E501", "15") == 2  # line:column of a linter
    assert value_use("Item 1 came in at 120 thousand", "120") == 1
    assert value_use("2019\t345", "2019") == 1  # a TSV row: no padding, a value
    assert value_use("Total: 120", "120") == 1 and value_use("foo:180: bar", "180") == 1
    assert value_use("a.py:180: x\ncount 180", "180") == 1  # also printed as a value
    assert value_use("1800", "180") == 0


def test_line_numbers_printed_by_grep_and_read_are_no_typed_values() -> None:
    # Claude Code / OpenHands: a Read shows `   120→`, `grep -rn` shows `src/app.ts:180:`; numbers typed
    # later into code come from neither; a view of the line a grep found still does
    r = Run()
    r.user("Fix the timeout handling")
    rd = r.call(
        "Read",
        {"file_path": "/w/app/config.py"},
        "".join(f"{k:>6}→x = {k}\n" for k in range(1, 4)) + "   120→    pool = 3\n",
    )
    g = r.bash("grep -rn timeout src/", "src/app.ts:180:  const timeout = fetch(url)\nsrc/b.ts:300:  x")
    w = r.call("Write", {"file_path": "/w/app/new.py", "content": "POOL = 120\nTIMEOUT = 180\n"}, "ok")
    g1 = r.bash("grep -n limit /w/src/b.ts", "300:  const limit = 3")
    v = r.call(
        "str_replace_editor",
        {"command": "view", "path": "/w/src/b.ts", "view_range": "[300, 180]"},
        "   300\t  const limit = 3",
    )
    d = r.dag()
    vals = _values(d)
    assert not any(src in (rd, g) and dst == w for src, dst, _ in vals)
    assert (g1, v, "value:300") in vals  # the start of the view is the line grep printed
    assert not any(art == "value:180" and dst == v for _, dst, art in vals)  # a string view_range's end


# -- 3. a Codex router failure is an error ----------------------------------------------------------


def _codex_run(poll_output: str) -> tuple[Run, dict[str, int]]:
    # Codex t_70cfa7a0f26a53e1: `exec_command` still running, `write_stdin` of Ctrl-C refused, a poll
    r = Run()
    r.user("Read the skill")
    ix = {}
    ix["cmd"] = r.call(
        "exec_command", {"cmd": "sed -n '1,220p' SKILL.md"}, "Process running with session ID 20936"
    )
    meta = json.dumps({"polls": f"call_{ix['cmd']}", "session_id": "20936"})
    ix["stdin"] = r.call(
        "write_stdin",
        {"session_id": 20936, "chars": "\u0003"},
        poll_output,
        exit_code=None,
        tool="write_stdin",
        metadata=meta,
    )
    ix["poll"] = r.call(
        "write_stdin", {"session_id": 20936, "chars": ""}, "---\nname: skill", tool="poll", metadata=meta
    )
    r.say("Done.")
    return r, ix


def test_a_refused_write_stdin_is_an_error_recovered_by_the_next_poll() -> None:
    r, ix = _codex_run(
        "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open"
    )
    d = r.dag()
    assert _node(d, ix["stdin"])["status"] == "error"
    assert d.metrics["first_error_step"] == ix["stdin"] and d.metrics["n_unrecovered_errors"] == 0
    assert not any(c["signal"].startswith("unrecovered") for c in d.candidates)


def test_outputs_that_only_mention_failures_are_not_errors() -> None:
    r, ix = _codex_run("Traceback: write_stdin failed: earlier in the log, an error")
    assert _node(r.dag(), ix["stdin"])["status"] == "ok"
    row = {"kind": "tool_call", "tool_name": "Bash", "exit_code": 0}
    assert node_status({**row, "output": "write_stdin failed: stdin is closed (grep of a log)"}) == "ok"
    assert node_status({**row, "tool_name": "exec_command", "output": "exec_command failed: x"}) == "error"
    assert node_status({**row, "tool_name": "exec_command", "output": "3 errors, 0 failed: ok"}) == "ok"


def test_find_links_to_the_frames_it_searches_not_to_any_png() -> None:
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


def test_an_earlier_hand_in_is_no_dead_end() -> None:
    # ATIF t_6b1cd97fb00f3568: Terminus-2 asks "Are you sure?" after the first mark_task_complete
    r = Run()
    r.user("Create hello.txt")
    w = r.bash("printf 'Hello, world!\\n' > hello.txt", "")
    first = r.call("mark_task_complete", {}, output="Are you sure you want to mark the task as complete?")
    last = r.call("mark_task_complete", {}, output="")
    d = r.dag()
    assert d.metrics["answer_step"] == last
    assert not _node(d, first)["is_dead_end"]
    assert _node(d, w)["status"] == "ok"


def test_agent_clis_and_recorders_read_no_flag_values() -> None:
    # Terminal-Bench t_9bbbb8cb24d5201f: `mini -m anthropic/claude-sonnet-4-0` read a file of that name,
    # and `asciinema rec --stdin /logs/agent.cast` read the recording it writes
    r = Run()
    r.user("Create hello.txt")
    rec = r.bash("asciinema rec --stdin /logs/agent.cast", "", exit_code=None)
    mini = r.bash("mini -m anthropic/claude-sonnet-4-0 -t 'Create hello.txt' -y", "done")
    play = r.bash("asciinema play -i 2 /logs/agent.cast", "")
    claude = r.bash("claude -p 'fix it' --model claude-opus-4-1 notes/todo.md", "ok")
    d = r.dag()
    assert _node(d, rec)["produces"] == ["/logs/agent.cast"] and _node(d, rec)["consumes"] == []
    assert _node(d, mini)["consumes"] == []
    assert edge(d, rec, play, "data")["artifact"] == "/logs/agent.cast"
    assert _node(d, claude)["consumes"] == ["notes/todo.md"]


def test_a_terminal_bench_run_answers_with_the_state_its_last_action_left() -> None:
    # Terminal-Bench t_9bbbb8cb24d5201f passed its tests but was ranked `no_final_answer`
    def run(runner: str) -> tuple[Run, int]:
        r = Run()
        r.trajectory["runner"] = runner
        r.user("Create a file called hello.txt")
        r.bash("source /installed-agent/setup-env.sh", "")
        last = r.bash("mini -m anthropic/claude-sonnet-4-0 -t 'Create hello.txt' -y", "", exit_code=None)
        return r, last

    r, last = run("terminal_bench")
    d = r.dag()
    assert d.metrics["answer_step"] == last
    assert not any(c["signal"] in ("no_final_answer", "stopped_after") for c in d.candidates)
    r, last = run("codex")  # a message-answering runner that stopped acting never answered
    d = r.dag()
    assert d.metrics["answer_step"] is None
    assert any(c["signal"] == "no_final_answer" for c in d.candidates)


def test_autogenbench_end_markers_are_no_answer_terms() -> None:
    # Who&When t_22e933859f246277: `COMPLETE` of "SCENARIO.PY COMPLETE !#!#" linked a web search to the answer
    r = Run(final_answer="70")
    r.user("How many studio albums did the band release?")
    search = r.call("web_search", {"query": "band albums"}, output="results...\nSCENARIO.PY COMPLETE !#!#")
    count = r.bash("python3 count.py", "70")
    ans = r.say("FINAL ANSWER: 70\nSCENARIO.PY COMPLETE !#!#\nRUN.SH COMPLETE !#!#")
    d = r.dag()
    assert d.metrics["answer_step"] == ans
    assert edge(d, count, ans, "answer")["artifact"] == "value:70"
    assert (search, ans, "answer") not in edge_set(d, "answer")


def test_a_hand_in_without_a_logged_result_is_ok_and_no_anomaly() -> None:
    # OpenHands t_fabcbafecb4ab640 step 4: `finish` got `call without result` and status no-output
    r = Run()
    r.user("Write the game")
    r.call("Write", {"file_path": "/w/game.py", "content": "print(1)"}, output="File created")
    fin = r.call("finish", {"message": "done"}, output=None, exit_code=None)
    d = r.dag()
    assert _node(d, fin)["status"] == "ok"
    assert not any("call without result" in a for a in d.metrics["anomalies"])
    # any other call without a result still is one
    r2 = Run()
    r2.user("Check the file")
    ls = r2.bash("ls /w", None, exit_code=None)
    d2 = r2.dag()
    assert _node(d2, ls)["status"] == "no-output"
    assert any("call without result" in a for a in d2.metrics["anomalies"])


def test_every_piece_of_a_polled_command_before_its_outcome_is_ok_and_no_dead_end() -> None:
    # Codex t_70cfa7a0f26a53e1 steps 129-133: empty polls of a running `npm run build` were `no-output`
    # dead ends; only the last poll counted as the command's piece
    r = Run()
    r.user("Build the app")
    cmd = r.call("exec_command", {"cmd": "npm run build"}, "Process running with session ID 98003")
    meta = json.dumps({"polls": f"call_{cmd}", "session_id": "98003"})
    polls = [
        r.call(
            "write_stdin", {"session_id": 98003, "chars": ""}, out, exit_code=code, tool="poll", metadata=meta
        )
        for out, code in (("", None), ("> vite build", None), ("", None), ("built in 3.1s", 0))
    ]
    r.say("The build passes.")
    d = r.dag()
    for p in polls[:-1]:
        assert _node(d, p)["status"] == "ok" and not _node(d, p)["is_dead_end"]
    assert _node(d, cmd)["status"] == "ok"
    assert all((cmd, p, "data") in edge_set(d, "data") for p in polls)


def test_a_failure_is_retried_by_the_most_similar_command_of_the_window() -> None:
    # chat-messages t_72078f957d67b7fa: the failed `python reproduce.py` (step 23) was "retried" by the
    # probe `python -c "import moto; print(dir(moto))"` (similarity 0.58) before the closer step 33 (0.77)
    r = Run()
    r.user("Fix the athena bug")
    fail = r.bash("cd /testbed && python reproduce.py", "ImportError: cannot import name", exit_code=1)
    probe = r.bash('cd /testbed && python -c "import moto; print(dir(moto))"', "['mock_aws']")
    rerun = r.bash("cd /testbed && python test_athena.py", "ok")
    d = r.dag()
    retries = edge_set(d, "retry")
    assert (fail, rerun, "retry") in retries and (fail, probe, "retry") not in retries


def test_an_edit_is_read_from_the_read_that_showed_its_old_text() -> None:
    # chat-messages t_a5db5f936f241ff7: the edit of `def __format__` was linked to the latest view of the
    # file (lines 785-790, `__repr__`), not to the view that showed `__format__` (lines 791-808)
    r = Run()
    r.user("Fix Arrow.__format__")
    f = "/testbed/arrow/arrow.py"
    view = "str_replace_editor"
    shown = r.call(
        view, {"command": "view", "path": f, "view_range": [791, 808]}, "   791\tdef __format__(self, fmt):"
    )
    later = r.call(
        view, {"command": "view", "path": f, "view_range": [785, 790]}, "   785\tdef __repr__(self):"
    )
    old = "def __format__(self, fmt):\n        return self.format(fmt)"
    ed = r.call(view, {"command": "str_replace", "path": f, "old_str": old, "new_str": "x"}, "edited")
    undo = r.call(view, {"command": "undo_edit", "path": f}, "undone")
    # SWE-agent's `edit 287:295` takes the view that showed line 287 (pydicom t_a9bf4b23699a8f4b)
    shows = "[File: /r/pkg/h.py]\n287:    raise AttributeError(\n(Open file: /r/pkg/h.py)"
    opened = r.call("open", {"command": "open pkg/h.py 290"}, shows, exit_code=None)
    r.call("goto", {"command": "goto 40"}, "[File: /r/pkg/h.py]\n40:import os\n(Open file: /r/pkg/h.py)")
    swe = r.call("edit", {"command": "edit 287:288\n    raise KeyError(\nend_of_edit"}, shows, exit_code=None)
    d = r.dag()
    rbe = {(e["src"], e["dst"]) for e in d.edges if e["rule"] == "read-before-edit"}
    assert (shown, ed) in rbe and (later, ed) not in rbe
    assert not any(dst == undo for _, dst in rbe)  # an undo has no old text to read
    assert (opened, swe) in rbe
    assert (later, ed, "data") not in edge_set(d, "data")  # nor is the path it showed another source


def test_a_search_pattern_is_no_file_and_a_path_may_have_spaces() -> None:
    # Codex t_70cfa7a0f26a53e1 / t_1b28c0b2430a5506: rg's regex `Google Chrome|chrome.*remote` was read as
    # a file (and became a retry's artifact); an escaped `/Users/u/Sample\ BiS\ Demo\ Prep.vtt` was none
    r = Run()
    r.user("Summarize the demo transcript")
    vtt = "/Users/u/Downloads/Sample BiS Demo Prep.vtt"
    ls = r.bash("ls /Users/u/Downloads", "Sample BiS Demo Prep.vtt\nnotes.md")
    wc = r.bash("wc -l /Users/u/Downloads/Sample\\ BiS\\ Demo\\ Prep.vtt", f"    8803 {vtt}")
    rg = r.bash('rg -n "chrome.*remote|remote.*chrome" /Users/u/Downloads/notes.md', "3:chrome remote")
    files = r.bash("rg --files -g 'AGENTS.md' -g '*.env*'", "AGENTS.md")
    d = r.dag()
    assert _node(d, wc)["consumes"] == [vtt]
    assert (ls, wc, "data") in edge_set(d, "data")
    assert _node(d, rg)["consumes"] == ["/Users/u/Downloads/notes.md"]
    assert _node(d, files)["consumes"] == []
    # quoted messages are no paths, whatever their extension
    msg = r.bash('echo "Created file.txt"', "Created file.txt")
    assert _node(r.dag(), msg)["consumes"] == []


def test_a_failed_run_with_no_other_signal_points_at_its_answer() -> None:
    # Inspect t_b699c5cc67321f66: answer "No", scored incorrect, no error: no candidate at all
    def run(outcome: str) -> tuple[Run, int]:
        r = Run()
        r.trajectory["outcome"] = outcome
        r.user("Is the sky green?")
        r.bash("ls", "notes.txt")
        return r, r.say("No")

    r, ans = run("failure")
    d = r.dag()
    assert [(c["step_index"], c["signal"]) for c in d.candidates] == [(ans, "failed_answer")]
    r, ans = run("success")
    assert r.dag().candidates == []
    # any other signal wins: a failed run with an unrecovered error has no failed_answer
    r, ans = run("failure")
    r.steps.pop()
    r.bash("cat missing.txt", "cat: missing.txt: No such file or directory", exit_code=1)
    r.say("No")
    assert "failed_answer" not in {c["signal"] for c in r.dag().candidates}


def test_a_value_comes_from_where_it_came_from_not_from_a_command_that_echoed_it() -> None:
    # Claude Code t_e03a19b88c1ce36d: `bd show spotter-gqc.1` prints the id it was given; the later
    # `bd update spotter-gqc.1` took it from `bd create`, which printed it first
    r = Run()
    r.user("Plan the work in beads")
    create = r.bash("bd create 'Annotation schema'", "Created issue: spotter-gqc.1")
    show = r.bash("bd show spotter-gqc.1", "spotter-gqc.1: Annotation schema [open]")
    update = r.bash("bd update spotter-gqc.1 --status in_progress", "Updated spotter-gqc.1")
    # Codex t_70cfa7a0f26a53e1: a search for the user's "90" prints lines with 90; the python that uses
    # 90 takes it from the request, not from the search
    ask = r.user("Compare it to 90 percent")
    rg = r.bash('rg -n "90|80" README.md', "12:~90% less memory")
    calc = r.bash('python3 -c "print(90 * 2)"', "180")
    ans = r.say("Done: spotter-gqc.1 is in progress; 90 doubled is 180.")
    d = r.dag()
    data = edge_set(d, "data")
    assert (create, update, "data") in data and (show, update, "data") not in data
    assert (ask, calc, "data") in data and (rg, calc, "data") not in data
    assert edge(d, create, update, "data")["artifact"] == "value:spotter-gqc.1"
    # what an echo shows is still evidence of what was done, for the answer
    assert edge(d, calc, ans, "answer")["artifact"] == "value:180"


def test_grep_pattern_options_bundled_or_attached() -> None:
    # grep -rnf FILE reads FILE; -ePAT gives the pattern, so the next word is a file
    r = Run()
    r.user("Find the TODOs")
    w = r.bash("printf 'TODO\\n' > pats.txt && printf 'a TODO\\n' > notes.txt", "")
    f = r.bash("grep -rnf pats.txt src/", "src/a.py:1:TODO")
    e = r.bash("grep -eTODO notes.txt", "a TODO")
    long = r.bash("grep --file=pats.txt notes.txt", "a TODO")
    d = r.dag()
    assert {"/pats.txt", "pats.txt"} & set(_node(d, f)["consumes"])
    assert (w, e, "data") in edge_set(d, "data") and (w, long, "data") in edge_set(d, "data")
    assert any(c.endswith("notes.txt") for c in _node(d, e)["consumes"])


def test_an_odd_swe_agent_edit_range_builds() -> None:
    r = Run()
    r.user("Fix it")
    r.call("open", {"command": "open a.py"}, "[File: /r/a.py]\n1:x\n(Open file: /r/a.py)", exit_code=None)
    r.call("edit", {"command": "edit \u00b2:3\nx\nend_of_edit"}, "(Open file: /r/a.py)", exit_code=None)
    r.call(
        "edit",
        {"command": "edit " + "9" * 5000 + ":3\nx\nend_of_edit"},
        "(Open file: /r/a.py)",
        exit_code=None,
    )
    assert len(r.dag().nodes) == 4


def test_claude_code_background_tasks_are_polled_and_their_failure_is_an_error() -> None:
    # Claude Code t_e03a19b88c1ce36d: `mix test` in the background, then TaskOutput calls
    r = Run()
    r.user("Run the tests")
    cmd = r.bash(
        "mix test", "Command running in background with ID: bd0afab. Output is being written to: /tmp/x"
    )
    running = (
        "<retrieval_status>timeout</retrieval_status>\n<task_id>bd0afab</task_id>\n<status>running</status>"
    )
    failed = "<retrieval_status>success</retrieval_status>\n<status>failed</status>\n<exit_code>1</exit_code>"
    p1 = r.call("TaskOutput", {"task_id": "bd0afab", "block": True}, running, exit_code=None)
    p2 = r.call("TaskOutput", {"task_id": "bd0afab", "block": True}, failed, exit_code=None)
    d = r.dag()
    assert edge(d, cmd, p1, "data")["artifact"] == "task:bd0afab"
    assert _node(d, p1)["status"] == "ok" and not _node(d, p1)["is_dead_end"]
    assert _node(d, p2)["status"] == "error"


def test_a_nested_namesake_does_not_show_a_path() -> None:
    # Codex t_70cfa7a0f26a53e1: `node_modules/@x/package.json` "revealed" the top-level package.json
    r = Run()
    r.trajectory["metadata"] = json.dumps({"cwd": "/w/app"})
    r.user("Check the package")
    top = r.bash("ls", "package.json\nsrc")
    nested = r.bash("find node_modules -name package.json", "node_modules/@x/y/package.json")
    mock = r.bash("grep -rn codemie tests", "tests/a.ts:3: vi.fn(() => '/mock/bin/codemie')")
    cat = r.bash("cat package.json", "{}")
    strings = r.bash("strings /w/app/node_modules/@x/y/bin/codemie", "ELF")
    d = r.dag()
    data = edge_set(d, "data")
    assert (top, cat, "data") in data and (nested, cat, "data") not in data
    assert (mock, strings, "data") not in data


def test_an_add_only_patch_reads_where_its_context_was_shown_and_a_write_over_a_read_file() -> None:
    r = Run()
    r.user("Add a provider")
    f = "/w/plugin.ts"
    shown = r.bash(f"sed -n '70,150p' {f}", "  enabled_providers: ['proxy', 'openai'],\n  timeout: 30,")
    r.bash(f"sed -n '150,210p' {f}", "export default plugin;")
    patch = f"*** Begin Patch\n*** Update File: {f}\n@@\n   enabled_providers: ['proxy', 'openai'],\n+  extra: 1,\n*** End Patch"
    ap = r.call("apply_patch", {"input": patch}, "Success")
    read = r.call("Read", {"file_path": "/w/test.exs"}, "     1\tdefmodule T do")
    w = r.call("Write", {"file_path": "/w/test.exs", "content": "defmodule T do\nend"}, "has been updated")
    d = r.dag()
    rbe = {(e["src"], e["dst"]) for e in d.edges if e["rule"] == "read-before-edit"}
    assert (shown, ap) in rbe and (read, w) in rbe


def test_a_long_compaction_summary_names_files_past_its_first_pages() -> None:
    # Claude Code t_e03a19b88c1ce36d: a 12,007-character summary listed files at characters 8,989-11,568
    r = Run()
    r.user("Build the feature")
    w = r.call("Write", {"file_path": "/w/lib/router.ex", "content": "x"}, "File created")
    summary = (
        "Summary of the work so far.\n"
        + ("- discussed the design at length\n" * 300)
        + "Files: /w/lib/router.ex\n"
    )
    c = r.compaction(summary)
    d = r.dag()
    assert (w, c, "summary") in edge_set(d, "summary")


def test_a_poll_echoes_what_its_command_was_given() -> None:
    # Codex t_70cfa7a0f26a53e1: `rg -n "90|80"` printed `~90% less` through its poll (step 38)
    r = Run()
    ask = r.user("Compare it to 90 percent")
    cmd = r.call("exec_command", {"cmd": 'rg -n "90|80" README.md'}, "Process running with session ID 7")
    meta = json.dumps({"polls": f"call_{cmd}", "session_id": "7"})
    poll = r.call(
        "write_stdin", {"session_id": 7, "chars": ""}, "12:~90% less memory", tool="poll", metadata=meta
    )
    calc = r.bash('python3 -c "print(90 * 2)"', "180")
    data = edge_set(r.dag(), "data")
    assert (ask, calc, "data") in data and (poll, calc, "data") not in data


def test_a_call_issued_after_the_one_before_finished_is_no_parallel_call() -> None:
    # demo run-00003 (Codex): ffmpeg ran 11.961-12.724 s and tesseract on its frames started at 12.875 s,
    # 0.9 s after ffmpeg was issued: taken for one response, the frames' data edge was dropped
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    r = Run()
    r.user("Read the sign in clip.mp4")
    ff = r.bash(
        "ffmpeg -i clip.mp4 -vf fps=1 frames/%03d.png", "", timestamp=t0, duration_s=0.763, source_line=10
    )
    ocr = r.bash(
        "tesseract frames/001.png -", "EXIT", timestamp=t0 + timedelta(seconds=0.914), source_line=14
    )
    d = r.dag()
    assert (ff, ocr, "data") in edge_set(d, "data")
    assert _node(d, ff)["parallel_batch"] is None
    # the calls of one response are adjacent records, logged milliseconds apart (an instant poll's
    # duration can be shorter than that): still one batch
    r = Run()
    r.user("Check both")
    a = r.bash("cat a.txt", "x", timestamp=t0, duration_s=0.0002, source_line=93)
    b = r.bash("cat b.txt", "y", timestamp=t0 + timedelta(seconds=0.014), source_line=94)
    d = r.dag()
    assert (
        _node(d, a)["parallel_batch"] is not None
        and _node(d, a)["parallel_batch"] == _node(d, b)["parallel_batch"]
    )
