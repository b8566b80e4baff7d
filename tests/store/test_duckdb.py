"""Read-only DuckDB over a lab: views, derived views, and what user SQL may not do."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from trajlab.errors import QueryError
from trajlab.store import Lab, fetch_arrow, query, run_readonly, view_names

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


@pytest.fixture()
def lab(tmp_path: Path) -> Lab:
    lab = Lab.open(tmp_path / "lab", create=True)
    with lab.write("seed") as txn:
        txn.append(
            "trajectories",
            [
                {
                    "trajectory_id": "t1",
                    "runner": "codex",
                    "format": "codex-rollout",
                    "source_path": "/x",
                    "source_digest": "d",
                    "outcome": "failure",
                    "model": "m",
                    "ingested_at": NOW,
                },
            ],
        )
        txn.append(
            "steps",
            [
                {"trajectory_id": "t1", "step_index": 0, "step_id": "t1:0", "kind": "user", "text": "hi"},
                {
                    "trajectory_id": "t1",
                    "step_index": 1,
                    "step_id": "t1:1",
                    "kind": "tool_call",
                    "tool": "ffmpeg",
                    "modality": "audio",
                },
            ],
        )
    (tmp_path / "secret.csv").write_text("a,b\n1,2\n")
    return lab


def test_views_and_derived_views(lab: Lab) -> None:
    names = view_names(lab.connect())
    assert {
        "trajectories",
        "steps",
        "sources",
        "quarantine",
        "tool_calls",
        "dag_nodes",
        "judge_labels",
    } <= set(names)
    got = query(lab, "select trajectory_id, tool, modality, runner, outcome from tool_calls").to_pylist()
    assert got == [
        {
            "trajectory_id": "t1",
            "tool": "ffmpeg",
            "modality": "audio",
            "runner": "codex",
            "outcome": "failure",
        }
    ]
    assert query(lab, "select count(*) as n from dag_nodes", as_="polars")["n"].to_list() == [
        0
    ]  # empty table
    assert list(query(lab, "select kind from steps order by step_index", as_="pandas")["kind"]) == [
        "user",
        "tool_call",
    ]
    assert query(lab, "select count(*) n from steps where step_index = $i", params={"i": 1}).to_pylist() == [
        {"n": 1}
    ]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("COPY steps TO '/tmp/out.csv'", "only read-only queries are allowed (got a COPY statement)"),
        ("CREATE TABLE t AS SELECT 1", "got a CREATE statement"),
        ("CREATE VIEW v AS SELECT 1", "got a CREATE statement"),
        ("ATTACH '/tmp/other.duckdb'", "got an ATTACH statement"),
        ("INSTALL httpfs", "only read-only queries are allowed"),
        ("LOAD httpfs", "only read-only queries are allowed"),
        ("SET enable_external_access = true", "got a SET statement"),
        ("PRAGMA threads = 1", "only read-only queries are allowed"),
        ("PRAGMA enable_profiling", "only read-only queries are allowed"),
        ("SELECT 1; DROP VIEW steps", "got a DROP statement"),
        ("DELETE FROM steps", "got a DELETE statement"),
        ("", "empty query"),
    ],
)
def test_writes_and_settings_are_rejected(lab: Lab, sql: str, message: str) -> None:
    with pytest.raises(QueryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_readonly(lab.connect(), sql)


def test_a_table_pragma_is_refused_or_only_read(lab: Lab) -> None:
    """DuckDB 2 parses `PRAGMA version` as a PRAGMA (refused); DuckDB 1.x as `SELECT * FROM
    pragma_version()`, which reads and changes nothing (the same SELECT passes on both)."""
    try:
        rows = fetch_arrow(run_readonly(lab.connect(), "PRAGMA version")).to_pylist()
    except QueryError as e:
        assert "got a PRAGMA statement" in str(e)
    else:
        assert rows and "library_version" in rows[0]


@pytest.mark.parametrize(
    "sql",
    [
        "select * from read_csv('{outside}/secret.csv')",
        "select * from read_text('/etc/hostname')",
        "select * from read_blob('/etc/passwd')",
        "select * from glob('/etc/*')",
        "select * from read_parquet('{root}/../secret.csv')",
        "select * from read_csv('https://example.com/x.csv')",
    ],
)
def test_no_file_access_outside_the_lab(lab: Lab, sql: str) -> None:
    sql = sql.format(outside=lab.root.parent, root=lab.root)
    with pytest.raises(QueryError, match="Permission Error"):
        fetch_arrow(run_readonly(lab.connect(), sql))


def test_the_connection_itself_cannot_be_reconfigured_to_read_outside_the_lab(lab: Lab) -> None:
    """`Lab.connect()` is public (notebooks run SQL on it without `run_readonly`'s statement check):
    its settings are locked, so it cannot turn file access back on or widen the allowed folder."""
    import duckdb

    con = lab.connect()
    for setting in ("enable_external_access = true", "allowed_directories = ['/']"):
        with pytest.raises(duckdb.Error, match="Cannot change configuration option"):
            con.execute(f"SET {setting}")
    with pytest.raises(duckdb.Error, match="Permission Error"):
        con.execute(f"select * from read_csv('{lab.root.parent}/secret.csv')")


def test_files_inside_the_lab_are_readable(lab: Lab) -> None:
    rel = run_readonly(lab.connect(), f"select count(*) from read_parquet('{lab.root}/steps/*.parquet')")
    assert fetch_arrow(rel).column(0).to_pylist() == [2]


def test_sql_error_carries_duckdb_message_and_views(lab: Lab) -> None:
    with pytest.raises(QueryError) as e:
        query(lab, "select nope from steps")
    msg = str(e.value)
    assert 'Referenced column "nope" not found' in msg
    assert "views available:" in msg and "tool_calls" in msg


def test_pivot_names_its_values_or_is_told_how(lab: Lab) -> None:
    # a PIVOT without IN (...) creates an ENUM first (DuckDB 2: a MULTI statement; DuckDB 1.x, the newest
    # on Python 3.10: a CREATE, then a SELECT): refused, with what to write
    with pytest.raises(
        QueryError, match=r"\(got a (MULTI|CREATE) statement\); a PIVOT must name its values here: .* IN \("
    ):
        run_readonly(lab.connect(), "PIVOT trajectories ON outcome USING count(*) GROUP BY model")
    rows = fetch_arrow(
        run_readonly(
            lab.connect(), "PIVOT trajectories ON outcome IN ('failure') USING count(*) GROUP BY model"
        )
    ).to_pylist()
    assert rows == [{"model": "m", "failure": 1}]
