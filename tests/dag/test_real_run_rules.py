"""Rules fixed after auditing the DAGs of real corpus runs (each test names the run shape it mirrors)."""

from __future__ import annotations

import io
import json
import re

import networkx as nx
import pytest
from dagfix import Run, edge, edge_set
from hypothesis import given
from hypothesis import strategies as st

from trajlab.dag import export
from trajlab.dag._stepio import _whole_word


def _values(d) -> set[tuple[int, int, str]]:
    return {
        (e["src"], e["dst"], e["artifact"]) for e in d.edges if (e["artifact"] or "").startswith("value:")
    }


def test_program_names_are_not_values() -> None:
    # mini-swe-agent: `cat tests/missing_colon.py` shows the shebang; `python3 ...` later is no use of it
    r = Run()
    r.user("Fix the SyntaxError in tests/missing_colon.py")
    cat = r.bash(
        "cat tests/missing_colon.py", "#!/usr/bin/env python3\n\ndef division(a, b):\n    return a/b\n"
    )
    r.bash("python3 tests/missing_colon.py", "8.2")
    r.bash('python3 -c "print(1)"', "1")
    r.say("Fixed: the script runs with python3 now.")
    d = r.dag()
    assert not any(v == "value:python3" for _, _, v in _values(d))
    assert not any(c["step_index"] == cat and c["signal"] == "answer_source" for c in d.candidates)


def test_real_codes_are_still_values() -> None:
    r = Run()
    r.user("Create the beads")
    a = r.bash("bd create --title x", "Created issue: spotter-0p7.1")
    b = r.bash("bd dep add spotter-0p7.2 spotter-0p7.1", "ok")
    assert (a, b, "value:spotter-0p7.1") in _values(r.dag())


def test_sed_line_ranges_head_counts_and_sleep_are_not_values() -> None:
    # Codex: a VTT cue id `.../360-0` and a skill text quoting `sed -n '1,220p'` are no source of the
    # line range of a later `sed -n '360,760p' Other.tsx`; terminus: `sleep 50` twice
    r = Run()
    r.user("Look around")
    r.bash("sed -n '180,520p' notes.vtt", "395eec3e-bf72/360-0\n00:02:14.621 --> 00:02:15.000\nhello")
    r.bash("cat SKILL.md", "Do not use a partial range such as `sed -n '1,220p'`; read it all. 4210 total")
    r.bash("sed -n '360,760p' src/Other.tsx", "x")
    r.bash("sed -n '1,220p' src/Dash.tsx | head -n 50", "y")
    s1 = r.bash("sleep 50", "root@box:/app# sleep 50")
    r.bash("sleep 50", "root@box:/app# sleep 50")
    r.bash("timeout 30 python3 count.py --limit 4210", "done")
    d = r.dag()
    assert {v for _, _, v in _values(d)} == {"value:4210"}
    assert not any(src == s1 for src, _, _ in _values(d))


def test_view_range_start_is_a_value_its_end_is_not() -> None:
    # OpenHands: `grep -n slots attrs.py` prints `895:def _add_slots`, then `view_range: [895, 955]`
    r = Run()
    r.user("Fix slots")
    g = r.call(
        "execute_bash",
        {"command": "grep -n slots /w/mypy/attrs.py"},
        "297:    slots_default\n895:def _add_slots(ctx)",
    )
    r.call(
        "str_replace_editor",
        {"command": "view", "path": "/w/mypy/other.py", "view_range": [1, 20]},
        "   19\tx = 955\n",
    )
    v = r.call(
        "str_replace_editor",
        {"command": "view", "path": "/w/mypy/attrs.py", "view_range": [895, 955]},
        "895\tdef",
    )
    d = r.dag()
    assert (g, v, "value:895") in _values(d)
    assert not any(art == "value:955" for _, _, art in _values(d))
    assert not any(art == "value:895955" for _, _, art in _values(d))


