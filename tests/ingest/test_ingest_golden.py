"""Ingested rows are exactly the recorded ones (see golden_rows.py): speed work must not change a row."""

from __future__ import annotations

from pathlib import Path

import orjson
from golden_rows import GOLDEN, KEYS, canonical_rows, ingest_snapshot


def _diff(now: dict[str, dict[str, str]], want: dict[str, dict[str, str]]) -> list[str]:
    out = []
    for table in KEYS:
        a, b = now.get(table, {}), want.get(table, {})
        out += [f"{table}: new row {k}" for k in sorted(a.keys() - b.keys())]
        out += [f"{table}: missing row {k}" for k in sorted(b.keys() - a.keys())]
        out += [f"{table}: changed row {k}" for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]
    return out


def test_rows_match_the_recorded_snapshot(tmp_path: Path) -> None:
    want = orjson.loads(GOLDEN.read_bytes())
    now, lab, root = ingest_snapshot(tmp_path)
    assert {t: len(v) for t, v in now.items()} == {
        "trajectories": 59,
        "steps": 573,
        "sources": 58,
        "quarantine": 36,
    }
    problems = _diff(now, want)
    if problems:
        steps = canonical_rows(lab, "steps", root)
        shown = [p for p in problems if p.startswith("steps: changed")][:3]
        detail = "\n".join(f"{p}: {steps[p.split()[-1]]}" for p in shown)
        raise AssertionError(f"{len(problems)} rows differ:\n" + "\n".join(problems[:20]) + "\n" + detail)


def test_two_workers_write_the_same_rows(tmp_path: Path, monkeypatch) -> None:
    import trajlab.ingest._run as run

    # The fixtures are small: force the worker pool, with the units spread over 4 batches.
    monkeypatch.setattr(run, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(run, "_batches", lambda units, sizes, n: [units[i::4] for i in range(4)])
    pools = []
    real_pool = run._pool
    monkeypatch.setattr(run, "_pool", lambda *a: pools.append(a) or real_pool(*a))
    now, _, _ = ingest_snapshot(tmp_path, workers=2)
    assert len(pools) == 1
    assert _diff(now, orjson.loads(GOLDEN.read_bytes())) == []
