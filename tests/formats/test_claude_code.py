"""Claude Code transcript adapter: a hand-written session with sub-agents and compaction, and the real samples."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from trajlab.formats import ParseContext, finish_trajectory, get_adapter
from trajlab.ingest import discover, unit_digest

SESSION = "5e55a0e0-0000-4000-8000-00000000c1a0"


def parse_folder(folder: Path) -> list[tuple[Any, dict[str, Any], list[dict[str, Any]], ParseContext]]:
    out = []
    for unit in discover([folder]).units:
        adapter = get_adapter(unit.adapter)
        unit.digest = unit_digest(unit.files)
        ctx = ParseContext(unit, adapter.runner)
        for pt in adapter.parse(unit, ctx):
            t, steps = finish_trajectory(pt, unit, adapter.runner, adapter.name, datetime.now(timezone.utc))
            out.append((unit, t, steps, ctx))
    return out


@pytest.fixture()
def session(fixtures_dir: Path):
    (run,) = parse_folder(fixtures_dir / "claude_code")
    return run


def test_unit_reads_subagent_files_as_companions(session) -> None:
    unit, t, _, ctx = session
    assert unit.adapter == "claude-code" and unit.primary.name == f"{SESSION}.jsonl"
    assert [c.name for c in unit.companions] == ["agent-a1b2c3d.jsonl", "agent-acompact-9f8e7d.jsonl"]
    assert (ctx.records_seen, ctx.records_ingested, ctx.records_quarantined) == (37, 37, 0)
    assert t["native_id"] == SESSION
    assert t["anomalies"] == []


def test_counts_and_fields(session) -> None:
    _, t, _steps, _ = session
    assert (t["n_steps"], t["n_tool_calls"], t["n_errors"], t["n_subagents"]) == (21, 7, 1, 3)
    assert t["task"] == "Transcribe talk.mp3 and tell me how many words it has."
    assert t["final_answer"] == "The talk has 3 words."
    assert (t["model"], t["runner_version"], t["harness"], t["outcome"]) == (
        "claude-opus-4-6",
        "2.1.39",
        "claude-code",
        "unknown",
    )
    # usage is repeated on every line of a split response: counted once per message id, final count
    assert (t["input_tokens"], t["output_tokens"], t["cached_tokens"]) == (8844, 311, 8000)


def test_split_response_and_parallel_calls(session) -> None:
    _, _, steps, _ = session
    reasoning, text, asr, read, wc = steps[1:6]
    assert (reasoning["kind"], reasoning["text"], reasoning["input_tokens"], reasoning["output_tokens"]) == (
        "reasoning",
        "Use whisper.",
        1105,
        120,
    )
    assert text["kind"] == "assistant" and text.get("output_tokens") is None
    assert (asr["tool"], asr["modality"], asr["call_id"]) == ("whisper", "audio", "toolu_asr")
    assert asr["output"] == "[00:00.000 --> 00:03.000] one two three"
    assert (read["tool"], read["output_tokens"], wc.get("output_tokens")) == ("read", 40, None)
    assert (wc["is_error"], wc["exit_code"], wc["tool"]) == (True, 1, "wc")


def test_subagents_are_spliced_after_their_task_call(session) -> None:
    _, _, steps, _ = session
    rows = [
        (s["step_index"], s["agent_id"], s.get("parent_step_index"), s["kind"], s.get("depth")) for s in steps
    ]
    assert rows[6:14] == [
        (6, "main", None, "tool_call", 0),
        (7, "a1b2c3d", 6, "user", 1),
        (8, "a1b2c3d", 6, "tool_call", 1),
        (9, "a1b2c3d", 6, "assistant", 1),
        (10, "main", None, "tool_call", 0),
        (11, "e5f6a7b", 10, "user", 1),  # known only from agent_progress lines
        (12, "e5f6a7b", 10, "tool_call", 1),
        (13, "e5f6a7b", 10, "assistant", 1),
    ]
    assert steps[6]["tool"] == "subagent" and steps[6]["output"] == "Spelling is fine."
    assert steps[6]["duration_s"] == 4.0
    assert (steps[12]["output"], steps[12]["source_line"]) == ("3 talk.txt", 19)  # the progress line
    assert steps[8]["source_line"] == 2  # line in the sub-agent's own file, which the step names
    own_file = f"{SESSION}/subagents/agent-a1b2c3d.jsonl"
    assert all(orjson.loads(steps[k]["metadata"])["source_file"] == own_file for k in (7, 8, 9))
    # the session's own lines (and the progress lines in it) name no other file
    assert all("source_file" not in orjson.loads(steps[k].get("metadata") or "{}") for k in (6, 10, 11, 12))


def test_subagent_steps_carry_their_own_model(session) -> None:
    """The session's model is the trajectory's; a sub-agent's model goes on its steps (as in stream-json)."""
    _, t, steps, _ = session
    assert t["model"] == "claude-opus-4-6"
    assert [s.get("model") for s in steps[11:14]] == [None, "claude-haiku-4-5", "claude-haiku-4-5"]
    assert [s.get("model") for s in steps[8:10]] == ["claude-opus-4-6"] * 2  # file sub-agent
    assert all(s.get("model") is None for s in steps if s["agent_id"] == "main")


