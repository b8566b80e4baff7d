"""CallLinker (trajlab/formats/_base.py): a tool result whose line comes before its call's line is
paired with that call, not left as an orphan result plus a call without result."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from trajlab.formats import CallLinker, ParseContext, ParsedTrajectory, finish_trajectory, get_adapter
from trajlab.formats._base import SourceUnit
from trajlab.ingest import discover, unit_digest

EARLY = "result for call {} came before its call (out of order)"


def _parse(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]], ParseContext]:
    (unit,) = discover([folder]).units
    adapter = get_adapter(unit.adapter)
    unit.digest = unit_digest(unit.files)
    ctx = ParseContext(unit, adapter.runner)
    (pt,) = adapter.parse(unit, ctx)
    t, steps = finish_trajectory(pt, unit, adapter.runner, adapter.name, datetime.now(timezone.utc))
    return t, steps, ctx


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path.parent


def test_linker_pairs_a_result_with_a_later_call(tmp_path: Path) -> None:
    steps: list[dict[str, Any]] = []
    anomalies: list[str] = []
    link = CallLinker(steps, anomalies)
    link.result("c1", orphan={"source_line": 2}, output="42", is_error=False)
    call = link.call({"kind": "tool_call", "call_id": "c1", "tool_name": "bash", "source_line": 3})
    assert (call["output"], call["source_line"]) == ("42", 3)
    assert link.unresolved() == [] and anomalies == [EARLY.format("c1")]
    unit = SourceUnit(tmp_path / "x.jsonl", "test", digest="d")
    _, rows = finish_trajectory(
        ParsedTrajectory({"anomalies": anomalies}, steps, "k"), unit, "r", "f", datetime.now(timezone.utc)
    )
    assert [(s["kind"], s["step_index"], s["output"]) for s in rows] == [("tool_call", 0, "42")]
    assert not any(k.startswith("_") for s in rows for k in s)


def _cc(typ: str, n: int, **fields: Any) -> dict[str, Any]:
    return {
        "type": typ,
        "sessionId": "s-early",
        "version": "2.1.39",
        "uuid": f"u{n}",
        "timestamp": f"2026-03-03T09:00:{n:02d}.000Z",
        **fields,
    }


def _cc_result(n: int, cid: str, text: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": cid, "content": text}
    return _cc("user", n, message={"role": "user", "content": [block]}, toolUseResult={"stdout": text})


def _cc_calls(n: int, *blocks: dict[str, Any]) -> dict[str, Any]:
    return _cc("assistant", n, message={"id": f"m{n}", "role": "assistant", "content": list(blocks)})


def _bash(cid: str, cmd: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": cmd}}


def test_claude_code_result_line_before_its_call(tmp_path: Path) -> None:
    """Before: 'result without call toolu_wc' and 'call without result toolu_wc', an orphan tool_result
    row and a call with no output."""
    folder = _write(
        tmp_path / "s-early.jsonl",
        [
            _cc("user", 1, message={"role": "user", "content": "Count the words in talk.txt."}),
            _cc_result(2, "toolu_wc", "3 talk.txt"),  # written before the call it answers
            _cc_calls(3, _bash("toolu_wc", "wc -w talk.txt")),
            _cc_calls(4, {"type": "text", "text": "3 words."}),
        ],
    )
    t, steps, ctx = _parse(folder)
    assert ctx.records_quarantined == 0
    assert [(s["kind"], s["source_line"], s.get("output")) for s in steps] == [
        ("user", 1, None),
        ("tool_call", 3, "3 talk.txt"),  # the call keeps its own line; no row for line 2
        ("assistant", 4, None),
    ]
    assert t["anomalies"] == [EARLY.format("toolu_wc")]
    assert (t["n_steps"], t["n_tool_calls"]) == (3, 1)


def test_claude_code_rejected_call_line_leaves_the_result_an_orphan(tmp_path: Path) -> None:
    """The call's line is quarantined (a second tool_use with a list for a name): the pairing is undone."""
    bad = {"type": "tool_use", "id": "toolu_x", "name": ["Bash"], "input": {}}
    folder = _write(
        tmp_path / "s-early.jsonl",
        [
            _cc("user", 1, message={"role": "user", "content": "Count the words in talk.txt."}),
            _cc_result(2, "toolu_wc", "3 talk.txt"),
            _cc_calls(3, _bash("toolu_wc", "wc -w talk.txt"), bad),
            _cc_calls(4, {"type": "text", "text": "3 words."}),
        ],
    )
    t, steps, ctx = _parse(folder)
    assert ctx.records_quarantined == 1
    assert [(s["kind"], s["source_line"], s.get("output")) for s in steps] == [
        ("user", 1, None),
        ("tool_result", 2, "3 talk.txt"),
        ("assistant", 4, None),
    ]
    assert t["anomalies"] == ["result without call toolu_wc"]


def test_codex_rollout_output_before_its_function_call(tmp_path: Path) -> None:
    def item(n: int, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": f"2026-03-02T10:00:{n:02d}.000Z", "type": "response_item", "payload": payload}

    folder = _write(
        tmp_path / "rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-0000000000e1.jsonl",
        [
            {
                "timestamp": "2026-03-02T10:00:00.000Z",
                "type": "session_meta",
                "payload": {
                    "id": "0199aaaa-1111-7000-8000-0000000000e1",
                    "cwd": "/w",
                    "cli_version": "0.125.0",
                },
            },
            item(1, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ls"}]}),
            item(2, {"type": "function_call_output", "call_id": "call_ls", "output": "a.txt"}),
            item(
                3,
                {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": '{"command": ["ls"]}',
                    "call_id": "call_ls",
                },
            ),
        ],
    )
    t, steps, _ = _parse(folder)
    calls = [s for s in steps if s.get("call_id") == "call_ls"]
    assert [(s["kind"], s["source_line"], s["output"]) for s in calls] == [("tool_call", 4, "a.txt")]
    assert t["anomalies"] == [EARLY.format("call_ls")]
