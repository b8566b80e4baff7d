"""Round trip of OpenAI chat-message conversations: whatever the texts, ingest keeps every message's
text, every call's name, arguments and id, and links every result to its call, in order."""

from __future__ import annotations

import json
from typing import Any

from format_checks import call_values, parse_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Any Unicode (NUL, control characters, RTL marks, emoji, markup-looking text), not blank; `<think>` is
# the reasoning markup the adapter splits on by design, so it is left out here.
TEXT = (
    st.text(min_size=1, max_size=60)
    | st.sampled_from(["<b>bold</b>", "'; DROP TABLE steps; --", "a\x00b", "\u202eevil"])
).filter(lambda s: s.strip() and "<think>" not in s and "</think>" not in s)
ARGS = st.dictionaries(st.sampled_from(["command", "path", "query", "code"]), TEXT, min_size=1, max_size=3)
CALL = st.tuples(
    st.sampled_from(["bash", "python", "web_search", "read_file", "str_replace_editor"]), ARGS, TEXT
)
TURN = st.one_of(
    st.tuples(st.sampled_from(["system", "user", "assistant"]), TEXT),
    st.tuples(st.just("tools"), st.lists(CALL, min_size=1, max_size=3)),
)


def _messages(turns: list[tuple[str, Any]]) -> tuple[list[dict[str, Any]], list[str], list[tuple]]:
    """The messages, the texts in order, and the calls (id, name, args, result) in order."""
    msgs: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[tuple[str, str, dict, str]] = []
    for role, body in turns:
        if role != "tools":
            msgs.append({"role": role, "content": body})
            texts.append(body)
            continue
        ids = [f"call_{len(calls) + i}" for i in range(len(body))]
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                    for cid, (name, args, _) in zip(ids, body)
                ],
            }
        )
        for cid, (name, args, result) in zip(ids, body):
            msgs.append({"role": "tool", "tool_call_id": cid, "content": result})
            calls.append((cid, name, args, result))
    return msgs, texts, calls


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(TURN, min_size=1, max_size=8))
def test_texts_calls_and_results_survive_ingest(turns: list[tuple[str, Any]]) -> None:
    msgs, texts, calls = _messages([("user", "start"), *turns])
    [(traj, steps)], ctx = parse_text("conversation.json", json.dumps(msgs), "chat-messages")
    assert ctx.records_quarantined == 0 and traj["anomalies"] == []
    text_steps = [s for s in steps if s["kind"] in ("system", "user", "assistant", "reasoning")]
    assert [s["text"] for s in text_steps] == texts
    assert call_values(steps, "call_id", "tool_name", "arguments", "output") == calls
    assert [s["step_index"] for s in steps] == list(range(len(steps)))
    assert traj["n_steps"] == len(steps) and traj["n_tool_calls"] == len(calls)
