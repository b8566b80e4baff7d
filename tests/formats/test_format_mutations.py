"""Every adapter survives damaged input: seeded mutants of the repo's own fixtures go through the real
`trajlab.ingest.ingest`, and for each one nothing escapes, nothing is lost and the lab stays readable.

Per mutant (tests/formats/mutation_cases.py makes them): no adapter exception (`error_type =
'adapter'` would mean the adapter crashed and the whole unit was quarantined); records seen =
ingested + quarantined for its unit; a file that could not be used at all is in the quarantine table
with its bytes; a line replaced by junk is quarantined with its line number (never counted as ingested
and dropped); the steps of the lines that were not touched are still in the lab; DuckDB reads the lab.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from mutation_cases import Case, Mutant, mutants, odd_name_mutants, odd_value_mutants

from trajlab.ingest import ingest
from trajlab.store import Lab, query

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ATIF_TRIAL = "formats/atif/jobs/job-2025-03-01__10-00/audio-count__a1b2c3d"
KIRA_RUN = "formats/kira/runs/omnigaia_qwen"
MINI_RUN = "formats/mini_swe_agent/swebench_run"
SWE_RUN = "formats/swe_agent/gpt4o__swe-bench-lite__default__t-0.00__p-0.95__c-3.00"
TB_RUN = "formats/terminal_bench/runs/2025-04-01__09-00-00"
TB_TRIAL = "hello-world/hello-world.1-of-1.2025-04-01__09-00-00"
LIS = "formats/llm_in_sandbox"


def _file(adapter: str, primary: str, jsonl: bool, lines: str = "") -> Case:
    return Case(adapter, primary, str(Path(primary).parent), jsonl, lines)


CASES = [
    _file(
        "codex-rollout",
        "codex/rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-000000000001.jsonl",
        True,
        "step",
    ),
    _file("codex-exec-json", "formats/codex_exec_json/exec-video-audio.jsonl", True, "step"),
    _file("codex-exec-json", "formats/codex_exec_json/exec-resumed.jsonl", True, "step"),
    Case(
        "claude-code",
        "claude_code/-work-task/5e55a0e0-0000-4000-8000-00000000c1a0.jsonl",
        "claude_code/-work-task",
        True,
        "step",
    ),
    Case(
        "claude-code",
        "claude_code/-work-task/5e55a0e0-0000-4000-8000-00000000c1a0/subagents/agent-a1b2c3d.jsonl",
        "claude_code/-work-task",
        True,
        "step",
    ),
    _file("claude-stream-json", "formats/claude_stream_json/two_sessions.jsonl", True, "step"),
    _file("claude-stream-json", "formats/claude_stream_json/subagent_session.jsonl", True, "step"),
    Case("atif", f"{ATIF_TRIAL}/agent/trajectory.json", ATIF_TRIAL, False),
    Case("atif", f"{ATIF_TRIAL}/result.json", ATIF_TRIAL, False),
    _file("inspect-json", "formats/inspect_ai/omni_eval_log.json", False),
    Case("terminal-bench", f"{TB_RUN}/{TB_TRIAL}/results.json", TB_RUN, False),
    Case("mini-swe-agent", f"{MINI_RUN}/sympy__sympy-1/sympy__sympy-1.traj.json", MINI_RUN, False),
    Case("kira", f"{KIRA_RUN}/item_0001/messages.json", KIRA_RUN, False),
    Case("kira", f"{KIRA_RUN}/item_0001/trajectory.json", KIRA_RUN, False),
    Case(
        "llm-in-sandbox",
        f"{LIS}/output/20250301_101500/trajectory.json",
        f"{LIS}/output/20250301_101500",
        False,
    ),
    Case(
        "llm-in-sandbox", f"{LIS}/benchmark/20250302_090000_math/trajectory.json", f"{LIS}/benchmark", False
    ),
    _file("openhands", "formats/openhands/transcribe.json", False),
    _file("openhands", "formats/openhands/output.jsonl", True, "row"),
    Case("swe-agent", f"{SWE_RUN}/calc__calc-1/calc__calc-1.traj", SWE_RUN, False),
    _file("who-and-when", "formats/who_and_when/hand_crafted_silence.json", False),
    _file("who-and-when", "formats/who_and_when/algorithm_generated_frames.json", False),
    _file("otel-genai", "formats/otel_genai/otlp_agent.json", False),
    _file("otel-genai", "formats/otel_genai/openllmetry.jsonl", True),
    _file("chat-messages", "formats/chat_messages/openai_rows.jsonl", True, "row"),
    _file("chat-messages", "formats/chat_messages/sharegpt.json", False),
    _file("chat-messages", "formats/chat_messages/run.traces.jsonl", True, "row"),
]


def _layout(
    case: Case, tmp: Path, seed: str = "", make: Callable[[Case, bytes], list[Mutant]] | None = None
) -> tuple[Path, list[tuple[Mutant, Path]]]:
    """An input folder with the unmutated case (`orig/`) and one copy of the case's root per mutant
    (the seeded `mutants`, or those `make` gives)."""
    src_root = FIXTURES / case.root
    rel = Path(case.primary).relative_to(case.root)
    data = (FIXTURES / case.primary).read_bytes()
    inp = tmp / "in"
    out = []
    shutil.copytree(src_root, inp / "orig")
    for m in make(case, data) if make is not None else mutants(case, data, seed):
        dst = inp / m.name
        shutil.copytree(src_root, dst)
        (dst / rel).write_bytes(m.data)
        out.append((m, dst / rel))
    return inp, out


def _lines_with_steps(lab: Lab) -> dict[str, set[int]]:
    rows = query(
        lab,
        "select t.source_path, s.source_line from steps s join trajectories t using (trajectory_id) "
        "where s.source_line is not null",
    ).to_pylist()
    out: dict[str, set[int]] = defaultdict(set)
    for r in rows:
        out[r["source_path"]].add(r["source_line"])
    return out


def _same_json(raw: bytes | None, data: bytes) -> bool:
    """`raw` is `data` re-serialized (adapters keep a whole document they refuse as parsed JSON)."""
    try:
        return raw is not None and json.loads(raw) == json.loads(data)  # the stdlib reads 1e999 and Infinity
    except (ValueError, RecursionError):
        return False


def _check_lines(
    case: Case,
    m: Mutant,
    qs: list[dict[str, Any]],
    got: set[int],
    orig_lines: set[int],
    where: str,
    problems: list[str],
) -> None:
    """Where steps carry their file line: one junk line costs that line only, and a line whose values
    were damaged still gives its steps or is quarantined (never counted as ingested and dropped)."""
    if case.lines != "step":
        return
    quarantined = {q["line"] for q in qs}
    if m.junk_line is not None:
        lost = orig_lines - got - quarantined - {m.junk_line}
        if lost:
            problems.append(f"{where}: steps of untouched lines lost: {sorted(lost)[:10]}")
    silent = [ln for ln in m.edited if ln in orig_lines and ln not in got and ln not in quarantined]
    if silent:
        problems.append(f"{where}: edited lines {silent} dropped without a quarantine row")


def check_case(
    case: Case, tmp: Path, seed: str = "", make: Callable[[Case, bytes], list[Mutant]] | None = None
) -> list[str]:
    """Ingest every mutant of `case`; the problems found, one line each (empty: all good). Another
    `seed` gives other mutants (for exploring; the test uses the default); `make` other kinds."""
    inp, muts = _layout(case, tmp, seed, make)
    rep = ingest([inp], tmp / "lab", workers=1, progress=False)
    lab = Lab.open(tmp / "lab")
    problems: list[str] = []
    if not rep.invariant_holds:
        problems.append("report: records seen != ingested + quarantined")
    sources = {r["source_path"]: r for r in lab.read("sources").to_pylist()}
    quarantine: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in query(
        lab,
        "select source_path, unit_path, line, byte_offset, reason, error_type, raw, raw_size from quarantine",
    ).to_pylist():
        quarantine[q["source_path"]].append(q)
    with_steps = _lines_with_steps(lab)
    n_runs = {
        r["source_path"]: r["n"]
        for r in query(lab, "select source_path, count(*) n from trajectories group by 1").to_pylist()
    }
    rel = Path(case.primary).relative_to(case.root)
    orig = str(inp / "orig" / rel)
    orig_lines = with_steps.get(orig, set())
    # the unit that reads the mutated file: itself, or the unit that lists it as a companion
    unit_of = {f: r for r in sources.values() for f in r["files"]}
    for m, path in muts:
        p = str(path)
        where = f"{case.adapter} {case.primary} [{m.name}: {m.kind}]"
        qs = quarantine.get(p, [])
        src = unit_of.get(p) or sources.get(p)
        if src is None:
            problems.append(f"{where}: no sources row and no unit reads it")
            continue
        if src["status"] == "duplicate":
            continue
        if src["records_seen"] != src["records_ingested"] + src["records_quarantined"]:
            problems.append(
                f"{where}: invariant broken {src['records_seen']}/{src['records_ingested']}/"
                f"{src['records_quarantined']}"
            )
        unit_q = [q for qq in quarantine.values() for q in qq if q["unit_path"] == src["source_path"]]
        for q in unit_q:
            if q["error_type"] == "adapter":
                problems.append(f"{where}: adapter crashed: {q['reason'].splitlines()[0][:300]}")
        if src["status"] in ("quarantined", "unknown") and src["source_path"] == p:
            # nothing of it is in the lab: its bytes are kept whole (or as the same JSON), or the row
            # refers to the file by its path without bytes, or every line is quarantined
            whole = any(
                q["raw"] == m.data or _same_json(q["raw"], m.data) or (q["raw"] is None and q["line"] is None)
                for q in qs
            )
            lines = {i + 1 for i, ln in enumerate(m.data.splitlines()) if ln.strip()}
            each = (case.jsonl and lines <= {q["line"] for q in qs}) or (
                not case.jsonl and all(q["raw"] is not None and q["line"] is not None for q in qs)
            )  # or each record (line, or element of the document) quarantined with its bytes
            if not whole and not each:
                problems.append(f"{where}: whole unit {src['status']} but its bytes are not kept")
        if m.kind == "truncated mid UTF-8" and any(q["error_type"] == "utf8" for q in qs):
            problems.append(f"{where}: a cut-off file reported as invalid UTF-8")
        if m.junk_line is not None and not any(q["line"] == m.junk_line for q in qs):
            problems.append(f"{where}: junk line {m.junk_line} not quarantined (status {src['status']})")
        if case.jsonl and (m.junk_line or m.edited) and src["status"] == "unknown":
            problems.append(f"{where}: a few damaged lines made the whole file unrecognised")
        if src["source_path"] == p:
            _check_lines(case, m, qs, with_steps.get(p, set()), orig_lines, where, problems)
            if case.lines == "row" and m.junk_line is not None and n_runs.get(p, 0) < n_runs.get(orig, 0) - 1:
                problems.append(f"{where}: {n_runs.get(p, 0)} runs left of {n_runs.get(orig, 0)}")
    # the lab stays readable by DuckDB, through trajlab's views and as plain Parquet
    con = lab.connect()
    for table in ("steps", "trajectories", "quarantine", "sources"):
        con.execute(f"select count(*) from {table}").fetchall()
    duckdb.sql(
        f"select count(*) from read_parquet('{lab.root}/steps/*.parquet', union_by_name=true)"
    ).fetchall()
    return problems


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.adapter}:{Path(c.primary).name}")
def test_mutants_ingest_without_loss(case: Case, tmp_path: Path) -> None:
    problems = check_case(case, tmp_path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.adapter}:{Path(c.primary).name}")
def test_names_of_another_type_cost_no_run(case: Case, tmp_path: Path) -> None:
    """Tool names, model names and tool_name fields that are `true`, `1.5`, an object or a list: the
    run still ingests (Claude Code lost whole transcripts to a model object and to a tool name that
    was a number, and tool normalization raised on a name that was not a string)."""
    if not odd_name_mutants(case, (FIXTURES / case.primary).read_bytes()):
        pytest.skip("the file has none of the keys")
    problems = check_case(case, tmp_path, make=odd_name_mutants)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.adapter}:{Path(c.primary).name}")
def test_any_value_of_another_type_costs_no_run(case: Case, tmp_path: Path) -> None:
    """Every key of the file in turn, every value under it `true`, `1.5`, `-7`, an object or a list:
    no adapter crash (the unit would be quarantined whole), the invariant holds and nothing is lost
    without its bytes. (Found: Codex and Claude Code runs lost to a session or call id that was not a
    string, a duration's secs/nanos or the token totals of another type, a spawning call id object.)
    The per-line checks of the other tests are left out: damaging every `type` or `payload` of a file
    rightly makes the file unrecognised, or its lines unusable."""
    problems = check_case(case, tmp_path, make=odd_value_mutants)
    lost = [p for p in problems if "adapter crashed" in p or "invariant" in p or "bytes are not kept" in p]
    assert not lost, "\n".join(lost[:20])


# -- regression cases: mutants that exposed a bug, with what ingest must do with them now --------------


def _ingest_mutant(adapter: str, name: str, mutant: str, tmp: Path) -> tuple[Lab, str, Mutant]:
    """Ingest one mutant of the case (`adapter`, fixture basename) alone; (lab, its path, the mutant)."""
    (case,) = [c for c in CASES if c.adapter == adapter and Path(c.primary).name == name]
    (m,) = [m for m in mutants(case, (FIXTURES / case.primary).read_bytes()) if m.name == mutant]
    dst = tmp / "in"
    shutil.copytree(FIXTURES / case.root, dst)
    path = dst / Path(case.primary).relative_to(case.root)
    path.write_bytes(m.data)
    rep = ingest([dst], tmp / "lab", workers=1, progress=False)
    assert rep.invariant_holds
    return Lab.open(tmp / "lab"), str(path), m


def _rows(lab: Lab, sql: str) -> list[dict[str, Any]]:
    return query(lab, sql).to_pylist()


def _runs_of(lab: Lab, path: str) -> list[dict[str, Any]]:
    return _rows(
        lab,
        "select format, n_steps, anomalies, input_tokens from trajectories "
        f"where source_path = '{path}' order by native_id",
    )


def _quarantined(lab: Lab, path: str) -> list[tuple[int | None, str, str]]:
    rows = _rows(
        lab, f"select line, error_type, reason from quarantine where source_path = '{path}' order by line"
    )
    return [(r["line"], r["error_type"], r["reason"]) for r in rows]


ROLLOUT = "rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-000000000001.jsonl"
SESSION = "5e55a0e0-0000-4000-8000-00000000c1a0.jsonl"


def test_token_counts_of_the_wrong_type_cost_the_value_not_the_file(tmp_path: Path) -> None:
    # bug: "input_tokens": "12" (or -5, 2**63) in a codex token_count event raised TypeError in
    # finish_trajectory's sum, and the whole rollout was quarantined as an adapter failure
    lab, path, m = _ingest_mutant("codex-rollout", ROLLOUT, "tokens-1", tmp_path)
    assert b'"12"' in m.data or b"-5" in m.data
    (run,) = _runs_of(lab, path)
    assert run["n_steps"] == 15 and _quarantined(lab, path) == []
    # bug: claude-code summed usage counts without a type check ("cache_read_input_tokens": "12")
    lab, path, _ = _ingest_mutant("claude-code", "agent-a1b2c3d.jsonl", "tokens-0", tmp_path / "b")
    (run,) = _rows(lab, "select n_steps from trajectories")
    assert run["n_steps"] == 21 and _rows(lab, "select * from quarantine") == []


def test_claude_code_line_with_wrong_typed_content_is_quarantined_alone(tmp_path: Path) -> None:
    # bug: a user line whose message.content is `true` raised TypeError ('bool' object is not
    # iterable) and the whole session (37 lines, sub-agents included) was quarantined as an adapter failure
    lab, path, _ = _ingest_mutant("claude-code", SESSION, "wrong-type-0", tmp_path)
    (run,) = _runs_of(lab, path)
    assert run["n_steps"] == 21
    q = _quarantined(lab, path)
    assert q[0][:2] == (12, "schema") and "user message whose content is bool" in q[0][2]
    assert all(e == "schema" for _, e, _ in q)


def test_damaged_first_lines_do_not_hide_the_file(tmp_path: Path) -> None:
    # bug: sniffing read only the first line, so one `null` first line made the whole file unknown_format
    lab, path, _ = _ingest_mutant("claude-stream-json", "two_sessions.jsonl", "line1-null", tmp_path)
    assert [r["format"] for r in _runs_of(lab, path)] == ["claude-stream-json"] * 2
    assert _quarantined(lab, path) == [(1, "schema", "line 1: expected a JSON object, got NoneType")]
    lab, path, _ = _ingest_mutant("openhands", "output.jsonl", "line1-null", tmp_path / "b")
    assert [r["format"] for r in _runs_of(lab, path)] == ["openhands"]
    # bug: a thread.started event without thread_id (first line) made a codex exec stream unknown
    lab, path, _ = _ingest_mutant("codex-exec-json", "exec-resumed.jsonl", "ids-missing-0", tmp_path / "c")
    assert [(r["format"], r["n_steps"]) for r in _runs_of(lab, path)] == [("codex-exec-json", 4)]
    assert _quarantined(lab, path) == [(8, "schema", "line 8: item.started without an item id")]
    # bug: chat rows whose first row lost its messages were not recognised at all
    lab, path, _ = _ingest_mutant("chat-messages", "run.traces.jsonl", "wrong-type-0", tmp_path / "d")
    assert {r["format"] for r in _runs_of(lab, path)} == {"chat-messages"}


def test_lines_without_a_type_are_quarantined_not_dropped(tmp_path: Path) -> None:
    # bug: a codex line whose fields are all null was read as an early-format item without a type,
    # counted as ingested and dropped (its tool call vanished with no quarantine row)
    lab, path, _ = _ingest_mutant("codex-rollout", ROLLOUT, "nulls-0", tmp_path)
    assert _quarantined(lab, path) == [
        (n, "schema", f"line {n}: no `type` (not a rollout line nor a response item)") for n in (19, 32, 33)
    ]
    # bug: the same in Claude Code transcripts (type null passed the `"type" in line` check)
    lab, path, _ = _ingest_mutant("claude-code", SESSION, "nulls-0", tmp_path / "b")
    assert [(n, e) for n, e, _ in _quarantined(lab, path)] == [(1, "schema"), (10, "schema"), (15, "schema")]
    # bug: a stream-json assistant line whose only content block has a non-string type was dropped
    lab, path, _ = _ingest_mutant(
        "claude-stream-json", "subagent_session.jsonl", "wrong-type-0", tmp_path / "c"
    )
    assert (4, "schema", "line 4: assistant message with 1 unreadable content block(s) and nothing else") in (
        _quarantined(lab, path)
    )


def test_whole_document_failures_keep_the_document(tmp_path: Path) -> None:
    # bug: an OTel JSON file nested deeper than the stdlib parser recurses raised RecursionError out
    # of the console-dump fallback (adapter failure); now a JSON error with the file's bytes
    lab, path, m = _ingest_mutant("otel-genai", "otlp_agent.json", "rec-too-deep", tmp_path)
    (q,) = _rows(lab, f"select error_type, raw from quarantine where source_path = '{path}'")
    assert q["error_type"] == "json" and q["raw"] == m.data
    # bug: a mini-swe-agent .traj.json that is only a string was kept as the bare text x, not "x"
    lab, path, _ = _ingest_mutant("mini-swe-agent", "sympy__sympy-1.traj.json", "doc-string", tmp_path / "b")
    (q,) = _rows(lab, f"select raw from quarantine where source_path = '{path}'")
    assert q["raw"] == b'"x"'


def test_a_file_cut_inside_a_utf8_character_is_reported_as_truncated(tmp_path: Path) -> None:
    # bug (misleading error): a last line cut in the middle of a multi-byte character was reported as
    # "invalid UTF-8" instead of a cut-off file
    lab, path, m = _ingest_mutant("codex-rollout", ROLLOUT, "cut-utf8", tmp_path)
    ((line, etype, reason),) = _quarantined(lab, path)
    assert (line, etype) == (21, "truncated") and "inside a UTF-8 character" in reason
    lab, path, m = _ingest_mutant("inspect-json", "omni_eval_log.json", "cut-utf8", tmp_path / "b")
    ((line, etype, reason),) = _quarantined(lab, path)
    assert etype == "truncated" and reason.endswith(f"cut off at byte {len(m.data)}")


def test_damaged_agent_progress_messages_cost_their_line(tmp_path: Path) -> None:
    # bug: sub-agent messages embedded in agent_progress lines are replayed after the file is read;
    # a wrong-typed field there (a tool_use id that is an object) raised TypeError out of the adapter
    # and the whole session was quarantined, and a message with unusable content was dropped silently
    src = FIXTURES / "claude_code/-work-task"
    dst = tmp_path / "in"
    shutil.copytree(src, dst)
    path = dst / SESSION
    lines = path.read_bytes().splitlines(keepends=True)
    d18, d19 = json.loads(lines[17]), json.loads(lines[18])
    d18["data"]["message"]["message"]["content"] = {"k": [None]}
    d19["data"]["message"]["message"]["content"][0]["id"] = {"not": "an id"}
    lines[17], lines[18] = (json.dumps(d).encode() + b"\n" for d in (d18, d19))
    path.write_bytes(b"".join(lines))
    rep = ingest([dst], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    assert rep.invariant_holds
    q = _quarantined(lab, str(path))
    assert [(n, e) for n, e, _ in q] == [(18, "schema"), (19, "schema")]
    assert "line 18: agent_progress user message whose content is dict" in q[0][2]
    assert "line 19: agent_progress malformed message (TypeError" in q[1][2]
    (run,) = _runs_of(lab, str(path))
    # the session's 21 steps less the two embedded messages, plus the call's result now without its call
    assert run["n_steps"] == 20
    orphan = _rows(lab, "select kind from steps where call_id = 'toolu_sub_wc'")
    assert orphan == [{"kind": "tool_result"}]


def _eval_zip(path: Path, log: dict[str, Any], entries: dict[str, bytes]) -> bytes:
    """An Inspect .eval archive of `log` (header.json + one entry per sample), entries replaced by `entries`."""
    header = {k: v for k, v in log.items() if k != "samples"}
    files = {"header.json": json.dumps(header).encode()}
    for s in log["samples"]:
        files[f"samples/{s['id']}_epoch_{s['epoch']}.json"] = json.dumps(s).encode()
    files.update(entries)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path.read_bytes()


def test_inspect_eval_archive_mutants(tmp_path: Path) -> None:
    """.eval archives: a sample entry damaged every way the JSON mutants do, and the archive cut off."""
    log = json.loads((FIXTURES / "formats/inspect_ai/omni_eval_log.json").read_bytes())
    log["samples"] = [s for s in log["samples"] if isinstance(s, dict)]  # the fixture has a junk one too
    first = log["samples"][0]
    entry = f"samples/{first['id']}_epoch_{first['epoch']}.json"
    case = Case("inspect-eval", entry, "", False)
    inp = tmp_path / "in"
    inp.mkdir()
    good = _eval_zip(inp / "orig.eval", log, {})
    made: list[tuple[str, Path, bytes]] = []
    for m in mutants(case, json.dumps(first, indent=1).encode()):
        if m.name.endswith("-1"):
            continue  # one round of each value edit is enough here (keeps the test fast)
        p = inp / f"{m.name}.eval"
        made.append((m.name, p, _eval_zip(p, log, {entry: m.data})))
    for frac in (0.2, 0.6, 0.95):  # the archive itself cut off (a writer that crashed)
        p = inp / f"zipcut{int(frac * 100)}.eval"
        p.write_bytes(good[: int(len(good) * frac)])
        made.append((p.stem, p, p.read_bytes()))
    rep = ingest([inp], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    assert rep.invariant_holds
    sources = {r["source_path"]: r for r in lab.read("sources").to_pylist()}
    n_samples = len(log["samples"])
    assert sources[str(inp / "orig.eval")]["records_ingested"] == 1 + n_samples
    problems = []
    for name, p, data in made:
        src, qs = (
            sources.get(str(p)),
            _rows(lab, f"select line, error_type, reason, raw from quarantine where source_path = '{p}'"),
        )
        if src is None or src["status"] == "duplicate":
            continue
        if src["records_seen"] != src["records_ingested"] + src["records_quarantined"]:
            problems.append(f"{name}: invariant broken")
        if any(q["error_type"] == "adapter" for q in qs):
            problems.append(f"{name}: adapter crashed: {qs[0]['reason'].splitlines()[0]}")
        if src["status"] in ("quarantined", "unknown") and not any(q["raw"] in (data, None) for q in qs):
            problems.append(f"{name}: whole archive quarantined without its bytes")
        n_runs = len(_runs_of(lab, str(p)))
        # a sample entry that is junk or cut off is quarantined with its bytes, the other samples ingest
        # (bug: a `null` entry vanished uncounted, a list or string entry was quarantined without bytes)
        junk = name.startswith(("doc-", "cut")) and not name.startswith("zipcut")
        if junk and (n_runs != n_samples - 1 or not any(entry in q["reason"] and q["raw"] for q in qs)):
            problems.append(f"{name}: {n_runs} runs, quarantine {[q['reason'][:80] for q in qs]}")
    assert not problems, "\n".join(problems)


def test_assistant_messages_with_only_damaged_blocks_are_quarantined(tmp_path: Path) -> None:
    # bug: a Claude Code assistant line whose tool_use block lost its `type`, or whose message lost
    # its content, was counted as ingested and gave nothing (the call vanished without a trace)
    src = FIXTURES / "claude_code/-work-task"
    dst = tmp_path / "in"
    shutil.copytree(src, dst)
    path = dst / SESSION
    lines = path.read_bytes().splitlines(keepends=True)
    d5, d17, d24 = json.loads(lines[4]), json.loads(lines[16]), json.loads(lines[23])
    del d5["message"]["content"]
    del d17["message"]["content"][0]["type"]
    del d24["subtype"]  # and a compact_boundary line that lost its subtype (was dropped the same way)
    lines[4], lines[16], lines[23] = (json.dumps(d).encode() + b"\n" for d in (d5, d17, d24))
    path.write_bytes(b"".join(lines))
    ingest([dst], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    assert [(n, r.split(": ", 1)[1]) for n, _, r in _quarantined(lab, str(path))] == [
        (5, "assistant message without content"),
        (17, "assistant message with 1 unreadable content block(s) and nothing else"),
        (24, "system line without a subtype"),
    ]


def test_otel_file_without_agent_spans_is_quarantined_not_a_crash(tmp_path: Path) -> None:
    # bug: an OTLP file whose keys were damaged so that only an embeddings span was left had its span
    # counted as ingested while no trajectory came out; the ingest worker then raised IndexError
    # building the unit's sources row and the whole `trajlab ingest` run failed
    doc = json.loads((FIXTURES / "formats/otel_genai/otlp_agent.json").read_bytes())
    for rs in doc["resourceSpans"]:
        rs["scopeSpans"] = [s for s in rs["scopeSpans"] if s["scope"]["name"] == "embedder"]
    dst = tmp_path / "in"
    dst.mkdir()
    path = dst / "otlp_agent.json"
    path.write_text(json.dumps(doc))
    rep = ingest([dst], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    assert rep.invariant_holds and _runs_of(lab, str(path)) == []
    (q,) = _rows(lab, "select error_type, reason, raw from quarantine")
    assert q["error_type"] == "schema" and q["raw"] == path.read_bytes()
    assert q["reason"] == "otlp_agent.json: no agent, model or tool spans among its 1 span(s)"


def test_codex_line_type_of_the_wrong_type_is_quarantined(tmp_path: Path) -> None:
    # bug: "type": [] on a rollout line without payload raised TypeError (unhashable type: 'list') in
    # the line-type lookup, and the whole rollout was quarantined as an adapter failure
    dst = tmp_path / "in"
    dst.mkdir()
    path = dst / ROLLOUT
    lines = (FIXTURES / "codex" / ROLLOUT).read_bytes().splitlines(keepends=True)
    lines[1] = b'{"timestamp": "2026-03-02T10:00:00.500Z", "type": [], "payload": null}\n'
    path.write_bytes(b"".join(lines))
    ingest([dst], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    assert _quarantined(lab, str(path)) == [(2, "schema", "line 2: `type` is list, not a line type")]
    assert [r["n_steps"] for r in _runs_of(lab, str(path))] == [15]


def test_codex_wrong_typed_event_fields_cost_the_line(tmp_path: Path) -> None:
    # bug: a token_count event whose last_token_usage is a string raised AttributeError ('str' object
    # has no attribute 'get') out of the adapter and the whole rollout was quarantined
    dst = tmp_path / "in"
    dst.mkdir()
    path = dst / ROLLOUT
    lines = (FIXTURES / "codex" / ROLLOUT).read_bytes().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if b'"last_token_usage"' in ln)
    d = json.loads(lines[k])
    d["payload"]["info"]["last_token_usage"] = "1700"
    lines[k] = json.dumps(d).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    ingest([dst], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    ((line, etype, reason),) = _quarantined(lab, str(path))
    assert (line, etype) == (k + 1, "schema") and "malformed event_msg line (AttributeError" in reason
    assert [r["n_steps"] for r in _runs_of(lab, str(path))] == [15]


def test_stream_json_without_session_ids_is_still_recognised(tmp_path: Path) -> None:
    # bug: a stream-json system/init line that lost its session_id made the sniffer say "not stream-json",
    # and the whole file was quarantined as unknown_format
    dst = tmp_path / "in"
    dst.mkdir()
    path = dst / "subagent_session.jsonl"
    lines = (
        (FIXTURES / "formats/claude_stream_json/subagent_session.jsonl")
        .read_bytes()
        .splitlines(keepends=True)
    )
    out = []
    for ln in lines:
        try:
            d = json.loads(ln)
        except ValueError:
            out.append(ln)  # the fixture's own broken line
            continue
        if isinstance(d, dict) and d.get("type") == "system":
            d.pop("session_id", None)
        out.append(json.dumps(d).encode() + b"\n")
    path.write_bytes(b"".join(out))
    ingest([dst], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    runs = _runs_of(lab, str(path))
    assert [(r["format"], r["n_steps"]) for r in runs] == [("claude-stream-json", 6)]  # as unmodified
