"""Built DAGs are exactly the recorded ones (see golden_dag.py): speed work on the builder must not
change a node, an edge or a metric, in one process or in the worker pool."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from golden_dag import GOLDEN, KEYS, dag_snapshot, golden_rows

import trajlab.dag._store as dag_store


def _diff(now: dict[str, dict[str, str]], want: dict[str, dict[str, str]]) -> list[str]:
    return golden_rows().diff_snapshots(now, want, KEYS)


def test_dag_rows_match_the_recorded_snapshot(tmp_path: Path) -> None:
    want = orjson.loads(GOLDEN.read_bytes())
    now = dag_snapshot(tmp_path)
    assert {t: len(v) for t, v in now.items()} == {t: len(v) for t, v in want.items()}
    assert len(now["dag_metrics"]) > 100 and len(now["dag_edges"]) > 1000
    problems = _diff(now, want)
    assert not problems, f"{len(problems)} DAG rows differ:\n" + "\n".join(problems[:20])


def test_the_worker_pool_builds_the_recorded_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dag_store, "POOL_MIN_STEPS", 0)  # a pool for this small lab,
    monkeypatch.setattr(dag_store, "TASK_STEPS", 200)  # cut into several tasks
    assert _diff(dag_snapshot(tmp_path, workers=2), orjson.loads(GOLDEN.read_bytes())) == []