def _swe_agent_run() -> tuple[Run, dict[str, int]]:
    """SWE-agent 1.x with function calls: `create`, an `edit` of the open file, a refused edit, a fix."""
    r = Run()
    r.user("TimeDelta serialization precision: 345 ms is serialized as 344")
    ix = {}
    ix["create"] = r.call(
        "create",
        {"filename": "reproduce.py"},
        "[File: reproduce.py (1 lines total)]\n1:\n(Open file: /testbed/reproduce.py)\n(Current directory: /testbed)\nbash-$",
        exit_code=None,
    )
    ix["edit"] = r.call(
        "edit",
        {"replacement_text": "print(td_field.serialize('td', obj))", "start_line": 1, "end_line": 1},
        "File updated.\n[File: /testbed/reproduce.py (9 lines total)]\n(Open file: /testbed/reproduce.py)\nbash-$",
        exit_code=None,
    )
    ix["run"] = r.bash(
        "python reproduce.py", "344\n(Open file: /testbed/reproduce.py)\nbash-$", exit_code=None
    )
    ix["open"] = r.call(
        "open",
        {"path": "src/marshmallow/fields.py", "line_number": 1474},
        "[File: src/marshmallow/fields.py (1997 lines total)]\n1475:        return int(x)\n"
        "(Open file: /testbed/src/marshmallow/fields.py)\nbash-$",
        exit_code=None,
    )
    ix["refused"] = r.call(
        "edit",
        {"replacement_text": "return int(round(x))", "start_line": 1475, "end_line": 1475},
        "Your proposed edit has introduced new syntax error(s).\nERRORS:\n- E999 IndentationError\n"
        "Your changes have NOT been applied. Please fix your edit command and try again.\n"
        "(Open file: /testbed/src/marshmallow/fields.py)\nbash-$",
        exit_code=None,
    )
    ix["fixed"] = r.call(
        "edit",
        {"replacement_text": "        return int(round(x))", "start_line": 1475, "end_line": 1475},
        "File updated.\n(Open file: /testbed/src/marshmallow/fields.py)\nbash-$",
        exit_code=None,
    )
    ix["rerun"] = r.bash(
        "python reproduce.py", "345\n(Open file: /testbed/src/marshmallow/fields.py)\nbash-$", exit_code=None
    )
    ix["submit"] = r.call(
        "submit", {}, "diff --git a/src/marshmallow/fields.py b/src/marshmallow/fields.py", exit_code=None
    )
    return r, ix


def test_swe_agent_edit_changes_the_open_file() -> None:
    r, ix = _swe_agent_run()
    d = r.dag()
    data = edge_set(d, "data")
    assert (ix["edit"], ix["run"], "data") in data  # the script the edit filled is what runs
    assert (ix["edit"], ix["rerun"], "data") in data
    assert (ix["fixed"], ix["submit"], "answer") in edge_set(d, "answer")  # the diff is the last edit


def test_swe_agent_refused_edit_is_an_error_that_changed_nothing() -> None:
    r, ix = _swe_agent_run()
    d = r.dag()
    status = {n["node_id"]: n["status"] for n in d.nodes}
    assert status[ix["refused"]] == "error"
    assert status[ix["fixed"]] == "ok"
    assert not any(
        e["src"] == ix["refused"] and e["rule"] == "tool-edit" for e in d.edges
    )  # the file was not changed by it
    assert (ix["refused"], ix["fixed"], "retry") in edge_set(d, "retry")
    assert d.metrics["n_recoveries"] == 1 and d.metrics["n_unrecovered_errors"] == 0


