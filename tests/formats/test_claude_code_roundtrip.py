"""Round trip of Claude Code transcripts: whatever the texts, ingest keeps the prompt, every assistant
text, every Bash call's command and its result (error flag included), linked by tool_use id, whether
the result comes back in order or after a later call of the same response (parallel calls)."""

from __future__ import annotations

import json
from typing import Any

from format_checks import call_values, parse_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SESSION = "5e55a0e0-0000-4000-8000-00000000beef"
TEXT = st.text(min_size=1, max_size=60).filter(str.strip)
OUTPUT = st.text(min_size=1, max_size=80) | st.sampled_from(
    ["<img src=x onerror=alert(1)>", "a\x00b", "\u202e"]
)
CALL = st.tuples(TEXT, OUTPUT, st.booleans())
# a response: an optional text, then 1-3 Bash calls whose results come back together after them
RESPONSE = st.tuples(st.none() | TEXT, st.lists(CALL, min_size=1, max_size=3))


def _transcript(prompt: str, responses: list[tuple[str | None, list[tuple[str, str, bool]]]]) -> list[dict]:
    recs: list[dict[str, Any]] = []
    parent: str | None = None

    def add(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal parent
        uuid = f"u-{len(recs):04d}"
        recs.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/w",
                "sessionId": SESSION,
                "version": "2.1.39",
                "type": kind,
                "message": message,
                "uuid": uuid,
                "timestamp": f"2026-03-03T09:{len(recs) // 60:02d}:{len(recs) % 60:02d}.000Z",
                **extra,
            }
        )
        parent = uuid

    add("user", {"role": "user", "content": prompt})
    n = 0
    for r, (text, calls) in enumerate(responses):
        msg = {"model": "claude-opus-4-6", "id": f"msg_{r}", "type": "message", "role": "assistant"}
        usage = {"input_tokens": 5, "output_tokens": 3}
        if text is not None:
            add("assistant", {**msg, "content": [{"type": "text", "text": text}], "usage": usage})
        ids = []
        for cmd, _, _ in calls:
            ids.append(f"toolu_{n:04d}")
            n += 1
            block = {"type": "tool_use", "id": ids[-1], "name": "Bash", "input": {"command": cmd}}
            add("assistant", {**msg, "content": [block], "usage": usage})
        for tid, (_, out, err) in zip(ids, calls):
            block = {"tool_use_id": tid, "type": "tool_result", "content": out, "is_error": err}
            add("user", {"role": "user", "content": [block]})
    return recs


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=TEXT, responses=st.lists(RESPONSE, min_size=1, max_size=4))
def test_texts_commands_and_results_survive_ingest(prompt: str, responses: list) -> None:
    [(traj, steps)], ctx = parse_text(
        f"-w/{SESSION}.jsonl",
        "".join(json.dumps(r) + "\n" for r in _transcript(prompt, responses)),
        "claude-code",
    )
    assert ctx.records_quarantined == 0 and not traj.get("anomalies")
    assert [s["text"] for s in steps if s["kind"] == "user"] == [prompt]
    assert [s["text"] for s in steps if s["kind"] == "assistant"] == [
        t for t, _ in responses if t is not None
    ]
    got = call_values(steps, "call_id", "command", "output", "is_error")
    calls = [c for _, cs in responses for c in cs]
    assert got == [(f"toolu_{i:04d}", cmd, out, err) for i, (cmd, out, err) in enumerate(calls)]
    assert traj["n_tool_calls"] == len(calls)
