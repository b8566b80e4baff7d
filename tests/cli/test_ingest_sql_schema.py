"""The `trajlab ingest`, `trajlab sql` and `trajlab schema` commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from trajlab.cli import cli

CODEX = "codex/rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-000000000001.jsonl"


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, list(args))
    if r.exception and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture()
def lab(tmp_path: Path, fixtures_dir: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(fixtures_dir / CODEX, runs / Path(CODEX).name)
    shutil.copytree(fixtures_dir / "claude_code" / "-work-task", runs / "claude")
    (runs / "broken.jsonl").write_bytes(b"\x00\x01\x02 not json")
    code, _out, _ = run("ingest", str(runs), "--out", str(tmp_path / "lab"), "-q", "-j", "1")
    assert code == 0
    return tmp_path / "lab"


def test_ingest_summary_per_runner(tmp_path: Path, fixtures_dir: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(fixtures_dir / CODEX, runs / "a.jsonl")
    shutil.copytree(fixtures_dir / "claude_code" / "-work-task", runs / "claude")
    (runs / "broken.jsonl").write_bytes(b"\x00\x01\x02 not json")
    code, out, _ = run(
        "ingest", str(runs), "--out", str(tmp_path / "lab"), "--quiet", "--tag", "pilot", "--split", "eval"
    )
    assert code == 0
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:4]}
    # runner: files traj steps calls seen ingested quarantined dup same
    assert rows["claude_code"] == ["1", "1", "21", "7", "37", "37", "0", "0", "0"]
    assert rows["codex"] == ["1", "1", "15", "8", "41", "41", "0", "0", "0"]
    assert rows["unknown"] == ["1", "0", "0", "0", "1", "0", "1", "0", "0"]
    assert "records seen 79 = ingested 78 + quarantined 1 (holds)" in out
    assert f"unknown format (quarantined): {runs / 'broken.jsonl'}: binary data" in out
    code, out, _ = run(
        "sql", str(tmp_path / "lab"), "select distinct split, tags from trajectories", "--format", "json"
    )
    assert json.loads(out) == [{"split": "eval", "tags": ["pilot"]}]
    # second run: nothing to do
    code, out, _ = run("ingest", str(runs), "--out", str(tmp_path / "lab"), "-q")
    assert code == 0 and "(nothing changed)" in out and out.splitlines()[-3].split()[-1] == "3"


def test_ingest_missing_inputs(tmp_path: Path) -> None:
    code, out, err = run("ingest", str(tmp_path / "nope"), "--out", str(tmp_path / "lab"), "-q")
    assert (
        code == 1 and "none of the input paths exist" in err and f"missing input: {tmp_path / 'nope'}" in out
    )
    code, _, err = run("ingest", str(tmp_path), "--out", str(tmp_path / "lab"), "-j", "0")
    assert code == 2 and "0 is not in the range x>=1" in err


SQL = "select kind, count(*) as n from steps group by kind order by kind"
EXPECTED = [
    {"kind": "assistant", "n": 7},
    {"kind": "compaction", "n": 1},
    {"kind": "reasoning", "n": 2},
    {"kind": "system", "n": 6},
    {"kind": "tool_call", "n": 15},
    {"kind": "user", "n": 5},
]


def test_sql_every_output_format(lab: Path, tmp_path: Path) -> None:
    code, out, _ = run("sql", str(lab), SQL)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["kind", "n"] and lines[2].split() == ["assistant", "7"]
    code, out, _ = run("sql", str(lab), SQL, "--format", "markdown")
    assert out.splitlines()[:3] == ["| kind | n |", "|---|---|", "| assistant | 7 |"]
    code, out, _ = run("sql", str(lab), SQL, "--format", "csv")
    assert out.splitlines() == ["kind,n"] + [f"{r['kind']},{r['n']}" for r in EXPECTED]
    code, out, _ = run("sql", str(lab), SQL, "--format", "json")
    assert json.loads(out) == EXPECTED
    code, out, _ = run("sql", str(lab), SQL, "--format", "jsonl")
    assert [json.loads(x) for x in out.splitlines()] == EXPECTED
    code, out, err = run("sql", str(lab), SQL, "--format", "parquet")
    assert code == 2 and "--format parquet needs --out" in err
    target = tmp_path / "out.parquet"
    code, out, _ = run("sql", str(lab), SQL, "--format", "parquet", "--out", str(target))
    assert code == 0 and out.strip() == f"wrote 6 rows to {target}"
    assert pq.read_table(target).to_pylist() == EXPECTED
    q = tmp_path / "q.sql"
    q.write_text(SQL)
    code, out, _ = run("sql", str(lab), "--file", str(q), "--format", "csv", "--out", str(tmp_path / "o.csv"))
    assert (tmp_path / "o.csv").read_text().splitlines()[1] == "assistant,7"
    code, out, _ = run("sql", str(lab), "select step_id from steps order by step_id", "--max-rows", "3")
    assert out.splitlines()[-1] == "... 33 more rows"


def test_sql_errors(lab: Path, tmp_path: Path) -> None:
    code, _, err = run("sql", str(lab), "select nope from steps")
    assert code == 1
    assert 'Binder Error: Referenced column "nope" not found' in err
    assert "views available: dag_edges, dag_metrics, dag_nodes" in err
    assert "step_capability, steps, tool_calls, tool_usage, trajectories" in err  # the analysis views too
    code, _, err = run("sql", str(lab), "drop view steps")
    assert code == 1 and "only read-only queries are allowed (got a DROP statement)" in err
    code, _, err = run("sql", str(lab), "select * from read_csv('/etc/passwd')")
    assert code == 1 and "Permission Error" in err
    code, _, err = run("sql", str(tmp_path / "nolab"), "select 1")
    assert code == 1 and "no such lab" in err
    code, _, err = run("sql", str(lab))
    assert code == 2 and "give a QUERY or --file" in err
    code, out, _ = run("sql", str(lab), "--views")
    assert out.split() == [
        "dag_edges",
        "dag_metrics",
        "dag_nodes",
        "gold_labels",
        "human_labels",
        "judge_labels",
        "predicted_labels",
        "quarantine",
        "sources",
        "step_capability",
        "steps",
        "tool_calls",
        "tool_usage",
        "trajectories",
    ]


def test_schema_command() -> None:
    code, out, _ = run("schema")
    assert code == 0 and out.startswith("# trajlab lab schema v")
    assert "## `steps`" in out and "| `step_id` | string | no |" in out
    code, out, _ = run("schema", "sources", "--format", "json")
    d = json.loads(out)
    assert list(d["tables"]) == ["sources"]
    cols = {c["name"]: c for c in d["tables"]["sources"]["columns"]}
    assert cols["meta_digest"]["nullable"] and "trajlab-meta" in cols["meta_digest"]["description"]
    code, out, _ = run("schema", "quarantine", "--format", "jsonschema")
    assert json.loads(out)["title"] == "Quarantine"
    code, out, _ = run("schema", "quarantine")
    assert out.startswith("## `quarantine`") and "## `sources`" not in out
    code, _, err = run("schema", "nope")
    assert code == 2 and "unknown table 'nope'" in err