def _search_replace_run(newline: str) -> tuple[Run, dict[str, int]]:
    """SWE-agent's windowed editor: `open F`, then `edit` by search and replace, then a diff submitted
    (git writes CRLF through the terminal)."""
    r = Run()
    r.user("tests/missing_colon.py fails with a SyntaxError")
    ix = {}
    ix["open"] = r.call(
        "open",
        {"path": "tests/missing_colon.py"},
        "[File: tests/missing_colon.py (10 lines total)]\n1:#!/usr/bin/env python3\n4:def division(a, b) -> float",
        exit_code=None,
    )
    ix["edit"] = r.call(
        "edit",
        {"search": "-> float", "replace": "-> float:", "replace-all": False},
        "Replaced 1 occurrences. Please review the changes and make sure they are correct",
        exit_code=None,
    )
    ix["run"] = r.bash("python tests/missing_colon.py", "8.2\n(Open file: /repo/tests/missing_colon.py)")
    diff = newline.join(
        [
            "diff --git a/tests/missing_colon.py b/tests/missing_colon.py",
            "index 20edef5..5857437 100755",
            "--- a/tests/missing_colon.py",
            "+++ b/tests/missing_colon.py",
            "@@ -1,7 +1,7 @@",
            "-def division(a, b) -> float",
            "+def division(a, b) -> float:",
        ]
    )
    ix["submit"] = r.call("submit", {}, newline + diff, exit_code=None)
    return r, ix


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_swe_agent_search_replace_edit_writes_the_open_file_and_diff_headers_are_no_claims(
    newline: str,
) -> None:
    r, ix = _search_replace_run(newline)
    d = r.dag()
    assert (ix["edit"], ix["run"], "data") in edge_set(d, "data")  # the edited script is what runs
    answer = [e for e in d.edges if e["type"] == "answer"]
    assert (ix["edit"], "answer-final-write") in [(e["src"], e["rule"]) for e in answer]
    assert ix["edit"] in {n["node_id"] for n in d.nodes if n["on_answer_path"]}
    # git's blob hashes, file mode and hunk line numbers are not values the answer states
    assert not [c for c in d.candidates if c["signal"] in ("answer_value_unsupported", "answer_unsupported")]


@pytest.mark.parametrize(
    ("command", "written"),
    [
        (
            "mv /workspace/game_2048.py /workspace/2048.py",
            "/workspace/2048.py",
        ),  # OpenHands: the rename is the task
        ("cp src/app.py src/app_v2.py", "src/app_v2.py"),
        ("echo 'x = 1' | tee src/conf.py", "src/conf.py"),
        ("touch src/__init__.py", "src/__init__.py"),
    ],
)
def test_copies_moves_tee_and_touch_are_final_writes_of_a_code_task(command: str, written: str) -> None:
    r = Run()
    r.user("Please do it")
    w = r.bash(command, "")
    r.say("Done.")
    fin = r.call("finish", {}, None, exit_code=None)
    d = r.dag()
    assert (w, fin, written) in [
        (e["src"], e["dst"], e["artifact"]) for e in d.edges if e["rule"] == "answer-final-write"
    ]


def test_build_outputs_and_downloads_are_not_final_writes() -> None:
    r = Run()
    r.user("Build it")
    r.bash("gcc -o app main.c", "")
    r.bash("curl -sL https://example.com/data.csv -o data.csv", "")
    r.say("Built.")
    fin = r.call("finish", {}, None, exit_code=None)
    assert not [e for e in r.dag().edges if e["dst"] == fin and e["rule"] == "answer-final-write"]


def test_failed_claude_edit_produces_nothing() -> None:
    r = Run()
    r.user("Fix app.py")
    bad = r.call(
        "Edit",
        {"file_path": "/w/app.py", "old_string": "nope", "new_string": "x"},
        "<tool_use_error>String to replace not found in file.</tool_use_error>",
        exit_code=1,
    )
    cat = r.bash("cat /w/app.py", "def f(): pass")
    r.say("done")
    assert (bad, cat, "data") not in edge_set(r.dag(), "data")


def test_a_failed_command_retried_with_more_words_is_recovered() -> None:
    # Claude Code: `git push` fails (no upstream), `git push --set-upstream origin spotter-gqc` succeeds
    r = Run()
    r.user("Commit and push")
    r.bash("git commit -m x", "[spotter-gqc 99b497c] x")
    push = r.bash(
        "git push 2>&1",
        "fatal: The current branch spotter-gqc has no upstream branch.",
        exit_code=128,
    )
    again = r.bash("git push --set-upstream origin spotter-gqc 2>&1", "branch set up to track")
    r.say("Pushed.")
    d = r.dag()
    assert (push, again, "retry") in edge_set(d, "retry")
    assert d.metrics["n_unrecovered_errors"] == 0
    assert not any(c["signal"] == "unrecovered_error" for c in d.candidates)