def test_compaction_agent_before_the_compaction(session) -> None:
    _, _, steps, _ = session
    assert [s["agent_id"] for s in steps[14:17]] == ["acompact-9f8e7d"] * 3
    assert all(s["parent_step_index"] == 17 for s in steps[14:17])
    assert all(orjson.loads(s["metadata"])["compaction_agent"] for s in steps[14:17])
    compactor_file = f"{SESSION}/subagents/agent-acompact-9f8e7d.jsonl"
    assert all(orjson.loads(s["metadata"])["source_file"] == compactor_file for s in steps[14:17])
    comp = steps[17]
    assert comp["kind"] == "compaction" and comp["text"].startswith("This session is being continued")
    assert orjson.loads(comp["metadata"]) == {"trigger": "auto", "preTokens": 150000}
    # slash command without arguments and a task notification are harness noise
    assert [(s["kind"], s["text"][:15]) for s in steps[18:20]] == [
        ("system", "<command-name>/"),
        ("system", "<task-notificat"),
    ]
    assert (steps[20]["kind"], steps[20]["output_tokens"]) == ("assistant", 15)  # whitespace block skipped


def test_orphan_subagent_file(tmp_path: Path, fixtures_dir: Path) -> None:
    src = fixtures_dir / "claude_code" / "-work-task" / SESSION / "subagents" / "agent-a1b2c3d.jsonl"
    dst = tmp_path / "x" / "subagents" / "agent-a1b2c3d.jsonl"
    dst.parent.mkdir(parents=True)
    shutil.copy(src, dst)
    ((_, t, steps, _),) = parse_folder(tmp_path)
    assert t["native_id"] == f"{SESSION}/a1b2c3d"
    assert any("ingested on its own" in a for a in t["anomalies"])
    assert {s["agent_id"] for s in steps} == {"a1b2c3d"} and t["n_steps"] == 3


