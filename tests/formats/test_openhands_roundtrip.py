"""Round trip of OpenHands event lists: whatever the commands print, ingest keeps the user message,
every `run` action's command, its observation's output and exit code (linked by `cause`, also when
the observations come back after several actions), and the agent's messages."""

from __future__ import annotations

import json
from typing import Any

from format_checks import call_values, parse_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TEXT = st.text(min_size=1, max_size=60).filter(str.strip)
OUTPUT = st.text(max_size=80) | st.sampled_from(
    ["[The command completed with exit code 1.]", "a\x00b", "<i>"]
)
RUN = st.tuples(TEXT, OUTPUT, st.sampled_from([0, 1, 2, 127]) | st.integers(0, 255))
# a turn: the agent's runs, observed together after them, then maybe a message
TURN = st.tuples(st.lists(RUN, min_size=1, max_size=3), st.none() | TEXT)


def _events(prompt: str, turns: list[tuple[list[tuple[str, str, int]], str | None]]) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = []

    def add(**e: Any) -> int:
        ev.append(
            {"id": len(ev), "timestamp": f"2025-02-10T12:{len(ev) // 60:02d}:{len(ev) % 60:02d}.000000", **e}
        )
        return len(ev) - 1

    add(source="user", message=prompt, action="message", args={"content": prompt, "image_urls": None})
    for runs, said in turns:
        ids = [
            add(
                source="agent",
                message=f"Running command: {cmd}",
                action="run",
                args={"command": cmd, "thought": ""},
            )
            for cmd, _, _ in runs
        ]
        for aid, (cmd, out, code) in zip(ids, runs):
            meta = {"exit_code": code, "pid": -1, "working_dir": "/workspace"}
            add(
                source="agent",
                message=f"Command `{cmd}` executed with exit code {code}.",
                cause=aid,
                observation="run",
                content=out,
                extras={"command": cmd, "metadata": meta},
            )
        if said is not None:
            add(
                source="agent",
                message=said,
                action="message",
                args={"content": said, "wait_for_response": True},
            )
    return ev


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=TEXT, turns=st.lists(TURN, min_size=1, max_size=4))
def test_commands_outputs_and_exit_codes_survive_ingest(prompt: str, turns: list) -> None:
    [(traj, steps)], ctx = parse_text("events.json", json.dumps(_events(prompt, turns)), "openhands")
    assert ctx.records_quarantined == 0
    assert [s["text"] for s in steps if s["kind"] == "user"] == [prompt]
    assert [s["text"] for s in steps if s["kind"] == "assistant"] == [m for _, m in turns if m is not None]
    runs = [r for rs, _ in turns for r in rs]
    got = call_values(steps, "command", "output", "exit_code", "is_error")
    assert got == [(cmd, out, code, code != 0) for cmd, out, code in runs]
    assert traj["n_tool_calls"] == len(runs)
