"""Bad input never crashes the builder: the graph is built, stays acyclic, and anomalies are recorded."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import networkx as nx
from dagfix import Run, edge, edge_set
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlab.dag import build_dag


def _acyclic(d) -> None:
    assert all(e["src"] < e["dst"] for e in d.edges)
    assert nx.is_directed_acyclic_graph(d.graph)


def _simple() -> Run:
    r = Run()
    r.user("Fix the bug in app.py")
    r.bash("cat app.py", "def f():\n    return 1")
    r.call("Edit", {"file_path": "app.py", "old_string": "return 1", "new_string": "return 2"}, "ok")
    r.bash("python -m pytest -q", "1 passed")
    r.say("Fixed app.py.")
    return r


def test_steps_out_of_order_are_sorted() -> None:
    r = _simple()
    ref = r.dag()
    shuffled = list(r.steps)
    random.Random(3).shuffle(shuffled)
    d = build_dag(r.trajectory, shuffled)
    assert "steps out of order in the input: sorted by step_index" in d.anomalies
    assert edge_set(d) == edge_set(ref)
    _acyclic(d)


def test_duplicate_step_index_and_gaps() -> None:
    r = _simple()
    steps = [*r.steps, dict(r.steps[2])]
    del steps[1]
    d = build_dag(r.trajectory, steps)
    assert "duplicate step_index 2: later copies dropped" in d.anomalies
    assert "step_index gaps: 1 indexes missing" in d.anomalies
    assert [n["node_id"] for n in d.nodes] == [0, 2, 3, 4]
    _acyclic(d)


def test_duplicate_call_ids() -> None:
    r = _simple()
    r.steps[3]["call_id"] = r.steps[1]["call_id"]
    d = r.dag()
    assert "duplicate call id call_1 at steps 1, 3" in d.anomalies
    _acyclic(d)


def test_result_without_call_and_second_result() -> None:
    r = _simple()
    r._add("tool_result", role="tool", call_id="ghost", output="orphan output 4242")
    r._add("tool_result", role="tool", call_id="call_1", output="late second result")
    r.bash("echo 4242", "4242")
    d = r.dag()
    nodes = {n["node_id"]: n for n in d.nodes}
    assert nodes[5]["kind"] == "result" and nodes[6]["kind"] == "result"
    assert "result without call at step 5 (call id ghost)" in d.anomalies
    assert "second result for call call_1 at step 6" in d.anomalies
    assert edge(d, 1, 6, "data")["rule"] == "late-result"
    assert edge(d, 5, 7, "data")["artifact"] == "value:4242"  # an orphan result still feeds later steps
    _acyclic(d)


def test_call_without_result() -> None:
    r = _simple()
    r.steps[3].update(output=None, exit_code=None, is_error=False)
    d = r.dag()
    assert "call without result at step 3 (call id call_3)" in d.anomalies
    assert {n["node_id"]: n["status"] for n in d.nodes}[3] == "no-output"
    _acyclic(d)


def test_missing_subagent_transcript_and_orphan_subagent() -> None:
    r = Run()
    r.user("Research the API")
    r.call(
        "Task", {"prompt": "find the docs", "subagent_type": "general"}, "The docs say X."
    )  # 1, no child steps
    r.say("Done.")  # 2
    r._add("assistant", role="assistant", text="child output", agent_id="a77", depth=1, parent_step_index=40)
    d = r.dag()
    # a77 is what step 1 spawned (inferred): its transcript is not missing
    assert [a for a in d.anomalies if "sub-agent" in a] == [
        "sub-agent a77: spawning step 40 not found; spawn inferred from step 1"
    ]
    assert edge(d, 1, 3, "spawn")["rule"] == "spawn-inferred"
    _acyclic(d)
    alone = Run()
    alone.user("Research the API")
    alone.call("Task", {"prompt": "find the docs"}, "The docs say X.")  # 1, no sub-agent steps anywhere
    alone.say("Done.")
    assert "sub-agent of step 1 has no steps (transcript missing)" in alone.dag().anomalies


def test_subagent_naming_its_own_step_as_parent() -> None:
    """Before: 'sub-agent a9: spawning step 3 not found' though step 3 exists (the agent's own first step),
    and 'sub-agent of step 1 has no steps (transcript missing)' though a spawn edge 1 -> 3 was inferred."""
    r = Run()
    r.user("Research the API")  # 0
    r.call("Task", {"prompt": "find the docs"}, "The docs say X.")  # 1
    r.say("Done.")  # 2
    r._add("user", role="user", text="find the docs", agent_id="a9", depth=1, parent_step_index=3)  # 3
    r._add("assistant", role="assistant", text="X.", agent_id="a9", depth=1, parent_step_index=3)  # 4
    d = r.dag()
    assert [a for a in d.anomalies if "sub-agent" in a] == [
        "sub-agent a9: names its own step 3 as its spawning step; spawn inferred from step 1"
    ]
    assert edge(d, 1, 3, "spawn")["rule"] == "spawn-inferred"
    _acyclic(d)


def test_subagent_whose_spawning_step_comes_after_it() -> None:
    r = Run()
    r.user("Research the API")  # 0
    r.call("Task", {"prompt": "find the docs"}, "The docs say X.")  # 1
    r._add("assistant", role="assistant", text="X.", agent_id="a9", depth=1, parent_step_index=3)  # 2
    r.say("Done.")  # 3
    d = r.dag()
    assert [a for a in d.anomalies if "sub-agent" in a] == [
        "sub-agent a9: spawning step 3 comes after its first step 2; spawn inferred from step 1"
    ]
    _acyclic(d)


def test_compaction_that_rewrites_history() -> None:
    r = Run()
    r.user("Summarize the repository layout please, in detail.")  # 0
    r.bash("ls src", "a.py\nb.py")  # 1
    c = r.compaction("Summary: the repo has src/a.py and src/b.py")  # 2
    r.steps[-1]["timestamp"] = r.clock
    r.user("Summarize the repository layout please, in detail.")  # 3: replayed prompt
    r.steps[-1]["timestamp"] = r.clock - timedelta(minutes=5)  # dated before the compaction
    r.bash("cat src/a.py", "x = 1")  # 4
    d = r.dag()
    assert f"compaction at step {c} rewrites history: 1 later steps are dated before it" in d.anomalies
    assert f"compaction at step {c} replays 1 earlier messages (first at step 3)" in d.anomalies
    assert any(a.startswith("timestamps go backwards at 1 steps") for a in d.anomalies)
    assert edge(d, 1, 2, "summary")["rule"] == "revealed-path"  # the summary carries what ls revealed
    assert edge(d, 2, 4, "data")["rule"] == "revealed-path"  # and the step after it reads from the summary
    empty = Run()
    empty.compaction("")
    assert "compaction at step 0 has no summary text" in empty.dag().anomalies


def test_garbage_rows() -> None:
    now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    steps = [
        {"step_index": 0, "kind": "weird", "text": "\x1b[31mred\x07 text"},
        {"step_index": 1, "kind": "tool_call", "arguments": "{not json", "output": "\x00\x01binary"},
        {
            "step_index": 2,
            "kind": "tool_call",
            "tool_name": "Bash",
            "command": "echo 'unterminated",
            "output": None,
        },
        {"step_index": 3, "kind": None, "timestamp": now},
        {"step_index": "x", "kind": "user"},
        {
            "step_index": 4,
            "kind": "tool_call",
            "tool_name": "Write",
            "arguments": '["a", 1]',
            "output": "x" * 100_000,
        },
    ]
    d = build_dag({"trajectory_id": "t_bad"}, steps)
    assert [n["node_id"] for n in d.nodes] == [0, 1, 2, 3, 4]
    assert "1 steps without a step_index dropped" in d.anomalies
    assert "\x1b" not in (d.nodes[0]["label"] or "") and "\x07" not in (d.nodes[0]["label"] or "")
    _acyclic(d)
    assert build_dag({}, []).metrics["n_nodes"] == 0


_KINDS = ["user", "system", "assistant", "reasoning", "tool_call", "tool_result", "compaction", "bogus"]
_COMMANDS = [
    "ls frames",
    "ffmpeg -i a.mp4 frames/%03d.png",
    "cat frames/001.png > x.txt",
    "python3 x.py 17",
    "whisper a.wav --output_dir t",
    "grep 17 t/a.txt",
    "echo 'oops",
    "rm x.txt",
]


@st.composite
def _steps(draw):
    n = draw(st.integers(0, 25))
    agents = ["main", "main", "main", "sub1", "sub2"]
    steps = []
    for _ in range(n):
        kind = draw(st.sampled_from(_KINDS))
        agent = draw(st.sampled_from(agents))
        steps.append(
            {
                "step_index": draw(st.integers(0, 30)),
                "kind": kind,
                "agent_id": agent,
                "depth": 0 if agent == "main" else draw(st.integers(0, 2)),
                "parent_step_index": draw(st.one_of(st.none(), st.integers(-2, 35))),
                "tool": draw(st.sampled_from([None, "subagent", "ffmpeg", "poll", "submit", "grep"])),
                "command": draw(st.sampled_from([None, *_COMMANDS])),
                "output": draw(
                    st.one_of(st.none(), st.sampled_from(["17", "frames/001.png", "", "x 4242 y"]))
                ),
                "text": draw(st.one_of(st.none(), st.text(max_size=30))),
                "exit_code": draw(st.sampled_from([None, 0, 1, 124])),
                "is_error": draw(st.booleans()),
                "call_id": draw(st.sampled_from([None, "c1", "c2", "c3"])),
                "metadata": draw(st.sampled_from([None, '{"polls": "c1", "session_id": 3}', "{bad"])),
                "input_tokens": draw(st.sampled_from([None, 10])),
            }
        )
    return steps


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_steps(), st.sampled_from([None, "audio", "mixed", "video"]), st.sampled_from([None, "", "17"]))
def test_never_raises_and_stays_acyclic(steps, domain, final) -> None:
    d = build_dag(
        {"trajectory_id": "t_h", "domain": domain, "final_answer": final, "task": "see a.mp4"}, steps
    )
    _acyclic(d)
    assert len(d.nodes) == len({s["step_index"] for s in steps})
    assert d.metrics["n_edges"] == len(d.edges)
    for c in d.candidates:
        # `term` only on unevidenced_origin candidates (DAG_VERSION 13)
        assert set(c) - {"term"} == {"step_index", "reason", "signal", "score"} and 0 < c["score"] <= 1
        assert "term" not in c or c["signal"] == "unevidenced_origin"


def test_retry_with_empty_arguments() -> None:
    """A failed call retried by the same tool with empty (or blank) arguments: found by the hypothesis
    test above as an IndexError in the retry rule."""
    for empty in ("", "   "):
        r = Run()
        r.user("list the items")
        r.call("mcp__srv__list", {"query": "all items"}, "server error", exit_code=1)  # 1
        r.call("mcp__srv__list", empty, "a\nb")  # 2: the same tool, no arguments
        r.say("a and b")
        d = r.dag()
        assert {n["node_id"]: n["status"] for n in d.nodes}[1] == "error"
        _acyclic(d)
