"""Node rules: status of every documented case, document modality, and depth/width/longest-path metrics."""

from __future__ import annotations

import pytest
from dagfix import Run, edge

from trajlab.dag import build_dag, render_text


def _status(**step: object) -> str:
    row = {"trajectory_id": "t_s", "step_index": 0, "agent_id": "main", "kind": "tool_call", **step}
    d = build_dag({"trajectory_id": "t_s"}, [row])
    return d.nodes[0]["status"]


@pytest.mark.parametrize(
    ("step", "status"),
    [
        ({"tool": "bash", "output": "hi", "exit_code": 0}, "ok"),
        ({"tool": "bash", "output": "", "exit_code": 0}, "ok"),  # exit 0 vouches for an empty output
        ({"tool": "bash", "output": None, "exit_code": None}, "no-output"),
        ({"tool": "bash", "output": "boom", "exit_code": 2}, "error"),
        ({"tool": "read", "output": "EISDIR", "is_error": True}, "error"),
        ({"tool": "bash", "output": "partial", "timed_out": True}, "timeout"),
        ({"tool": "bash", "output": "", "exit_code": 124}, "timeout"),
        ({"tool": "bash", "output": "Command timed out after 120s", "is_error": True}, "timeout"),
        # grep/diff exit 1 is "no match" / "differs", not a failure
        ({"tool": "grep", "programs": ["grep"], "output": "", "exit_code": 1, "is_error": True}, "no-output"),
        ({"tool": "diff", "programs": ["diff"], "output": "< a\n> b", "exit_code": 1}, "ok"),
        ({"tool": "cat", "programs": ["cat", "grep"], "output": "", "exit_code": 1}, "no-output"),
        # ... but not for other programs, nor when something went to stderr
        ({"tool": "python", "programs": ["python"], "output": "", "exit_code": 1}, "error"),
        (
            {"tool": "grep", "programs": ["grep"], "output": "", "exit_code": 1, "stderr": "No such file"},
            "error",
        ),
        # ... nor when the output (stderr merged into it, as Codex and Claude Code log it) is nothing
        # but another program's error: the grep found nothing because that program failed
        (
            {
                "tool": "ps",
                "programs": ["ps", "rg"],
                "output": "zsh:1: operation not permitted: ps\n",
                "exit_code": 1,
            },
            "error",
        ),
        (
            {
                "tool": "cat",
                "programs": ["cat", "grep"],
                "output": "cat: a.txt: No such file or directory",
                "exit_code": 1,
            },
            "error",
        ),
        (
            {
                "tool": "x",
                "programs": ["x", "grep"],
                "output": "bash: line 1: x: command not found\n",
                "exit_code": 1,
            },
            "error",
        ),
        (
            {"tool": "x", "programs": ["x", "grep"], "output": "/bin/sh: 1: x: not found", "exit_code": 1},
            "error",
        ),
        # a header an earlier command printed, a shell warning, or a count is still "no match"
        ({"tool": "grep", "programs": ["echo", "grep"], "output": "== logs ==\n", "exit_code": 1}, "ok"),
        (
            {
                "tool": "grep",
                "programs": ["grep"],
                "output": "bash: warning: setlocale: LC_ALL: cannot change locale",
                "exit_code": 1,
            },
            "ok",
        ),
        ({"tool": "grep", "programs": ["grep"], "output": "0\n", "exit_code": 1}, "ok"),
        # matched lines that quote such errors (file-prefixed), or errors among other lines, are not the cause
        (
            {
                "tool": "grep",
                "programs": ["grep"],
                "output": "a.log:bash: x: command not found\n",
                "exit_code": 1,
            },
            "ok",
        ),
        (
            {"tool": "grep", "programs": ["grep"], "output": "x: not found\nsome other line", "exit_code": 1},
            "ok",
        ),
    ],
)
def test_status_rules(step: dict[str, object], status: str) -> None:
    assert _status(**step) == status


def test_document_modality() -> None:
    r = Run(domain="document")
    r.user("What is the total on page 3 of report.pdf?")  # 0
    r.bash("pdftotext -layout report.pdf report.txt", "")  # 1
    r.bash("grep -n Total report.txt", "88:Total 4,210")  # 2
    r.call("Read", {"file_path": "/work/notes.docx"}, "notes")  # 3
    r.bash("cat summary.md", "# summary")  # 4
    r.say("The total is 4,210.")  # 5
    d = r.dag()
    mod = {n["node_id"]: n["modality"] for n in d.nodes}
    assert [mod[i] for i in range(6)] == ["text", "document", "file", "document", "file", "text"]
    assert edge(d, 1, 2, "data")["artifact"] == "report.txt"
    assert edge(d, 2, 5, "answer")["artifact"] == "value:4210"
    # the unrelated .docx read is a second document branch that never reached the answer
    assert d.metrics["branches"] == ["document#1", "document#2"]
    assert d.metrics["answer_branches"] == ["document#1"]
    assert {n["node_id"]: n["branch"] for n in d.nodes}[3] == "document#2"
    # the modality did reach the answer through branch 1: the spare branch is no candidate
    assert [(c["step_index"], c["signal"]) for c in d.candidates][:1] == [(2, "answer_source")]
    assert all(c["signal"] != "modality_branch_unused" for c in d.candidates)


