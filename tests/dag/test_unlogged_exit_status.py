"""Runners that log no exit status (SWE-agent, terminals, chat logs): a failure is read from the output."""

from __future__ import annotations

from dagfix import Run

from trajlab.dag._nodes import node_status as _node_status


def node_status(step: dict, exit_status_logged: bool = False) -> str:
    return _node_status(step, exit_status_logged)


_SWE_TRAILER = "\n(Open file: /repo/reproduce_bug.py)\n(Current directory: /repo)\nbash-$"
_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/repo/reproduce_bug.py", line 17, in <module>\n'
    "    result = ds.pixel_array\n"
    "             ^^^^^^^^^^^^^^\n"
    "AttributeError: required elements are missing from the dataset: PixelRepresentation\n"
)


def _step(command: str, output: str, programs: list[str] | None = None, **kw: object) -> dict:
    return {
        "kind": "tool_call",
        "tool_name": "bash",
        "command": command,
        "programs": programs if programs is not None else [command.split()[0]],
        "output": output,
        "exit_code": None,
        **kw,
    }


def test_an_uncaught_exception_at_the_end_is_an_error() -> None:
    # SWE-agent t_a9bf4b2369 step 8: the reproduction's traceback was status ok
    assert node_status(_step("python reproduce_bug.py", _TRACEBACK + _SWE_TRAILER)) == "error"
    assert node_status(_step("python reproduce_bug.py", "OBSERVATION:\n" + _TRACEBACK)) == "error"
    # a terminal's echo and empty prompt around it (Terminus via ATIF)
    term = "New Terminal Output:\n\nroot@abc:/app# python x.py\n" + _TRACEBACK + "root@abc:/app# "
    assert node_status(_step("python x.py", term)) == "error"
    # interpreter shutdown warnings after the traceback (chat-messages t_d03ea23ec4 step 27)
    warn = _TRACEBACK + "sys:1: RuntimeWarning: coroutine 'f' was never awaited\n  f()\n"
    assert node_status(_step("python r.py", warn)) == "error"
    # a syntax error has no Traceback line, only the File line above it
    syntax = "  File \"/repo/x.py\", line 3\n    def f(\n         ^\nSyntaxError: '(' was never closed\n"
    assert node_status(_step("python x.py", syntax)) == "error"


def test_failed_tests_and_shell_errors_are_errors() -> None:
    summary = (
        "FAILED tests/test_a.py::test_x - AttributeError\n========= 1 failed, 22 passed in 0.49s =========\n"
    )
    assert node_status(_step("pytest tests/test_a.py", summary)) == "error"
    assert node_status(_step("pytest -q", "===== 3 passed in 0.20s =====")) == "ok"
    assert node_status(_step("mini -t x", "bash: mini: command not found" + _SWE_TRAILER)) == "error"
    assert node_status(_step("cat a.txt", "cat: a.txt: No such file or directory")) == "error"


def test_outputs_that_only_show_a_failure_are_not_errors() -> None:
    # a handled probe: the traceback is followed by what the command printed after it
    probe = _TRACEBACK + "mock_athena does not exist\n"
    assert node_status(_step("python -c 'import x' || echo 'mock_athena does not exist'", probe)) == "ok"
    # a log shown by cat/tail/grep ends in someone else's traceback or test summary
    assert node_status(_step("tail -20 run.log", _TRACEBACK)) == "ok"
    assert node_status(_step("cat report.txt", "== 1 failed in 0.10s ==")) == "ok"
    # an exception name without a traceback above it is just text
    assert node_status(_step("python check.py", "checked 3 files\nValueError: none found")) == "ok"
    # a traceback in the middle, then the program went on and finished
    assert node_status(_step("python run.py", _TRACEBACK + "retrying...\ndone: 42\n")) == "ok"
    # not a command: a runner tool's file view
    assert node_status({**_step("x", _TRACEBACK), "command": None}) == "ok"


