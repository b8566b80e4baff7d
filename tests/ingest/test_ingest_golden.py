"""Ingested rows are exactly the recorded ones (see golden_rows.py): speed work must not change a row."""

from __future__ import annotations

from pathlib import Path

import orjson
from golden_rows import GOLDEN, KEYS, canonical_rows, diff_snapshots, ingest_snapshot


def _diff(now: dict[str, dict[str, str]], want: dict[str, dict[str, str]]) -> list[str]:
    return diff_snapshots(now, want, KEYS)


def test_rows_match_the_recorded_snapshot(tmp_path: Path) -> None:
    want = orjson.loads(GOLDEN.read_bytes())
    now, lab, root = ingest_snapshot(tmp_path)
    assert {t: len(v) for t, v in now.items()} == {
        "trajectories": 60,
        "steps": 587,
        "sources": 59,
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


def test_an_unknown_column_fails_only_its_unit_when_units_convert_together(
    tmp_path: Path, fixtures_dir: Path, monkeypatch
) -> None:
    """Small units' rows are converted to Arrow together; an adapter bug (a row with a column the
    schema does not have) in the ninth unit, past the first 64 rows of the chunk, still fails that
    unit alone, as when each unit converted by itself."""
    from trajlab.ingest import _worker, ingest
    from trajlab.store import Lab, query

    good = (
        fixtures_dir / "codex/rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-000000000001.jsonl"
    ).read_bytes()
    d = tmp_path / "in"
    d.mkdir()
    for k in "abcdefghij":
        (d / f"rollout-{k}.jsonl").write_bytes(good.replace(b"0199aaaa-1111", f"0199aaaa-{k * 4}".encode()))
    real = _worker.finish_trajectory
    together: list[int] = []
    real_together = _worker._convert_together

    def typo(pt, unit, *args):  # type: ignore[no-untyped-def]
        t, steps = real(pt, unit, *args)
        if unit.primary.name == "rollout-i.jsonl":
            steps[-1]["tool_nmae"] = "oops"
        return t, steps

    monkeypatch.setattr(_worker, "finish_trajectory", typo)
    monkeypatch.setattr(
        _worker, "_convert_together", lambda ops, w: together.append(len(ops)) or real_together(ops, w)
    )
    rep = ingest([d], tmp_path / "lab", workers=1, progress=False)
    assert together == [10]
    rows = query(Lab.open(tmp_path / "lab"), "select source_path, status, error from sources").to_pylist()
    by_name = {Path(r["source_path"]).name: r for r in rows}
    assert {k: r["status"] for k, r in by_name.items()} == {
        f"rollout-{k}.jsonl": "quarantined" if k == "i" else "ingested" for k in "abcdefghij"
    }
    assert "rows do not fit the lab schema" in by_name["rollout-i.jsonl"]["error"]
    assert "tool_nmae" in by_name["rollout-i.jsonl"]["error"]
    assert rep.totals.trajectories == 9
    lab = Lab.open(tmp_path / "lab")
    assert query(lab, "select count(*) n from steps").column("n").to_pylist() == [
        sum(r["n_steps"] for r in query(lab, "select n_steps from trajectories").to_pylist())
    ]


def test_tool_seq_numbers_each_tools_calls_in_step_order(tmp_path: Path) -> None:
    """steps.tool_seq: per trajectory, the running count of calls of the same tool key (tool, else
    tool_name, else "(unknown)"), sub-agent calls included; 0 on every other step, on calls of a
    program the shell did not find and on the harness's setup calls."""
    from trajlab.store import query

    _, lab, _ = ingest_snapshot(tmp_path)
    missing = "(exit_code = 127 OR (exit_code IS NULL AND is_error)) AND regexp_matches(output, coalesce(tool, '-') || ': (command )?not found')"
    setup = "json_extract_string(metadata, '$.phase') = 'setup'"
    wrong = query(
        lab,
        "SELECT count(*) FROM (SELECT tool_seq, row_number() OVER (PARTITION BY trajectory_id, "
        "coalesce(tool, tool_name, '(unknown)') ORDER BY step_index) AS expected FROM steps "
        f"WHERE kind = 'tool_call' AND NOT coalesce({missing}, false) AND NOT coalesce({setup}, false)) "
        "WHERE tool_seq IS DISTINCT FROM expected",
    )
    assert wrong.column(0).to_pylist() == [0]
    # Terminal-Bench's `asciinema rec`, `clear`, agent install: the harness's, numbered 0
    harness = query(lab, f"SELECT DISTINCT tool, tool_seq FROM steps WHERE kind = 'tool_call' AND {setup}")
    assert harness.num_rows > 0 and set(harness.column("tool_seq").to_pylist()) == {0}
    # `bash: ffprobe: command not found` and the like, in three formats' fixtures: no use of the tool
    not_found = query(
        lab,
        "SELECT DISTINCT t.format, s.tool, s.tool_seq FROM steps s JOIN trajectories t USING (trajectory_id) "
        f"WHERE s.kind = 'tool_call' AND {missing} ORDER BY ALL",
    ).to_pylist()
    assert {r["tool_seq"] for r in not_found} == {0} and len({r["format"] for r in not_found}) >= 3, not_found
    others = query(lab, "SELECT DISTINCT tool_seq FROM steps WHERE kind <> 'tool_call'")
    assert others.column(0).to_pylist() == [0]
    repeats = query(lab, "SELECT count(*) FROM steps WHERE tool_seq > 1 AND agent_id <> 'main'")
    assert repeats.column(0).to_pylist()[0] > 0  # sub-agents' repeated calls are numbered too


def test_a_snapshot_with_changed_rows_needs_a_version_bump(tmp_path: Path) -> None:
    """golden_rows.py --write refuses changed rows of a format whose adapter version did not move."""
    from golden_rows import unbumped, versions

    now, lab, root = ingest_snapshot(tmp_path)
    current = versions()
    want = {**orjson.loads(orjson.dumps(now)), "_versions": dict(current)}
    assert unbumped(now, want, lab, root, current) == []
    steps = canonical_rows(lab, "steps", root)
    codex_step = next(
        k for k, r in steps.items() if r["trajectory_id"] in _of_format(lab, root, "codex-rollout")
    )
    want["steps"][codex_step] = "0" * 16  # as if the recorded row had been different
    assert unbumped(now, want, lab, root, current) == ["codex-rollout"]
    assert unbumped(now, want, lab, root, {**current, "codex-rollout": current["codex-rollout"] + 1}) == []
    assert unbumped(now, want, lab, root, {**current, "rows": current["rows"] + 1}) == []
    del want["trajectories"][next(iter(want["trajectories"]))]
    want["trajectories"]["t_gone"] = "0" * 16
    assert unbumped(now, want, lab, root, {**current, "codex-rollout": current["codex-rollout"] + 1}) == [
        "(a format whose rows vanished)"
    ]


def _of_format(lab, root: Path, fmt: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {
        r["trajectory_id"] for r in canonical_rows(lab, "trajectories", root).values() if r["format"] == fmt
    }
