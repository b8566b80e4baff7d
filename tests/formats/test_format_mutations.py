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
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pytest
from mutation_cases import Case, Mutant, mutants

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


def _layout(case: Case, tmp: Path) -> tuple[Path, list[tuple[Mutant, Path]]]:
    """An input folder with the unmutated case (`orig/`) and one copy of the case's root per mutant."""
    src_root = FIXTURES / case.root
    rel = Path(case.primary).relative_to(case.root)
    data = (FIXTURES / case.primary).read_bytes()
    inp = tmp / "in"
    out = []
    shutil.copytree(src_root, inp / "orig")
    for m in mutants(case, data):
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


def check_case(case: Case, tmp: Path) -> list[str]:
    """Ingest every mutant of `case`; the problems found, one line each (empty: all good)."""
    inp, muts = _layout(case, tmp)
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
            if not whole and not (case.jsonl and lines <= {q["line"] for q in qs}):
                problems.append(f"{where}: whole unit {src['status']} but its bytes are not kept")
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