def test_graphml_survives_control_characters_in_ids_and_paths() -> None:
    r = Run(tid='t_"x\\<y>')
    r.user('Read "we\x01ird.txt" <and> {x|y}')
    r.bash('echo a > "/w/we\x01ird.txt"', "", call_id="c\x01d")
    r.bash('cat "/w/we\x01ird.txt"', "a", call_id="c\x01d")  # duplicate call id: an anomaly naming it
    r._add("tool_result", output="orphan \x02", call_id="z\x02<&>")
    r.say('done "x" \\')
    d = r.dag()
    g = nx.read_graphml(io.StringIO(export(d, "graphml")), force_multigraph=True)
    assert g.number_of_nodes() == len(d.nodes) and g.number_of_edges() == len(d.edges)
    assert "duplicate call id" in g.graph["anomalies"]


@given(
    text=st.text(alphabet="ab1,. _-x2\n'é", max_size=14),
    word=st.text(alphabet="ab12.", min_size=1, max_size=3),
    at=st.integers(0, 14),
)
def test_whole_word_finds_what_the_lookaround_regex_finds(text: str, word: str, at: int) -> None:
    # _without_controls looks control words up without compiling a regex per word (that cost ~5% of a build)
    at = min(at, len(text))
    m = re.compile(rf"(?<![\w.,]){re.escape(word)}(?![\w.,])").search(text, at)
    assert _whole_word(text, word, at) == (m.start() if m else -1)


def _started_in(r: Run, cwd: str) -> Run:
    r.trajectory["metadata"] = json.dumps({"cwd": cwd, "gitBranch": "main"})
    return r


def test_a_bare_word_naming_the_working_directory_is_no_use_of_it() -> None:
    # Claude Code in a worktree named after its beads epic: an Edit of `<cwd>/mix.exs` made the
    # directory a written one, and `bd show spotter-gqc` (the epic's id) took its contents
    r = _started_in(Run(), "/home/u/projects/spotter-worktrees/spotter-gqc")
    r.user("Finish the epic")
    edit = r.call(
        "Edit",
        {
            "file_path": "/home/u/projects/spotter-worktrees/spotter-gqc/mix.exs",
            "old_string": "a",
            "new_string": "b",
        },
        "The file has been updated.",
    )
    frames = r.bash("ffmpeg -i clip.mp4 frames/%04d.png", "frame=   12")
    show = r.bash("bd show spotter-gqc 2>&1", "spotter-gqc: epic, 7/7 done")
    ls = r.bash("ls frames", "0001.png")
    d = r.dag()
    assert edit < show
    assert not any(e["dst"] == show and e["type"] == "data" for e in d.edges)
    # a bare word naming a directory a step wrote into still takes its contents
    assert edge(d, frames, ls, "data")["rule"] == "dir-contents"
    # without the recorded working directory the word still reaches the directory by its name (the
    # rule this guards against), which is why the starting directory matters
    r2 = Run()
    r2.user("Finish the epic")
    r2.call(
        "Edit",
        {
            "file_path": "/home/u/projects/spotter-worktrees/spotter-gqc/mix.exs",
            "old_string": "a",
            "new_string": "b",
        },
        "The file has been updated.",
    )
    s2 = r2.bash("bd show spotter-gqc 2>&1", "spotter-gqc: epic")
    assert any(e["dst"] == s2 and e["rule"] == "dir-contents" for e in r2.dag().edges)


def test_relative_paths_resolve_against_the_starting_directory() -> None:
    r = _started_in(Run(), "/work/task")
    r.user("How long is clip.mp4?")
    probe = r.bash("ffprobe -v error -show_format clip.mp4", "duration=12.5")
    other = r.call("Write", {"file_path": "/elsewhere/notes.txt", "content": "x"}, "ok")
    mine = r.call("Write", {"file_path": "/work/task/notes.txt", "content": "y"}, "ok")
    cat = r.bash("cat notes.txt", "y")
    r.say("12.5 seconds")
    d = r.dag()
    # the prompt's bare `clip.mp4` is the file ffprobe read in the starting directory
    assert edge(d, 0, probe, "data")["artifact"] == "/work/task/clip.mp4"
    # `cat notes.txt` in /work/task reads the file written there, not a namesake elsewhere
    assert edge(d, mine, cat, "data")["artifact"] == "/work/task/notes.txt"
    assert (other, cat, "data") not in edge_set(d)


