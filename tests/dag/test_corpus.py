"""DAGs of real runner files (../shared/corpus): concrete spawn/return/summary, poll, parallel and value edges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest

from trajlab.dag import StepDag, build_lab, load_dag
from trajlab.formats import adapters
from trajlab.ingest import ingest
from trajlab.store import Lab

pytestmark = pytest.mark.corpus

RUNNERS = ("claude_code", "codex", "atif", "swe_agent", "who_and_when", "mini_swe_agent", "chat_messages")


@pytest.fixture(scope="module")
def lab(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Lab:
    out = tmp_path_factory.mktemp("dagcorpus") / "lab"
    names = {a.runner for a in adapters()}
    paths = [str(corpus_dir / r) for r in RUNNERS if r in names and (corpus_dir / r).is_dir()]
    ingest(paths, out, workers=1, progress=False)
    rep = build_lab(out, progress=False)
    assert rep.failed == []
    return Lab.open(out)


def _tid(lab: Lab, suffix: str) -> str:
    rows = lab.read("trajectories", ["trajectory_id", "source_path"]).to_pylist()
    hits = [r["trajectory_id"] for r in rows if r["source_path"].endswith(suffix)]
    assert len(hits) == 1, f"{suffix}: {hits}"
    return hits[0]


def _steps(lab: Lab, tid: str) -> list[dict[str, Any]]:
    return lab.read_trajectory_steps(tid).to_pylist()


def _edge(d: StepDag, src: int, dst: int, typ: str) -> dict[str, Any]:
    found = [e for e in d.edges if (e["src"], e["dst"], e["type"]) == (src, dst, typ)]
    assert found, f"no {typ} edge {src}->{dst}"
    return found[0]


def _agent_span(steps: list[dict[str, Any]], agent: str) -> tuple[int, int]:
    idx = [s["step_index"] for s in steps if s["agent_id"] == agent]
    return idx[0], idx[-1]


def _next_main(steps: list[dict[str, Any]], after: int) -> int:
    return next(s["step_index"] for s in steps if s["step_index"] > after and s["agent_id"] == "main")


def by_index(steps: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {s["step_index"]: s for s in steps}


def _check_graph(d: StepDag, n_steps: int) -> None:
    assert d.metrics["n_nodes"] == n_steps
    assert all(e["src"] < e["dst"] for e in d.edges)
    assert nx.is_directed_acyclic_graph(d.graph)


def test_claude_code_subagent_and_compaction(lab: Lab) -> None:
    tid = _tid(lab, "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    _check_graph(d, len(steps))
    task = next(
        s for s in steps if s["tool"] == "subagent" and "Research Claude hook output" in s["arguments"]
    )
    sub = next(s["agent_id"] for s in steps if s["parent_step_index"] == task["step_index"])
    first, last = _agent_span(steps, sub)
    assert _edge(d, task["step_index"], first, "spawn")["rule"] == "subagent"
    assert _edge(d, last, _next_main(steps, last), "return")["rule"] == "subagent-result"
    # the compaction agent ran before the compaction step it produced
    comp = next(s for s in steps if s["kind"] == "compaction")
    cagent = next(s["agent_id"] for s in steps if s["agent_id"].startswith("acompact"))
    cfirst, clast = _agent_span(steps, cagent)
    assert clast < comp["step_index"]
    before = max(s["step_index"] for s in steps if s["agent_id"] == "main" and s["step_index"] < cfirst)
    assert _edge(d, before, cfirst, "spawn")["rule"] == "compaction-agent"
    assert _edge(d, clast, comp["step_index"], "summary")["rule"] == "compaction-agent"
    # files edited before the compaction and named in its summary flow into it
    summarized = [
        e for e in d.edges if e["dst"] == comp["step_index"] and e["rule"] in ("tool-edit", "tool-write")
    ]
    assert len(summarized) >= 3
    assert all(e["type"] == "summary" and e["artifact"] in comp["text"] for e in summarized)
    nodes = {n["node_id"]: n for n in d.nodes}
    assert nodes[first]["depth"] == 1 and nodes[first]["agent_id"] == sub


def test_claude_code_values_retries_and_parallel_calls(lab: Lab) -> None:
    tid = _tid(lab, "claude_code/subagent.jsonl")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    _check_graph(d, len(steps))
    by = {s["step_index"]: s for s in steps}
    dep = next(s["step_index"] for s in steps if (s["command"] or "").startswith("bd dep add"))
    makers = [
        s["step_index"]
        for s in steps
        if (s["command"] or "").startswith("bd create")
        and ("0p7.1" in (s["output"] or "") or "0p7.2" in (s["output"] or ""))
    ]
    assert len(makers) == 2
    for m in makers:  # issue ids printed by `bd create`, typed into `bd dep add`
        e = _edge(d, m, dep, "data")
        assert e["rule"] == "value" and e["artifact"].startswith("value:spotter-0p7.")
    # three calls issued in one response: the first errored (EISDIR), its siblings were cancelled
    errs = [s["step_index"] for s in steps if s["is_error"]]
    nodes = {n["node_id"]: n for n in d.nodes}
    assert len(errs) == 3 and len({nodes[i]["parallel_batch"] for i in errs}) == 1
    assert "EISDIR" in by[errs[0]]["output"]
    cancelled_read = next(i for i in errs if by[i]["tool"] == "read" and "mix.exs" in by[i]["arguments"])
    retry = next(e for e in d.edges if e["type"] == "retry" and e["src"] == cancelled_read)
    assert by[retry["dst"]]["tool"] == "read" and not by[retry["dst"]]["is_error"]
    assert any(c["signal"] == "cascade_error" for c in d.candidates)
    task = next(s["step_index"] for s in steps if s["tool"] == "subagent")
    sub = next(s["agent_id"] for s in steps if s["parent_step_index"] == task)
    first, last = _agent_span(steps, sub)
    assert _edge(d, task, first, "spawn")["rule"] == "subagent"
    assert _edge(d, last, _next_main(steps, last), "return")["rule"] == "subagent-result"


def test_codex_polls_and_parallel_calls(lab: Lab) -> None:
    tid = _tid(lab, "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    _check_graph(d, len(steps))
    call_at = {s["call_id"]: s["step_index"] for s in steps if s["kind"] == "tool_call"}
    polls = [
        s
        for s in steps
        if s["tool"] in ("poll", "write_stdin") and s["metadata"] and '"polls"' in s["metadata"]
    ]
    assert len(polls) >= 20

    for p in polls:
        meta = json.loads(p["metadata"])
        origin = call_at[meta["polls"]]
        e = _edge(d, origin, p["step_index"], "data")
        assert (e["rule"], e["artifact"]) == ("poll", f"session:{meta['session_id']}")
    first = next(s for s in polls if json.loads(s["metadata"])["session_id"] == "48230")
    origin = call_at[json.loads(first["metadata"])["polls"]]
    assert _edge(d, origin, first["step_index"], "data")["artifact"] == "session:48230"
    assert by_index(steps)[origin]["tool"] == "sed"
    # a test run failing then passing after a patch is a recovery
    assert d.metrics["n_recoveries"] >= 1


def test_codex_parallel_batch(lab: Lab) -> None:
    tid = _tid(lab, "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    _check_graph(d, len(steps))
    nodes = {n["node_id"]: n for n in d.nodes}
    batches: dict[int, list[int]] = {}
    for n in d.nodes:
        if n["parallel_batch"] is not None:
            batches.setdefault(n["parallel_batch"], []).append(n["node_id"])
    big = max(batches.values(), key=len)
    assert len(big) >= 4 and all(nodes[i]["tool"] == "sed" for i in big)
    before = big[0] - 1
    for i in big:  # the response's reasoning fans out to every call of the batch, none depends on a sibling
        assert _edge(d, before, i, "sequence")["rule"] == "fan-out"
    assert not [e for e in d.edges if e["type"] == "data" and e["src"] in big and e["dst"] in big]
    assert d.metrics["width"] >= len(big)


def _codex_responses(path: str) -> list[list[str]]:
    """The call ids of each model response of a raw rollout: calls between two `token_count` events,
    messages or reasoning items."""
    groups: list[list[str]] = [[]]
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            p = d.get("payload") or {}
            if d["type"] == "response_item" and p.get("type") in ("function_call", "custom_tool_call"):
                groups[-1].append(p["call_id"])
            elif (d["type"] == "event_msg" and p.get("type") == "token_count") or (
                d["type"] == "response_item" and p.get("type") in ("message", "reasoning")
            ):
                groups.append([])
    return [g for g in groups if g]


@pytest.mark.parametrize(
    ("suffix", "exact"),
    [
        ("rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", True),
        ("rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl", False),
    ],
)
def test_codex_batches_are_the_raw_responses(lab: Lab, suffix: str, exact: bool) -> None:
    # Codex puts a response's usage on its last step: the batches must come from the timestamps, not
    # from where usage sits (which shifted every batch by one call)
    tid = _tid(lab, suffix)
    path = lab.read("trajectories", ["trajectory_id", "source_path"]).to_pylist()
    source = next(r["source_path"] for r in path if r["trajectory_id"] == tid)
    responses = _codex_responses(source)
    at = {s["call_id"]: s["step_index"] for s in _steps(lab, tid) if s["kind"] == "tool_call"}
    batch = {n["node_id"]: n["parallel_batch"] for n in load_dag(lab, tid).nodes}
    response_of = {c: k for k, g in enumerate(responses) for c in g}
    spans: dict[int, set[int]] = {}
    for c, i in at.items():
        if batch[i] is not None:
            spans.setdefault(batch[i], set()).add(response_of[c])
    assert spans and all(len(v) == 1 for v in spans.values())  # no batch spans two responses
    multi = [g for g in responses if len(g) > 1]
    whole = [g for g in multi if batch[at[g[0]]] is not None and len({batch[at[c]] for c in g}) == 1]
    assert len(multi) >= 7
    # the second file has no token_count events: one group of calls there is really four responses
    # 7-10 s apart (no reasoning item logged between them), which the time rule rightly splits
    assert len(whole) == len(multi) if exact else len(whole) >= len(multi) - 1


def test_openai_tool_calls_of_one_message_are_one_batch_and_retries_follow_the_file(lab: Lab) -> None:
    # SWE-Gym OpenHands messages: an assistant message's `tool_calls` were issued together (no usage, no
    # times in this format: the record, `source_line`, says so). Two views fail side by side and are each
    # retried by the next message's view of the same file, not by the sibling's.
    rows = lab.read("trajectories", ["trajectory_id", "source_path", "runner"]).to_pylist()
    tids = [
        r["trajectory_id"] for r in rows if r["runner"] == "chat_messages" and "swe-gym" in r["source_path"]
    ]
    assert tids
    checked = 0
    for tid in tids:
        steps = _steps(lab, tid)
        d = load_dag(lab, tid)
        batch = {n["node_id"]: n["parallel_batch"] for n in d.nodes}
        by_line: dict[int, list[int]] = {}
        for s in steps:
            if s["kind"] == "tool_call":
                by_line.setdefault(s["source_line"], []).append(s["step_index"])
        for calls in by_line.values():
            if len(calls) > 1:
                assert len({batch[i] for i in calls}) == 1 and batch[calls[0]] == calls[0]
                inside = [
                    e for e in d.edges if e["src"] in calls and e["dst"] in calls and e["type"] != "sequence"
                ]
                assert not inside, inside
                checked += 1
        path_of = {
            s["step_index"]: json.loads(s["arguments"] or "{}").get("path")
            for s in steps
            if s["kind"] == "tool_call"
        }
        for e in d.edges:
            if e["type"] == "retry" and path_of.get(e["src"]) and batch[e["src"]] is not None:
                assert path_of[e["dst"]] == path_of[e["src"]], e  # a failed view is retried on its own file
    assert checked >= 4


def test_codex_sandbox_denial_is_an_error_and_its_escalated_rerun_a_retry(lab: Lab) -> None:
    # `ps -ef | rg ...` exits 1 (rg found nothing) because the sandbox refused `ps`: the output is zsh's
    # error alone. The same command run again with escalated permissions is the recovery.
    tid = _tid(lab, "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    denied = [
        s for s in steps if s["kind"] == "tool_call" and "operation not permitted: ps" in (s["output"] or "")
    ]
    assert len(denied) == 1 and denied[0]["exit_code"] == 1
    i = denied[0]["step_index"]
    rerun = next(
        s
        for s in steps
        if s["step_index"] > i and s["kind"] == "tool_call" and s["command"] == denied[0]["command"]
    )
    status = {n["node_id"]: n["status"] for n in d.nodes}
    assert (status[i], status[rerun["step_index"]]) == ("error", "ok")
    assert _edge(d, i, rerun["step_index"], "retry")["rule"] == "retry-same-tool"
    assert d.metrics["first_error_step"] == i
    # what stays unrecovered is what the browser policy refused (the real blocker of this run)
    refused = [
        s["step_index"] for s in steps if "Browser Use rejected this action" in (s["output"] or "")[:200]
    ]
    assert len(refused) == 2 and all(status[k] == "error" for k in refused)
    assert d.metrics["n_unrecovered_errors"] == 2
    assert d.candidates[0]["step_index"] == refused[0] and d.candidates[0]["signal"] == "unrecovered_error"


def test_claude_code_starting_directory(lab: Lab) -> None:
    # the session ran in the worktree `.../spotter-gqc`; `bd show spotter-gqc` names the beads epic, not
    # the worktree an Edit wrote into; relative paths resolve against the recorded cwd
    tid = _tid(lab, "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    cwd = orjson.loads(lab.read_trajectory("trajectories", tid, ["metadata"]).to_pylist()[0]["metadata"])[
        "cwd"
    ]
    assert cwd.endswith("/spotter-gqc")
    bd = [
        s["step_index"]
        for s in steps
        if (s["command"] or "").split()[:3] in (["bd", "show", "spotter-gqc"], ["bd", "close", "spotter-gqc"])
    ]
    assert len(bd) >= 2 and max(bd) > min(e["src"] for e in d.edges if e["rule"] == "tool-edit")
    assert not [e for e in d.edges if e["dst"] in bd and e["rule"] == "dir-contents"]
    # paths the run's edges name are absolute ones under the worktree, not bare names
    paths = [e["artifact"] for e in d.edges if e["type"] == "data" and (e["artifact"] or "").startswith("/")]
    assert paths and all(p.startswith(cwd) or not p.startswith("/home/") for p in paths)


@pytest.mark.skipif(
    "swe_agent" not in {a.runner for a in adapters()}, reason="SWE-agent adapter not registered"
)
def test_swe_agent_edit_chain_and_patch_answer(lab: Lab) -> None:
    tid = _tid(lab, "pydicom__pydicom-1458.traj")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    _check_graph(d, len(steps))
    submit = next(s["step_index"] for s in steps if s["tool"] == "submit")
    assert d.metrics["answer_step"] == submit
    edits = [
        s["step_index"]
        for s in steps
        if s["tool"] == "edit" and "numpy_handler.py" in (s["output"] or "")[:200]
    ]
    final = _edge(d, edits[-1], submit, "answer")
    assert final["rule"] == "answer-final-write" and final["artifact"].endswith("numpy_handler.py")
    opened = next(
        s["step_index"] for s in steps if (s["arguments"] or "").startswith('{"command":"open pydicom')
    )
    assert _edge(d, opened, edits[0], "data")["rule"] == "read-before-edit"
    answer_in = {e["artifact"] for e in d.edges if e["dst"] == submit and e["type"] == "answer"}
    assert not any("reproduce_bug.py" in a for a in answer_in)  # created, then removed with rm


@pytest.mark.skipif("atif" not in {a.runner for a in adapters()}, reason="ATIF adapter not registered")
def test_atif_summarization_continuation(lab: Lab) -> None:
    tid = _tid(lab, "terminus2-context-summarization/trajectory.json")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    _check_graph(d, len(steps))
    comp = next(s["step_index"] for s in steps if s["kind"] == "compaction")
    agents = list(dict.fromkeys(s["agent_id"] for s in steps if s["parent_step_index"] == comp))
    assert len(agents) == 3
    resume = next(s["step_index"] for s in steps if s["step_index"] > comp and s["agent_id"] == "main")
    for a in agents:
        first, last = _agent_span(steps, a)
        assert _edge(d, comp, first, "spawn")["rule"] == "compaction-agent"
        assert _edge(d, last, resume, "summary")["rule"] == "compaction-agent"
    answer = d.metrics["answer_step"]
    assert steps[answer]["tool_name"] == "mark_task_complete" and steps[answer]["tool"] == "submit"
    hello = next(
        s["step_index"] for s in steps if "hello.txt" in (s["command"] or "") and ">" in s["command"]
    )
    assert _edge(d, hello, answer, "answer")["rule"] == "answer-final-write"


@pytest.mark.skipif(
    "who_and_when" not in {a.runner for a in adapters()}, reason="Who&When adapter not registered"
)
def test_who_and_when_peers_take_turns_in_one_thread(lab: Lab) -> None:
    tid = _tid(lab, "who_and_when/Hand-Crafted/51.json")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    _check_graph(d, len(steps))
    agents = [s["agent_id"] for s in steps]
    assert agents[:2] == ["main", "Orchestrator"] and "FileSurfer" in agents
    hand = next(
        i for i in range(1, len(agents)) if agents[i - 1] == "Orchestrator" and agents[i] == "FileSurfer"
    )
    back = hand + 1
    assert agents[back] == "Orchestrator"
    assert _edge(d, 0, 1, "sequence")["rule"] == "next"  # the task reaches the orchestrator
    assert _edge(d, hand - 1, hand, "sequence")["rule"] == "next"  # handing over to FileSurfer
    assert _edge(d, hand, back, "sequence")["rule"] == "next"  # and back
    assert not [a for a in d.metrics["anomalies"] if a.startswith("sub-agent")]
    assert not [e for e in d.edges if e["type"] in ("spawn", "return")]
    assert d.metrics["answer_step"] == len(steps) - 1 and agents[-1] == "Orchestrator"
    assert d.metrics["depth"] == len(steps)  # one conversation: every step one layer below the last


@pytest.mark.skipif(
    "who_and_when" not in {a.runner for a in adapters()}, reason="Who&When adapter not registered"
)
def test_who_and_when_click_uses_the_page_clicked_on(lab: Lab) -> None:
    tid = _tid(lab, "who_and_when/Hand-Crafted/51.json")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    # step 54 clicked through to TurboScribe; step 61 clicked "Start Transcribing for Free" on that page
    # (and landed on Google's sign-in): 54's page is what 61 used, so 54 is no dead end
    assert json.loads(steps[61]["arguments"])["target"] == "Start Transcribing for Free"
    e = _edge(d, 54, 61, "data")
    assert e["rule"] == "revealed-url" and e["artifact"].startswith("https://turboscribe.ai/?ref=")
    assert not next(n for n in d.nodes if n["node_id"] == 54)["is_dead_end"]


@pytest.mark.skipif(
    "mini_swe_agent" not in {a.runner for a in adapters()}, reason="mini-swe-agent adapter not registered"
)
def test_mini_swe_agent_submit_command_is_the_answer(lab: Lab) -> None:
    tid = _tid(lab, "mini_swe_agent/github_issue.traj.json")
    steps = _steps(lab, tid)
    d = load_dag(lab, tid)
    _check_graph(d, len(steps))
    submit = next(s for s in steps if "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in (s["command"] or ""))
    assert d.metrics["answer_step"] == submit["step_index"] == len(steps) - 1
    # the submitted diff names the file a heredoc wrote: that write is what the answer rests on
    writer = max(
        s["step_index"] for s in steps if (s["command"] or "").startswith("cat > tests/missing_colon.py")
    )
    e = _edge(d, writer, submit["step_index"], "answer")
    assert (e["rule"], e["artifact"]) == ("answer-final-write", "tests/missing_colon.py")