def test_thousands_separators_link_printed_and_typed_values() -> None:
    r = Run(domain="image")
    r.user("chart.png shows revenue per region; what is the sum for north and south?")  # 0
    r.bash("tesseract chart.png - --psm 6", "NORTH 12,480\nSOUTH 3,055\nWEST 14,210,000")  # 1
    r.bash('python3 -c "print(12480 + 3055)"', "15535")  # 2
    r.bash('python3 -c "print(4210 * 2)"', "8420")  # 3: 4210 appears only inside 14,210,000
    r.bash('python3 -c "print(3055 / 5)"', "611.0")  # 4
    r.say("North plus south is 15,535.")  # 5
    d = r.dag()
    assert edge(d, 1, 2, "data")["artifact"] in {"value:12480", "value:3055"}
    assert not [e for e in d.edges if e["src"] == 1 and e["dst"] == 3 and e["type"] == "data"]
    assert edge(d, 1, 4, "data")["artifact"] == "value:3055"
    assert edge(d, 2, 5, "answer")["artifact"] == "value:15535"


def test_depth_width_and_longest_path_of_a_parallel_batch() -> None:
    r = Run(domain="video")
    r.user("Compare the durations of a.mp4, b.mp4 and c.mp4; which is longest?")  # 0
    r.think("Probe all three at once.")  # 1
    r.bash("ffprobe -v error -show_entries format=duration a.mp4", "duration=12.5")  # 2
    r.bash("ffprobe -v error -show_entries format=duration b.mp4", "duration=48.25", parallel=True)  # 3
    r.bash("ffprobe -v error -show_entries format=duration c.mp4", "duration=30.75", parallel=True)  # 4
    r.say("b.mp4 is the longest at 48.25 s.")  # 5
    d = r.dag()
    nodes = {n["node_id"]: n for n in d.nodes}
    assert [nodes[i]["parallel_batch"] for i in range(6)] == [None, None, 2, 2, 2, None]
    assert [nodes[i]["layer"] for i in range(6)] == [0, 1, 2, 2, 2, 3]
    for i in (2, 3, 4):
        assert edge(d, 1, i, "sequence")["rule"] == "fan-out"
        assert edge(d, i, 5, "sequence")["rule"] == "fan-in"
        assert edge(d, 0, i, "data")["rule"] == "revealed-path"
    assert edge(d, 3, 5, "answer")["artifact"] == "value:48.25"
    m = d.metrics
    # four layers (task, reasoning, the batch, answer); three calls side by side; data path 0 -> 3 -> 5
    assert (m["depth"], m["width"], m["longest_path"]) == (4, 3, 3)
    assert {n["node_id"] for n in d.nodes if n["is_dead_end"]} == {2, 4}
    assert m["answer_path_share"] == pytest.approx(1 / 3)
    # each probed file starts its own video branch; only b.mp4's fed the answer
    assert m["branches"] == ["video#1", "video#2", "video#3"] and m["answer_branches"] == ["video#2"]
    assert m["n_merges"] == 0


def test_peer_agents_share_one_thread() -> None:
    """Agents of one conversation that nobody spawned (Who&When, AutoGen) take turns: no sub-agents."""
    r = Run(domain="math")
    r.user("What is 17 * 23?")  # 0
    r.say("Plan: ask the coder to compute it.", agent_id="Orchestrator")  # 1
    r.bash('python3 -c "print(17 * 23)"', "391", agent_id="Coder")  # 2
    r.say("The answer is 391.", agent_id="Orchestrator")  # 3
    d = r.dag()
    assert d.anomalies == []
    assert [(e["src"], e["dst"], e["rule"]) for e in d.edges if e["type"] == "sequence"] == [
        (0, 1, "next"),
        (1, 2, "next"),
        (2, 3, "next"),
    ]
    assert not [e for e in d.edges if e["type"] in ("spawn", "return")]
    assert d.metrics["answer_step"] == 3
    assert edge(d, 2, 3, "answer")["artifact"] == "value:391"
    rows = render_text(d, r.steps).splitlines()
    assert "[Coder] python3" in next(x for x in rows if x.strip().startswith("2 ok"))
    assert "[Orchestrator] The answer is 391." in next(x for x in rows if x.strip().startswith("3 ok"))
    assert "[" not in next(x for x in rows if x.strip().startswith("0 ok"))