def test_a_starting_directory_that_is_no_absolute_path_is_ignored() -> None:
    for meta in ('{"cwd": "C:\\\\Users\\\\me"}', '{"cwd": 7}', '{"cwd": "relative/dir"}', '{not json, "cwd"'):
        r = Run()
        r.trajectory["metadata"] = meta
        r.user("Read notes.txt")
        w = r.call("Write", {"file_path": "/repo/notes.txt", "content": "x"}, "ok")
        c = r.bash("cat notes.txt", "x")
        assert (w, c, "data") in edge_set(r.dag()), meta


def test_numbers_with_a_currency_percent_or_degree_sign_are_values() -> None:
    # OTel GenAI: `get_weather` printed "rainy, 57°F" and the answer says 57°F
    r = Run()
    r.user("What is the weather in Paris?")
    w = r.call("get_weather", {"city": "Paris"}, "rainy, 57°F")
    p = r.call("get_price", {"item": "ticket"}, "price: $120 (VAT 20%)")
    a = r.say("It is rainy with a temperature of 57°F; a ticket costs $120 with 20% VAT.")
    d = r.dag()
    assert edge(d, w, a, "answer")["artifact"] == "value:57"
    assert edge(d, p, a, "answer")["artifact"] in ("value:120", "value:20")
    # an answer contradicting the tool's output is unsupported, as "57 F" always was
    r2 = Run()
    r2.user("What is the weather in Paris?")
    r2.call("get_weather", {"city": "Paris"}, "sunny, 63°F")
    a2 = r2.say("It is 57°F.")
    top = r2.dag().candidates[0]
    assert top["step_index"] == a2 and top["signal"] in ("answer_unsupported", "answer_value_unsupported")


def test_flagged_messages_are_errors_but_a_verifiers_verdict_is_not() -> None:
    r = Run()
    r.user("Make the tests pass")
    r.say("{not json")
    fb = r.user("Previous response had parsing errors:\nERROR: Missing required fields", is_error=True)
    r.bash("pytest -q", "1 passed")
    verdict = r._add(
        "system",
        role="verifier",
        text="test results:\ntest_a: failed",
        is_error=True,
        metadata='{"phase":"test","parser_results":{"test_a":"failed"}}',
    )
    d = r.dag()
    status = {n["node_id"]: n["status"] for n in d.nodes}
    assert (status[fb], status[verdict]) == ("error", "ok")
    assert d.metrics["n_errors"] == 1 and d.metrics["first_error_step"] == fb
    assert (fb, "first_error") in {(c["step_index"], c["signal"]) for c in d.candidates}


def test_a_run_of_failed_orphan_results_names_its_first_error() -> None:
    # Inspect AI: eleven tool results whose calls were never logged, each an error
    r = Run()
    for k in range(3):
        r._add("tool_result", role="tool", output=f"parsing error {k}", is_error=True, call_id=f"c{k}")
    d = r.dag()
    assert d.metrics["n_errors"] == 3
    assert d.candidates and d.candidates[0]["step_index"] == 0 and d.candidates[0]["signal"] == "first_error"