def test_two_calls_whose_progress_lines_name_the_same_agent_keep_both(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """agent_progress lines of two Task calls naming one agent id (reused, or damaged to `true`): the
    second call's sub-agent was skipped as if it had its own file, and its steps were lost silently."""
    shutil.copytree(fixtures_dir / "claude_code", tmp_path / "cc")
    for f in (tmp_path / "cc").rglob("*.jsonl"):
        rows = [orjson.loads(line) for line in f.read_bytes().splitlines()]
        for r in rows:
            data = r.get("data")
            if isinstance(data, dict) and "agentId" in data:
                data["agentId"] = "same"
        f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    ((_, t, steps, ctx),) = parse_folder(tmp_path / "cc")
    steps0 = parse_folder(fixtures_dir / "claude_code")[0][2]
    texts0 = [s.get("text") for s in steps0 if s.get("agent_id") == "e5f6a7b"]
    kept = [s for s in steps if s.get("agent_id", "").startswith("same-")]
    assert [s.get("text") for s in kept] == texts0 and len(kept) == 3
    assert any("names agent same again; kept apart" in a for a in t["anomalies"])
    assert ctx.records_quarantined == 0


def test_lone_surrogates_are_replaced_not_quarantined(tmp_path: Path) -> None:
    line = (
        b'{"type":"user","sessionId":"s","uuid":"u1","timestamp":"2026-01-01T00:00:00Z",'
        b'"message":{"role":"user","content":"cut emoji \\ud83d here"}}\n'
    )
    (tmp_path / "s.jsonl").write_bytes(line)
    ((_, _t, steps, ctx),) = parse_folder(tmp_path)
    assert ctx.records_quarantined == 0
    assert steps[0]["text"] == "cut emoji \ufffd here"  # one replacement character per lone surrogate


def _cc_line(typ: str, uuid: str, **fields: Any) -> dict[str, Any]:
    return {"type": typ, "sessionId": "s-link", "version": "2.1.39", "uuid": uuid, **fields}


def _task_session(tmp_path: Path, result_agent: str | None, progress: list[tuple[str, str]]) -> Path:
    """A session with two Task calls (toolu_t1, toolu_t2) and a final answer, and one sub-agent file
    agent-a5151.jsonl. `result_agent`: the agentId on toolu_t1's toolUseResult (None: left out, as in
    older versions or a cut-off result); `progress`: agent_progress lines as (parentToolUseID, agentId),
    shaped like the real 2.1.38/2.1.39 ones (data.agentId, top-level parentToolUseID)."""

    def task(uuid: str, cid: str) -> dict[str, Any]:
        block = {"type": "tool_use", "id": cid, "name": "Task", "input": {"prompt": "check it"}}
        return _cc_line(
            "assistant", uuid, message={"id": f"m-{cid}", "role": "assistant", "content": [block]}
        )

    def result(uuid: str, cid: str, agent: str | None) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": cid, "content": "checked"}
        tur: dict[str, Any] = {"status": "completed", **({"agentId": agent} if agent else {})}
        return _cc_line("user", uuid, message={"role": "user", "content": [block]}, toolUseResult=tur)

    def prog(uuid: str, parent: str, agent: str) -> dict[str, Any]:
        msg = {"type": "user", "message": {"role": "user", "content": "check it"}, "uuid": f"pm-{uuid}"}
        data = {"message": msg, "normalizedMessages": [], "type": "agent_progress", "prompt": "check it"}
        return _cc_line(
            "progress",
            uuid,
            data={**data, "agentId": agent},
            toolUseID=f"agent_msg_{uuid}",
            parentToolUseID=parent,
        )

    rows = [
        _cc_line("user", "u0", message={"role": "user", "content": "Check both files."}),
        task("u1", "toolu_t1"),
        *(
            prog(f"p1{k}", parent, agent)
            for k, (parent, agent) in enumerate(progress)
            if parent == "toolu_t1"
        ),
        result("u2", "toolu_t1", result_agent),
        task("u3", "toolu_t2"),
        *(
            prog(f"p3{k}", parent, agent)
            for k, (parent, agent) in enumerate(progress)
            if parent == "toolu_t2"
        ),
        result("u4", "toolu_t2", None),
        _cc_line(
            "assistant", "u5", message={"id": "m-end", "role": "assistant", "content": "Both are fine."}
        ),
    ]
    sub = [
        _cc_line(
            "user", "s0", isSidechain=True, agentId="a5151", message={"role": "user", "content": "check it"}
        ),
        _cc_line(
            "assistant",
            "s1",
            isSidechain=True,
            agentId="a5151",
            message={"id": "m-s1", "role": "assistant", "content": "It is fine."},
        ),
    ]
    (tmp_path / "s-link" / "subagents").mkdir(parents=True)
    (tmp_path / "s-link.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    (tmp_path / "s-link" / "subagents" / "agent-a5151.jsonl").write_bytes(
        b"".join(orjson.dumps(r) + b"\n" for r in sub)
    )
    return tmp_path


def _spawned_by(steps: list[dict[str, Any]], agent: str) -> str | None:
    sub = [s for s in steps if s["agent_id"] == agent]
    parent = sub[0].get("parent_step_index")
    return None if parent is None else steps[parent]["call_id"]


def test_subagent_file_linked_by_its_progress_lines_when_the_result_has_no_agent_id(tmp_path: Path) -> None:
    """No toolUseResult.agentId (older versions, a cut-off result): the sub-agent file was placed after the
    answer with "no spawning call", though the Task call's agent_progress lines name the agent."""
    _task_session(tmp_path, None, [("toolu_t2", "a5151")])
    ((_, t, steps, ctx),) = parse_folder(tmp_path)
    assert ctx.records_quarantined == 0
    assert _spawned_by(steps, "a5151") == "toolu_t2"
    assert [(s["agent_id"], s["kind"]) for s in steps] == [
        ("main", "user"),
        ("main", "tool_call"),
        ("main", "tool_call"),
        ("a5151", "user"),
        ("a5151", "assistant"),
        ("main", "assistant"),
    ]
    assert t["anomalies"] == [] and t["final_answer"] == "Both are fine."


def test_result_agent_id_keeps_priority_over_progress_lines(tmp_path: Path) -> None:
    _task_session(tmp_path, "a5151", [("toolu_t2", "a5151")])
    ((_, t, steps, _),) = parse_folder(tmp_path)
    assert _spawned_by(steps, "a5151") == "toolu_t1"
    assert t["anomalies"] == []


def test_subagent_file_without_any_link_still_reported(tmp_path: Path) -> None:
    _task_session(tmp_path, None, [])
    ((_, t, steps, _),) = parse_folder(tmp_path)
    assert _spawned_by(steps, "a5151") is None and steps[-1]["agent_id"] == "a5151"
    assert t["anomalies"] == ["sub-agent a5151 has no spawning call in the session"]


# -- the real samples ----------------------------------------------------------------------------------

# file -> (records incl. sub-agent files, steps, tool calls, errors, sub-agents, output tokens, task start)
CORPUS = {
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl": (1877, 306, 188, 7, 2, 38908, "Implement spotter-gqc"),
    "short.jsonl": (15, 8, 2, 2, 0, 13, "mix phx.server doesnt seem"),
    "subagent.jsonl": (96, 41, 25, 3, 1, 1593, "/handgemacht:create-beads websearch"),
    "tool_heavy.jsonl": (39, 17, 6, 0, 0, 212, "start phoenix in background"),
}


@pytest.mark.corpus
def test_corpus_transcripts(corpus_dir: Path) -> None:
    runs = {
        unit.primary.name: (unit, t, steps, ctx)
        for unit, t, steps, ctx in parse_folder(corpus_dir / "claude_code")
    }
    assert sorted(runs) == sorted(CORPUS)  # sub-agent files are companions, not runs of their own
    for name, (records, n_steps, n_calls, n_err, n_sub, out_tok, task) in CORPUS.items():
        _, t, steps, ctx = runs[name]
        assert (ctx.records_seen, ctx.records_quarantined) == (records, 0), name
        assert (t["n_steps"], t["n_tool_calls"], t["n_errors"], t["n_subagents"]) == (
            n_steps,
            n_calls,
            n_err,
            n_sub,
        ), name
        assert t["output_tokens"] == out_tok, name
        assert t["task"].startswith(task), name
        assert t["anomalies"] == [], name
        calls = [s for s in steps if s["kind"] == "tool_call"]
        assert all(s.get("output") is not None for s in calls), name  # every call found its tool_result
        assert not any(s["kind"] == "tool_result" for s in steps), name  # no orphan results


@pytest.mark.corpus
def test_corpus_long_session_structure(corpus_dir: Path) -> None:
    runs = {u.primary.name: (t, steps) for u, t, steps, _ in parse_folder(corpus_dir / "claude_code")}
    _t, steps = runs["258c7280-ae70-4798-800f-63464d01a85d.jsonl"]
    comp = [s for s in steps if s["kind"] == "compaction"]
    assert len(comp) == 1 and comp[0]["text"].startswith("This session is being continued")
    acompact = [s for s in steps if s["agent_id"] == "acompact-fffbd0"]
    assert len(acompact) == 4 and all(s["parent_step_index"] == comp[0]["step_index"] for s in acompact)
    assert acompact[-1]["step_index"] == comp[0]["step_index"] - 1
    sub = [s for s in steps if s["agent_id"] == "a881341"]
    spawn = steps[sub[0]["parent_step_index"]]
    assert (spawn["tool_name"], spawn["tool"], len(sub)) == ("Task", "subagent", 6)
    # agent-a881341.jsonl runs on Sonnet while the session runs on Opus
    assert {s.get("model") for s in sub if s["kind"] != "user"} == {"claude-sonnet-4-5-20250929"}
    assert sub[0]["step_index"] == spawn["step_index"] + 1
    notes = [s for s in steps if (s.get("text") or "").startswith("<task-notification>")]
    assert len(notes) == 2 and all(s["kind"] == "system" for s in notes)


def test_a_message_following_a_progress_line_is_no_branch(tmp_path: Path) -> None:
    # corpus session 258c7280: 16 messages whose parentUuid is a progress line (the main thread's chain
    # runs through them) were marked as branches (rewind, retry); a real rewind still is one
    rows = [
        _cc_line("user", "u0", message={"role": "user", "content": "Run the tests."}),
        _cc_line("assistant", "a1", parentUuid="u0", message={"id": "m1", "role": "assistant", "content": "On it."}),
        _cc_line("progress", "p1", parentUuid="a1", data={"type": "hook_progress"}),
        _cc_line("user", "u2", parentUuid="p1", message={"role": "user", "content": "Also lint."}),
        # the user rewinds to a1 and asks something else: a branch
        _cc_line("user", "u3", parentUuid="a1", message={"role": "user", "content": "No, only lint."}),
    ]  # fmt: skip
    (tmp_path / "s-link.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    ((_, _t, steps, ctx),) = parse_folder(tmp_path)
    assert ctx.records_quarantined == 0
    meta = {s["text"]: s.get("metadata") for s in steps}
    assert meta["Also lint."] is None
    branch = meta["No, only lint."]
    assert (orjson.loads(branch) if isinstance(branch, str) else branch) == {
        "uuid": "u3",
        "parent_uuid": "a1",
    }
