"""`trajlab sql` output: every documented view is there, and csv/json keep every column and value."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from analysis_labs import LabBuilder
from cli_harness import fails, run


@pytest.fixture()
def lab(tmp_path: Path) -> str:
    b = LabBuilder(tmp_path / "lab")
    b.traj("a", "success", model="A").traj("b", "failure", model="B")
    b.shell("a", "python3 run.py"), b.shell("a", "ls -la"), b.shell("b", "curl -O http://x/y")
    return str(b.build().root)


def test_sql_has_the_analysis_views(lab: str) -> None:
    # docs/analysis.md: user SQL (`trajlab sql` too) sees step_capability and tool_usage
    r = run(
        "sql",
        lab,
        "SELECT capability, count(*) AS n FROM step_capability GROUP BY ALL ORDER BY 1",
        "--format",
        "json",
    )
    assert r.code == 0, r.text
    assert json.loads(r.stdout) == [{"capability": "compute", "n": 1}, {"capability": "external", "n": 1},
                                    {"capability": "file", "n": 1}]  # fmt: skip
    r = run("sql", lab, "SELECT sum(n_calls) AS n FROM tool_usage WHERE key = 'tool'", "--format", "json")
    assert r.code == 0 and json.loads(r.stdout) == [{"n": 3}], r.text
    assert {"step_capability", "tool_usage", "tool_calls"} <= set(run("sql", lab, "--views").stdout.split())
    msg = fails("sql", lab, "SELECT nope FROM steps")
    assert "views available:" in msg and "step_capability" in msg and "tool_usage" in msg


def test_sql_json_of_decimal_time_and_hugeint(lab: str, tmp_path: Path) -> None:
    # `SELECT 3.14` is a DECIMAL: json.dumps raised TypeError on it (a traceback); beyond 64 bits a string
    q = (
        "SELECT 3.14 AS d, 2::DECIMAL(10,0) AS i, TIME '10:30:00' AS t, 12345678901234567890::HUGEINT AS h, "
        "[1.5, NULL] AS l, NULL::DECIMAL(4,1) AS n"
    )
    want = {"d": 3.14, "i": 2, "t": "10:30:00", "h": "12345678901234567890", "l": [1.5, None], "n": None}
    r = run("sql", lab, q, "--format", "json")
    assert r.code == 0 and json.loads(r.stdout) == [want], r.text
    r = run("sql", lab, q, "--format", "jsonl")
    assert r.code == 0 and json.loads(r.stdout) == want, r.text
    out = tmp_path / "r.json"
    assert run("sql", lab, q, "--out", str(out)).code == 0
    assert json.loads(out.read_text()) == [want]
    r = run("sql", lab, q, "--format", "csv")
    assert r.code == 0 and list(csv.reader(io.StringIO(r.stdout)))[1][:4] == ["3.14", "2", "10:30:00",
                                                                              "12345678901234567890"]  # fmt: skip


def test_sql_repeated_column_names_keep_their_values(lab: str, tmp_path: Path) -> None:
    q = "SELECT 1 AS a, 2 AS a, 3 AS a_1"
    r = run("sql", lab, q, "--format", "csv")
    assert r.stdout.splitlines() == ["a,a_1,a_1_1", "1,2,3"]
    r = run("sql", lab, q, "--format", "json")
    assert json.loads(r.stdout) == [{"a": 1, "a_1": 2, "a_1_1": 3}]
    assert "1  2    3" in run("sql", lab, q).stdout
    out = tmp_path / "r.csv"
    run("sql", lab, q, "--out", str(out))
    assert out.read_text().splitlines() == ["a,a_1,a_1_1", "1,2,3"]


def test_sql_runs_one_statement_and_names_an_unknown_output_suffix(lab: str, tmp_path: Path) -> None:
    # several statements: DuckDB would return the last one's rows only
    msg = fails("sql", lab, "SELECT 1; SELECT 2")
    assert "run one statement at a time (got 2)" in msg
    assert run("sql", lab, "SELECT 1 AS x;", "--format", "csv").stdout == "x\n1\n"
    # -o with a suffix that names no format: an error, not CSV under another name
    msg = fails("sql", lab, "SELECT 1 AS x", "-o", str(tmp_path / "out.txt"))
    assert "cannot tell the format from the suffix '.txt'" in msg and not (tmp_path / "out.txt").exists()
    r = run("sql", lab, "SELECT 1 AS x", "-o", str(tmp_path / "out.txt"), "--format", "csv")
    assert r.code == 0 and (tmp_path / "out.txt").read_text() == "x\n1\n"
