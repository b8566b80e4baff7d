"""A lab is plain Parquet: Spark, Ray, polars and DuckDB read its table folders as they are.

The lab is the example runs (Codex, Claude Code, ATIF) plus a broken file, ingested, with DAGs built,
and then a write that deletes some steps, so the folders hold a second generation whose previous one
is still on disk: a reader of `LAB/steps` must see exactly the rows trajlab reads, the current
generation only. Spark needs Java and pyspark, Ray needs `ray[data]` (`.ci/run` installs both); the
tests skip without them.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from datetime import datetime, timezone
from typing import Any

import polars as pl
import pytest

from trajlab.dag import build_lab
from trajlab.examples import generate_examples
from trajlab.ingest import ingest
from trajlab.store import Lab

TABLES = ("trajectories", "steps", "sources", "quarantine", "dag_nodes", "dag_edges", "dag_metrics")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    root = tmp_path_factory.mktemp("external")
    generate_examples(root / "runs", n_tasks=4, runs_per_task=2, skill_runs=False)
    (root / "runs" / "broken.jsonl").write_bytes(b'{"type":"session_meta","payload":{"id":"x"}}\n{"trunc')
    ingest([root / "runs"], root / "lab", workers=1, progress=False)
    lab = Lab.open(root / "lab")
    build_lab(lab, workers=1, progress=False)
    lab = lab.refresh()
    ids = sorted(lab.read("trajectories", ["trajectory_id"]).column("trajectory_id").to_pylist())
    for tid in ids[:2]:  # two writes of steps: the folder of the first stays until the next write
        with lab.write("drop one trajectory's steps") as txn:
            txn.delete("steps", "trajectory_id", [tid])
        lab = lab.refresh()
    old = [
        p for p in (lab.root / ".gen" / "steps").iterdir() if p.resolve() != (lab.root / "steps").resolve()
    ]
    assert old, "the previous generation of steps should still be on disk"
    return lab


def expected(lab: Lab, table: str) -> dict[str, Any]:
    """What trajlab itself reads: row count, ids, and a few aggregates to compare values."""
    t = lab.read(table)
    out: dict[str, Any] = {"rows": t.num_rows, "columns": set(t.column_names)}
    if table == "steps":
        out["step_ids"] = set(t.column("step_id").to_pylist())
        out["kinds"] = Counter(t.column("kind").to_pylist())
        out["input_tokens"] = sum(x or 0 for x in t.column("input_tokens").to_pylist())
        ts = [x for x in t.column("timestamp").to_pylist() if x is not None]
        out["ts_range"] = (min(ts), max(ts))
    if table == "sources":
        out["files"] = sorted(f for fs in t.column("files").to_pylist() for f in fs)
    return out


def _utc(x: datetime) -> datetime:
    return x.replace(tzinfo=timezone.utc) if x.tzinfo is None else x.astimezone(timezone.utc)


def check_steps(exp: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    assert len(rows) == exp["rows"]
    assert {r["step_id"] for r in rows} == exp["step_ids"]
    assert Counter(r["kind"] for r in rows) == exp["kinds"]
    assert sum(r["input_tokens"] or 0 for r in rows) == exp["input_tokens"]
    ts = [_utc(r["timestamp"]) for r in rows if r["timestamp"] is not None]
    assert (min(ts), max(ts)) == exp["ts_range"]


def test_the_lab_has_what_the_readers_are_checked_on(lab: Lab) -> None:
    assert lab.rows("quarantine") >= 1 and lab.rows("dag_edges") > 0
    assert lab.rows("steps") > 0 and expected(lab, "steps")["ts_range"][0].tzinfo is not None


def test_polars_reads_every_table(lab: Lab) -> None:
    for table in TABLES:
        exp = expected(lab, table)
        df = pl.read_parquet(lab.root / table / "*.parquet")
        assert df.height == exp["rows"] and set(df.columns) == exp["columns"], table
    check_steps(expected(lab, "steps"), pl.read_parquet(lab.root / "steps" / "*.parquet").to_dicts())


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("Spark needs Java (apt-get install -y default-jre-headless)")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("trajlab-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def test_spark_reads_every_table_folder(lab: Lab, spark) -> None:
    for table in TABLES:
        exp = expected(lab, table)
        df = spark.read.parquet(str(lab.root / table))
        assert df.count() == exp["rows"] and set(df.columns) == exp["columns"], table
    exp = expected(lab, "steps")
    cols = ["step_id", "kind", "input_tokens", "timestamp"]
    check_steps(
        exp, [r.asDict() for r in spark.read.parquet(str(lab.root / "steps")).select(*cols).collect()]
    )
    files = spark.read.parquet(str(lab.root / "sources")).selectExpr("explode(files) AS f").collect()
    assert sorted(r["f"] for r in files) == expected(lab, "sources")["files"]
    # Spark SQL over the folders answers like trajlab's own views
    spark.read.parquet(str(lab.root / "steps")).createOrReplaceTempView("steps")
    got = dict(spark.sql("SELECT kind, count(*) AS n FROM steps GROUP BY kind").collect())
    assert got == dict(exp["kinds"])


@pytest.fixture(scope="module")
def ray_data(tmp_path_factory: pytest.TempPathFactory):
    ray = pytest.importorskip("ray")
    data = pytest.importorskip("ray.data")
    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        _temp_dir=str(tmp_path_factory.mktemp("ray")),
    )
    data.DataContext.get_current().enable_progress_bars = False
    yield data
    ray.shutdown()


def test_ray_reads_every_table_folder(lab: Lab, ray_data) -> None:
    for table in TABLES:
        exp = expected(lab, table)
        ds = ray_data.read_parquet(str(lab.root / table))
        assert ds.count() == exp["rows"] and set(ds.schema().names) == exp["columns"], table
    ds = ray_data.read_parquet(
        str(lab.root / "steps"), columns=["step_id", "kind", "input_tokens", "timestamp"]
    )
    check_steps(expected(lab, "steps"), ds.take_all())
