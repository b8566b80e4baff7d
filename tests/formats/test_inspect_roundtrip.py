"""Round trip of Inspect AI JSON logs: whatever the texts, and whether a text is inline or an
`attachment://` reference, ingest keeps every sample (one trajectory per sample and epoch), its prompt,
assistant texts, tool calls with arguments, results and errors, and the outcome its score gives."""

from __future__ import annotations

import json
from typing import Any

from format_checks import call_values, parse_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TEXT = st.text(min_size=1, max_size=60).filter(lambda s: s.strip() and not s.startswith("attachment://"))
CALL = st.tuples(st.sampled_from(["bash", "python"]), TEXT, TEXT, st.booleans())  # name, arg, result, error
TURN = st.tuples(st.none() | TEXT, st.lists(CALL, max_size=2))
SAMPLE = st.tuples(
    TEXT,  # prompt
    st.lists(TURN, min_size=1, max_size=3),
    st.sampled_from(["C", "I"]),  # score
    st.booleans(),  # texts as attachments
)


def _sample(i: int, prompt: str, turns: list, score: str, attach: bool) -> dict[str, Any]:
    att: dict[str, str] = {}

    def put(text: str) -> str:
        if not attach:
            return text
        key = f"a{len(att)}"
        att[key] = text
        return f"attachment://{key}"

    msgs: list[dict[str, Any]] = [{"id": "m_u", "role": "user", "source": "input", "content": put(prompt)}]
    n = 0
    for said, calls in turns:
        ids = [f"call_{n + k}" for k in range(len(calls))]
        n += len(calls)
        msgs.append(
            {
                "id": f"m_a{len(msgs)}",
                "role": "assistant",
                "source": "generate",
                "content": put(said) if said is not None else "",
                "tool_calls": [
                    {"id": cid, "function": name, "arguments": {"cmd": put(arg)}, "type": "function"}
                    for cid, (name, arg, _, _) in zip(ids, calls)
                ],
            }
        )
        for cid, (name, _, result, err) in zip(ids, calls):
            tool = {"id": f"m_t{len(msgs)}", "role": "tool", "tool_call_id": cid, "function": name}
            tool["content"] = put(result)
            if err:
                tool["error"] = {"type": "unknown", "message": "failed"}
            msgs.append(tool)
    return {
        "id": f"s{i}",
        "epoch": 1 + i % 2,
        "input": put(prompt),
        "target": "42",
        "messages": msgs,
        "scores": {"match": {"value": score}},
        "attachments": att,
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(samples=st.lists(SAMPLE, min_size=1, max_size=3))
def test_samples_messages_calls_and_scores_survive_ingest(samples: list) -> None:
    log = {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": "E1",
            "run_id": "R1",
            "created": "2025-06-01T10:00:00+00:00",
            "task": "t/qa",
            "model": "openai/gpt-4o",
            "dataset": {"name": "qa"},
        },
        "samples": [_sample(i, *s) for i, s in enumerate(samples)],
    }
    out, ctx = parse_text("2025-06-01T10-00-00_qa_E1.json", json.dumps(log), "inspect-json")
    assert ctx.records_quarantined == 0 and len(out) == len(samples)
    for (traj, steps), (prompt, turns, score, _) in zip(out, samples):
        assert traj["outcome"] == ("success" if score == "C" else "failure")
        assert [s["text"] for s in steps if s["kind"] == "user"] == [prompt]
        # an assistant message without calls is a step even when it is empty (as in the other adapters)
        said = [t or "" for t, cs in turns if t or not cs]
        assert [s["text"] for s in steps if s["kind"] == "assistant"] == said
        calls = [c for _, cs in turns for c in cs]
        got = call_values(steps, "tool_name", "arguments", "output", "is_error")
        assert got == [(name, {"cmd": arg}, result, err) for name, arg, result, err in calls]