def test_a_logged_exit_status_wins() -> None:
    assert node_status(_step("python r.py 2>&1 | tail", _TRACEBACK, exit_code=0)) == "ok"
    assert node_status(_step("python r.py", "fine", is_error=True)) == "error"
    # runners that flag every failed command (Claude Code's is_error): no flag means it exited 0
    masked = _step("ls missing 2>&1 | head", "ls: cannot access 'missing': No such file or directory")
    assert node_status(masked) == "error"
    assert node_status(masked, exit_status_logged=True) == "ok"


def test_which_runners_log_how_commands_ended() -> None:
    def status(runner: str) -> str:
        r = Run()
        r.trajectory["runner"] = runner
        r.user("Fix the bug")
        i = r.bash("python reproduce_bug.py", _TRACEBACK, exit_code=None)
        return next(n["status"] for n in r.dag().nodes if n["node_id"] == i)

    assert status("swe_agent") == status("chat_messages") == status("atif") == "error"
    assert status("claude_code") == status("codex") == "ok"


def test_the_failed_reproduction_is_recovered_by_its_rerun_after_the_fix() -> None:
    r = Run()
    r.user("Fix the pixel_array bug")
    r.call(
        "Write", {"file_path": "/repo/reproduce_bug.py", "content": "import pydicom"}, output="File created"
    )
    repro = r.bash("python reproduce_bug.py", _TRACEBACK + _SWE_TRAILER, exit_code=None)
    fix = r.call(
        "Edit",
        {"file_path": "/repo/pydicom/numpy_handler.py", "old_string": "a", "new_string": "b"},
        output="ok",
    )
    again = r.bash("python reproduce_bug.py", "Result: True" + _SWE_TRAILER, exit_code=None)
    d = r.dag()
    status = {n["node_id"]: n["status"] for n in d.nodes}
    assert status[repro] == "error" and status[fix] == "ok" and status[again] == "ok"
    assert d.metrics["first_error_step"] == repro
    assert any(e["type"] == "retry" and (e["src"], e["dst"]) == (repro, again) for e in d.edges)
    assert d.metrics["n_unrecovered_errors"] == 0


def test_a_server_still_serving_when_the_runner_stopped_waiting_is_no_timeout() -> None:
    # OpenHands t_4bfd004b6667bcdf step 8: `python3 -m http.server 8000` printed "Serving HTTP on ..."
    # and OpenHands stopped waiting after 30 s without output (exit code -1): it topped the candidates
    # as an unrecovered timeout
    serving = _step("cd app && python3 -m http.server 8000", "Serving HTTP on 0.0.0.0 port 8000 ...")
    assert node_status({**serving, "exit_code": -1, "timed_out": True, "is_error": True}) == "ok"
    uvicorn = "INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)"
    assert node_status(_step("uvicorn app:app", uvicorn, timed_out=True)) == "ok"
    vite = "  VITE v5.0.0  ready in 300 ms\n\n  ➜  Local:   http://localhost:5173/\n"
    assert node_status(_step("npm run dev", vite, exit_code=124)) == "ok"
    # a step that hung without serving stays a timeout
    assert node_status(_step("whisper talk.mp3", "Detecting language...", timed_out=True)) == "timeout"
    assert node_status(_step("curl http://x", "", timed_out=True)) == "timeout"


def test_adversarial_and_prefixed_outputs() -> None:
    # a long last line that looks like many pytest summaries ends at once (it backtracked cubically)
    assert node_status(_step("python x.py", "= " + "1 failed in 1s " * 520)) == "ok"
    # a log shown after `cd`/`export` is still a log's traceback
    assert node_status(_step("cd /app && tail -50 log.txt", _TRACEBACK, programs=["cd", "tail"])) == "ok"
    assert node_status(_step("export A=1 && cat log.txt", _TRACEBACK, programs=["export", "cat"])) == "ok"
    assert node_status(_step("cd /app && python r.py", _TRACEBACK, programs=["cd", "python"])) == "error"
    # a virtualenv's prompt after the traceback is the terminal's
    venv = "root@abc:/app# python x.py\n" + _TRACEBACK + "(venv) root@abc:/app# "
    assert node_status(_step("python x.py", venv)) == "error"