def test_a_diff_answer_claims_its_added_lines_not_its_context() -> None:
    # mini-swe-agent: the submitted diff keeps ` print(division(123, 15))` as context; the `cat` that
    # showed the file before the fix is no source of a 123 the diff does not state
    r = Run()
    r.user("Fix the ZeroDivisionError in tests/missing_colon.py")
    cat = r.bash(
        "cat tests/missing_colon.py", "def division(a, b):\n    return a/b\nprint(division(123, 15))\n"
    )
    r.bash("sed -i 's/return a\\/b/return a\\/b if b else 404/' tests/missing_colon.py", "")
    diff = (
        "diff --git a/tests/missing_colon.py b/tests/missing_colon.py\n"
        "index 3b18e51..a9c2f7d 100644\n--- a/tests/missing_colon.py\n+++ b/tests/missing_colon.py\n"
        "@@ -1,3 +1,3 @@\n def division(a, b):\n-    return a/b\n+    return a/b if b else 404\n"
        " print(division(123, 15))\n"
    )
    sub = r.bash(
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
        "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n" + diff,
    )
    d = r.dag()
    assert d.metrics["answer_step"] == sub
    assert not [e for e in d.edges if e["dst"] == sub and e["artifact"] == "value:123"]
    assert all(e["artifact"] != "value:123" for e in d.edges if e["src"] == cat)
    # the added line's 404 is what the diff states, and no output printed it
    assert (sub, "answer_value_unsupported") in {(c["step_index"], c["signal"]) for c in d.candidates}


def test_swe_agent_open_then_edit_is_a_read_before_edit() -> None:
    # the editor's header `[File: tests/missing_colon.py ...]` also shows the path; the edge says why
    # the edit needed the step: it read the file
    r, ix = _search_replace_run("\n")
    assert edge(r.dag(), ix["open"], ix["edit"], "data")["rule"] == "read-before-edit"


def _signals(d) -> set[tuple[int, str]]:
    return {(c["step_index"], c["signal"]) for c in d.candidates}


def test_a_reproduced_bug_that_is_then_fixed_is_no_unrecovered_error() -> None:
    # mini-swe-agent: the agent runs the module with a zero divisor on purpose, sees ZeroDivisionError,
    # rewrites the module and submits without running it again
    r = Run()
    r.user("division() in tests/missing_colon.py crashes on a zero divisor; fix it")
    ok = r.bash("python3 tests/missing_colon.py", "8.2")
    rep = r.bash(
        'python3 -c "from tests.missing_colon import division; print(division(23, 0))"',
        "Traceback (most recent call last):\nZeroDivisionError: division by zero",
        exit_code=1,
    )
    fix = r.bash(
        "cat > tests/missing_colon.py << 'EOF'\ndef division(a, b):\n    return a / b if b else 0\nEOF", ""
    )
    d = r.dag()
    # the import names the module's file, which the prompt named too
    assert edge(d, 0, rep, "data")["artifact"] == "tests/missing_colon.py"
    assert d.metrics["n_errors"] == 1 and d.metrics["n_unrecovered_errors"] == 0
    assert not {s for s in _signals(d) if s[1].startswith("unrecovered_error")}
    assert ok < rep < fix


def test_creating_a_missing_script_or_editing_the_failing_script_is_no_fix() -> None:
    # the script did not exist when the step failed: what it was to count was never counted
    r = Run()
    r.user("How many words does clip.txt have?")
    miss = r.bash("python3 count_words.py clip.txt", "python3: can't open file 'count_words.py'", exit_code=2)
    r.call("Write", {"file_path": "count_words.py", "content": "import sys"}, "ok")
    assert (miss, "unrecovered_error") in _signals(r.dag())
    # OpenHands: a reproduction script fails, is edited, fails again, is edited: still failing
    r2 = Run()
    r2.user("Reproduce the bug")
    r2.call("Write", {"file_path": "/ws/reproduce_error.py", "content": "import monai"}, "ok")
    runs = []
    for k in range(2):
        runs.append(r2.bash("python /ws/reproduce_error.py", f"Traceback\nTypeError: {k}", exit_code=1))
        r2.call("Edit", {"file_path": "/ws/reproduce_error.py", "old_string": "a", "new_string": "b"}, "ok")
    d2 = r2.dag()
    assert d2.metrics["n_unrecovered_errors"] >= 1
    assert runs[-1] in {s for s, sig in _signals(d2) if sig.startswith("unrecovered_error")}


