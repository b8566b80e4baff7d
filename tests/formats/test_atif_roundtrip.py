"""Round trip of Harbor ATIF trajectories: whatever the texts, ingest keeps the task message, each agent
step's message and reasoning, each call's name, arguments and id, its result (linked by
`source_call_id`, in any order), and the step's prompt and completion tokens."""

from __future__ import annotations

import json
from typing import Any

from format_checks import call_values, parse_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TEXT = st.text(min_size=1, max_size=60).filter(str.strip)
ARGS = st.fixed_dictionaries({"keystrokes": TEXT}, optional={"duration": st.floats(0, 60)})
CALL = st.tuples(st.sampled_from(["bash_command", "read_file", "web_search"]), ARGS, TEXT)
STEP = st.tuples(
    st.none() | TEXT,  # message
    st.none() | TEXT,  # reasoning_content
    st.lists(CALL, max_size=3),
    st.booleans(),  # results listed in reverse order
    st.integers(0, 10**6),  # prompt tokens
    st.integers(0, 10**4),  # completion tokens
)


def _trajectory(task: str, steps: list[tuple]) -> dict[str, Any]:
    out = [{"step_id": 1, "timestamp": "2025-03-01T10:00:00Z", "source": "user", "message": task}]
    n = 0
    for message, reasoning, calls, reverse, prompt, completion in steps:
        step: dict[str, Any] = {
            "step_id": len(out) + 1,
            "timestamp": "2025-03-01T10:00:05Z",
            "source": "agent",
        }
        step["message"] = message if message is not None else ""
        if reasoning is not None:
            step["reasoning_content"] = reasoning
        if calls:
            ids = [f"call_{n + i}" for i in range(len(calls))]
            n += len(calls)
            step["tool_calls"] = [
                {"tool_call_id": cid, "function_name": name, "arguments": args}
                for cid, (name, args, _) in zip(ids, calls)
            ]
            results = [{"source_call_id": cid, "content": res} for cid, (_, _, res) in zip(ids, calls)]
            step["observation"] = {"results": results[::-1] if reverse else results}
        step["metrics"] = {"prompt_tokens": prompt, "completion_tokens": completion}
        out.append(step)
    return {
        "schema_version": "ATIF-v1.5",
        "session_id": "sess-roundtrip",
        "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "openai/gpt-5"},
        "steps": out,
    }


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(task=TEXT, steps=st.lists(STEP, min_size=1, max_size=4))
def test_messages_calls_results_and_tokens_survive_ingest(task: str, steps: list[tuple]) -> None:
    [(traj, rows)], ctx = parse_text("trajectory.json", json.dumps(_trajectory(task, steps)), "atif")
    assert ctx.records_quarantined == 0
    assert [r["text"] for r in rows if r["kind"] == "user"] == [task]
    # an agent step without calls is an assistant step even when it said nothing (its tokens need a home)
    said = [m or "" for m, _, cs, *_ in steps if m or not cs]
    assert [r["text"] for r in rows if r["kind"] == "assistant"] == said
    assert [r["text"] for r in rows if r["kind"] == "reasoning"] == [x for _, x, *_ in steps if x is not None]
    calls = [c for _, _, cs, *_ in steps for c in cs]
    got = call_values(rows, "call_id", "tool_name", "arguments", "output")
    assert got == [(f"call_{i}", name, args, res) for i, (name, args, res) in enumerate(calls)]
    assert traj["n_tool_calls"] == len(calls)
    tokens = [
        (r.get("input_tokens"), r.get("output_tokens")) for r in rows if r.get("input_tokens") is not None
    ]
    assert sum(i for i, _ in tokens) == sum(s[4] for s in steps)
    assert sum(o or 0 for _, o in tokens) == sum(s[5] for s in steps)
