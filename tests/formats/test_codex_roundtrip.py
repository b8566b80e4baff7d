"""Round trip of Codex rollouts: whatever the commands print (including text that looks like the
exec-output header), ingest keeps each call's command, output, exit code and error flag, and the
message texts, with and without the `exec_command_end` events."""

from __future__ import annotations

import json
from typing import Any

from format_checks import call_values, parse_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TS = "2026-03-02T10:00:{:02d}.000Z"
TEXT = st.text(min_size=1, max_size=60).filter(str.strip)
OUTPUT = st.text(max_size=80) | st.sampled_from(
    [
        "Process exited with code 0\nOutput:\nfake\n",
        "Chunk ID: x\nWall time: 1 seconds\n",
        "Output:\n\nOutput:\n",
        "a\x00b\r\n\ttabs",
        "<script>alert(1)</script>",
    ]
)
CALL = st.tuples(TEXT, OUTPUT, st.sampled_from([0, 1, 2, 127]) | st.integers(0, 255))


def _rollout(prompt: str, calls: list[tuple[str, str, int]], end_events: bool) -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = []

    def add(kind: str, payload: dict[str, Any]) -> None:
        recs.append({"timestamp": TS.format(len(recs) % 60), "type": kind, "payload": payload})

    add("session_meta", {"id": "0199aaaa-1111-7000-8000-00000000abcd", "cwd": "/w", "cli_version": "0.125.0"})
    add("turn_context", {"turn_id": "t1", "cwd": "/w", "model": "gpt-5.5", "effort": "high"})
    add(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
    )
    for i, (cmd, out, code) in enumerate(calls):
        cid = f"call_{i}"
        args = json.dumps({"cmd": cmd, "yield_time_ms": 1000})
        add(
            "response_item",
            {"type": "function_call", "name": "exec_command", "arguments": args, "call_id": cid},
        )
        if end_events:
            end = {"call_id": cid, "command": ["/bin/bash", "-lc", cmd], "stdout": out, "stderr": ""}
            add("event_msg", {"type": "exec_command_end", **end, "aggregated_output": out, "exit_code": code})
        body = f"Chunk ID: {i:06x}\nWall time: 0.1000 seconds\nProcess exited with code {code}\n"
        body += f"Original token count: {len(out.split())}\nOutput:\n{out}"
        add("response_item", {"type": "function_call_output", "call_id": cid, "output": body})
    add(
        "response_item",
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    )
    return recs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=TEXT, calls=st.lists(CALL, min_size=1, max_size=4), end_events=st.booleans())
def test_commands_outputs_and_exit_codes_survive_ingest(
    prompt: str, calls: list[tuple[str, str, int]], end_events: bool
) -> None:
    [(traj, steps)], ctx = parse_text(
        "rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-00000000abcd.jsonl",
        "".join(json.dumps(r) + "\n" for r in _rollout(prompt, calls, end_events)),
        "codex-rollout",
    )
    assert ctx.records_quarantined == 0
    users = [s["text"] for s in steps if s["kind"] == "user"]
    assert users[-1] == prompt
    got = call_values(steps, "command", "output", "exit_code", "is_error")
    assert got == [(cmd, out, code, code != 0) for cmd, out, code in calls]
    assert traj["final_answer"] == "done" and traj["n_tool_calls"] == len(calls)