def test_terminate_is_no_answer_and_a_final_answer_thought_is() -> None:
    # Who&When (CaptainAgent): the last message is a bare TERMINATE; the answer is the one before it
    r = Run(final_answer=None)
    r.user("Which album did Christgau not grade?")
    lookup = r.call(
        "web_search", {"query": "christgau fiona apple"}, "Tidal: no grade; Harbinger: not reviewed"
    )
    ans = r.say("The album is **Harbinger**, which was not reviewed. TERMINATE")
    r.say("TERMINATE")
    d = r.dag()
    assert d.metrics["answer_step"] == ans
    assert all(e["artifact"] != "TERMINATE" for e in d.edges)
    assert (lookup, ans, "answer") in edge_set(d)
    # Who&When (Magentic-One): the Orchestrator writes FINAL ANSWER in a thought, then asks for more
    r2 = Run(final_answer="5")
    r2.user("How many slides mention crustaceans?")
    count = r2.bash("python count.py slides.pptx", "slides mentioning crustaceans:\n5")
    final = r2.think("Traceback ignored. FINAL ANSWER: 5")
    r2.say("Assistant, please verify if 'Yeti crab' is a crustacean (5 slides so far).")
    d2 = r2.dag()
    assert d2.metrics["answer_step"] == final
    assert (count, final, "answer") in edge_set(d2)


def test_the_same_command_run_again_much_later_is_its_retry() -> None:
    # OpenHands: the reproduction fails, the agent reads and edits a dozen files, then runs the very same
    # command, which passes
    r = Run()
    r.user("Fix the mypy crash")
    rep = r.bash("mypy /ws/reproduce_error.py", "error: INTERNAL ERROR", exit_code=2)
    for k in range(12):
        r.call("Read", {"file_path": f"/ws/mypy/plugins/m{k}.py"}, "x")
    again = r.bash("mypy /ws/reproduce_error.py", "Success: no issues found")
    d = r.dag()
    assert edge(d, rep, again, "retry")["rule"] == "retry-same-tool"
    assert d.metrics["n_unrecovered_errors"] == 0


def test_the_starting_directory_is_revealed_by_no_output() -> None:
    # Claude Code: a Glob lists files under the cwd; a Task prompt naming the cwd took it from the Glob
    r = _started_in(Run(), "/home/m/spotter")
    r.user("Review the project")
    glob = r.call("Glob", {"pattern": "**/*.ex"}, "/home/m/spotter/lib/a.ex\n/home/m/spotter/lib/b.ex")
    task = r.call("Task", {"prompt": "Review the code in /home/m/spotter and report"}, "done")
    assert not [e for e in r.dag().edges if e["src"] == glob and e["dst"] == task and e["type"] == "data"]


def test_a_policy_refusal_of_a_browser_action_is_an_error() -> None:
    # Codex with Browser Use: the MCP tool's result is the refusal itself, with no error flag
    r = Run()
    r.user("Open the local UI and check the login page")
    refused = r.call(
        "mcp__node_repl__js",
        {"code": "await tab.goto('http://localhost:5173')"},
        '[{"type":"text","text":"Browser Use rejected this action due to browser security policy. Reason: ..."}]',
        exit_code=None,
    )
    quoted = r.bash(
        "grep -r 'Browser Use rejected this action' notes.md",
        "notes.md: Browser Use rejected this action",
        exit_code=0,
    )
    d = r.dag()
    status = {n["node_id"]: n["status"] for n in d.nodes}
    assert (status[refused], status[quoted]) == ("error", "ok")
    assert d.metrics["first_error_step"] == refused


def test_function_words_of_a_short_answer_are_no_terms() -> None:
    # Claude Code: "Both gqc.6 and gqc.7 commits are on origin" took "Both" from an unrelated `bd show`
    r = Run()
    r.user("Are the epic's commits pushed?")
    show = r.bash("bd show spotter-gqc", "Both subtasks are closed. Since Monday: 7 of 7 done.")
    log = r.bash("git log --oneline origin/main -2", "a1b2c3d gqc.7 review page\n9f8e7d6 gqc.6 lifecycle")
    ans = r.say("Both gqc.6 and gqc.7 are on origin since the push.")
    d = r.dag()
    into = {(e["src"], e["artifact"]) for e in d.edges if e["dst"] == ans and e["type"] == "answer"}
    assert not [a for s, a in into if s == show]
    assert any(s == log for s, _ in into)
