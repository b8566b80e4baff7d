"""Round trip of SWE-agent .traj files: whatever the texts, ingest keeps every step's action as the
command, its observation as the output, the thought, and the issue text."""

from __future__ import annotations

import json
from typing import Any

from format_checks import call_values, parse_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TEXT = st.text(min_size=1, max_size=60).filter(str.strip)
# actions are shell lines or SWE-agent commands, one line each (a multi-line action is an edit block)
ACTION = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() and "\n" not in s and "\r" not in s)
STEP = st.tuples(ACTION, st.text(max_size=80), TEXT)


def _traj(issue: str, steps: list[tuple[str, str, str]]) -> dict[str, Any]:
    history: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "SETTING: a command line.",
            "agent": "main",
            "message_type": "system_prompt",
        },
        {"role": "user", "content": issue, "agent": "main", "message_type": "observation"},
    ]
    for action, observation, thought in steps:
        history.append(
            {
                "role": "assistant",
                "content": thought,
                "thought": thought,
                "action": action,
                "agent": "main",
                "message_type": "action",
            }
        )
        history.append(
            {"role": "user", "content": observation, "agent": "main", "message_type": "observation"}
        )
    return {
        "environment": "swe_main",
        "trajectory": [
            {"action": a, "observation": o, "response": t, "thought": t, "execution_time": 0.1, "state": {}}
            for a, o, t in steps
        ],
        "history": history,
        "info": {
            "exit_status": "submitted",
            "submission": "diff --git a/x b/x\n",
            "swe_agent_version": "0.7.0",
        },
    }


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(issue=TEXT, steps=st.lists(STEP, min_size=1, max_size=5))
def test_actions_observations_and_thoughts_survive_ingest(
    issue: str, steps: list[tuple[str, str, str]]
) -> None:
    [(traj, rows)], ctx = parse_text("repo__repo-1.traj", json.dumps(_traj(issue, steps)), "swe-agent")
    assert ctx.records_quarantined == 0
    assert issue in [r["text"] for r in rows if r["kind"] == "user"]
    assert call_values(rows, "command", "output") == [(a, o) for a, o, _ in steps]
    thoughts = [r["text"] for r in rows if r["kind"] in ("assistant", "reasoning")]
    assert thoughts == [t for _, _, t in steps]
    assert traj["n_tool_calls"] == len(steps)
