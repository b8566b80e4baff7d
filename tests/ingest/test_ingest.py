"""Ingest runs: incremental and idempotent, changed files replace their runs, duplicates, meta sidecars."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from trajlab.ingest import ingest
from trajlab.store import Lab, query

CODEX = "codex/rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-000000000001.jsonl"
CLAUDE_SESSION = "5e55a0e0-0000-4000-8000-00000000c1a0"


def trajectories(lab: Lab) -> dict[str, dict]:
    rows = query(
        lab,
        "select trajectory_id, runner, native_id, n_steps, outcome, task_id, split, tags, reward, "
        "benchmark, metadata, expected_answer, outcome_source from trajectories",
    ).to_pylist()
    return {r["native_id"]: r for r in rows}


def test_first_ingest_counts_and_invariant(runs: Path, tmp_path: Path, invariant) -> None:
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False)
    assert {k: (v.files, v.trajectories, v.steps, v.tool_calls) for k, v in rep.runners.items()} == {
        "codex": (1, 1, 15, 8),
        "claude_code": (1, 1, 21, 7),
    }
    assert (rep.records_seen, rep.records_ingested, rep.records_quarantined) == (78, 78, 0)
    assert rep.invariant_holds and rep.commits == 1
    lab = Lab.open(tmp_path / "lab")
    assert invariant(lab) == {"seen": 78, "ingested": 78, "q": 0}
    src = {r["source_path"]: r for r in lab.read("sources").to_pylist()}
    claude = src[str(runs / "claude" / f"{CLAUDE_SESSION}.jsonl")]
    assert [Path(f).name for f in claude["files"]] == [
        f"{CLAUDE_SESSION}.jsonl",
        "agent-a1b2c3d.jsonl",
        "agent-acompact-9f8e7d.jsonl",
    ]
    assert claude["status"] == "ingested" and claude["records_seen"] == 37 and claude["n_steps"] == 21
    steps = query(lab, "select count(*) n, count(distinct step_id) u from steps").to_pylist()
    assert steps == [{"n": 36, "u": 36}]


def test_rerun_writes_nothing(runs: Path, tmp_path: Path) -> None:
    ingest([runs], tmp_path / "lab", workers=1, progress=False)
    manifest = (tmp_path / "lab" / "lab.json").read_bytes()
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False)
    assert rep.commits == 0 and rep.records_seen == 0
    assert {k: v.unchanged for k, v in rep.runners.items()} == {"codex": 1, "claude_code": 1}
    assert (tmp_path / "lab" / "lab.json").read_bytes() == manifest
    assert "nothing changed" in rep.format()


def test_touched_but_same_file_is_unchanged(runs: Path, tmp_path: Path) -> None:
    ingest([runs], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    before = trajectories(lab)
    traj_parts = [p.path for p in lab.manifest.tables["trajectories"].parts]
    path = runs / "codex" / Path(CODEX).name
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False)
    assert rep.runners["codex"].unchanged == 1 and rep.runners["codex"].files == 0  # not parsed again
    lab.refresh()
    assert trajectories(lab) == before
    assert [p.path.rsplit("/", 1)[1] for p in lab.manifest.tables["trajectories"].parts] == [
        p.rsplit("/", 1)[1] for p in traj_parts
    ]
    (row,) = query(lab, f"select mtimes_ns from sources where source_path = '{path}'").to_pylist()
    assert row["mtimes_ns"] == [st.st_mtime_ns + 5_000_000_000]  # fingerprint refreshed ...
    assert ingest([runs], tmp_path / "lab", workers=1, progress=False).commits == 0  # ... so this is a no-op


def test_changed_file_replaces_its_trajectories(runs: Path, tmp_path: Path, invariant) -> None:
    ingest([runs], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    old = trajectories(lab)["0199aaaa-1111-7000-8000-000000000001"]
    path = runs / "codex" / Path(CODEX).name
    lines = path.read_bytes().splitlines(keepends=True)
    extra = {
        "timestamp": "2026-03-02T10:01:00.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "And in Spanish?"}],
        },
    }
    path.write_bytes(b"".join(lines) + orjson.dumps(extra) + b"\n")
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False)
    assert rep.runners["codex"].files == 1 and rep.runners["claude_code"].unchanged == 1
    lab.refresh()
    new = trajectories(lab)["0199aaaa-1111-7000-8000-000000000001"]
    assert new["trajectory_id"] != old["trajectory_id"] and new["n_steps"] == 16
    ids = query(lab, "select distinct trajectory_id from steps").column("trajectory_id").to_pylist()
    assert old["trajectory_id"] not in ids and new["trajectory_id"] in ids
    assert query(lab, "select count(*) n from trajectories").to_pylist() == [{"n": 2}]
    assert query(lab, "select count(*) n from steps").to_pylist() == [{"n": 37}]
    invariant(lab)


def test_duplicated_files_are_reported(runs: Path, tmp_path: Path) -> None:
    src = runs / "codex" / Path(CODEX).name
    shutil.copy(src, runs / "codex" / "copy-of-rollout.jsonl")
    shutil.copy(src, tmp_path / "elsewhere.jsonl")
    rep = ingest([runs, tmp_path / "elsewhere.jsonl"], tmp_path / "lab", workers=1, progress=False)
    assert rep.runners["codex"].files == 1 and rep.runners["codex"].duplicates == 2
    assert sorted(Path(p).name for p, _ in rep.duplicates) == ["elsewhere.jsonl", Path(CODEX).name]
    lab = Lab.open(tmp_path / "lab")
    dups = query(lab, "select source_path, duplicate_of from sources where status = 'duplicate'").to_pylist()
    assert {Path(d["duplicate_of"]).name for d in dups} == {"copy-of-rollout.jsonl"}
    assert query(lab, "select count(*) n from trajectories where runner = 'codex'").to_pylist() == [{"n": 1}]
    assert "duplicate (not ingested again)" in rep.format()
    # a later run: duplicates stay duplicates, nothing is rewritten
    assert (
        ingest([runs, tmp_path / "elsewhere.jsonl"], tmp_path / "lab", workers=1, progress=False).commits == 0
    )


def test_symlinked_folders_are_followed_once(runs: Path, tmp_path: Path) -> None:
    """A link to a folder (`latest -> ../runs`) is ingested; a second link to the same folder and a
    link loop add nothing (each folder is walked once, under its first path in name order)."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "latest").symlink_to(runs, target_is_directory=True)
    (d / "again").symlink_to(runs, target_is_directory=True)
    (d / "loop").mkdir()
    (d / "loop" / "up").symlink_to(d, target_is_directory=True)
    rep = ingest([d], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    paths = [r["source_path"] for r in query(lab, "select source_path from sources").to_pylist()]
    assert rep.runners["codex"].files == 1 and rep.runners["claude_code"].files == 1
    assert all(p.startswith(str(d / "again") + "/") for p in paths), paths  # the first link by name
    assert not rep.duplicates and rep.invariant_holds


def test_moved_file_is_not_a_duplicate(runs: Path, tmp_path: Path) -> None:
    ingest([runs], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    before = trajectories(lab)["0199aaaa-1111-7000-8000-000000000001"]["trajectory_id"]
    src = runs / "codex" / Path(CODEX).name
    dst = runs / "codex" / "renamed.jsonl"
    src.rename(dst)
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False)
    assert (rep.runners["codex"].files, rep.runners["codex"].duplicates) == (1, 0)
    lab.refresh()
    rows = query(
        lab, "select trajectory_id, source_path from trajectories where runner = 'codex'"
    ).to_pylist()
    assert rows == [{"trajectory_id": before, "source_path": str(dst)}]  # content id: unchanged
    paths = (
        query(lab, "select source_path from sources where runner = 'codex'").column("source_path").to_pylist()
    )
    assert paths == [str(dst)]


def test_meta_sidecars(runs: Path, tmp_path: Path, invariant) -> None:
    meta = runs / "trajlab-meta.jsonl"
    lines = [
        {
            "source": f"codex/{Path(CODEX).name}",
            "task_id": "v-017",
            "outcome": "failure",
            "split": "train",
            "tags": ["omni"],
            "reward": 0,
            "expected_answer": 4,
            "metadata": {"grader": "exact"},
        },
        {"native_id": CLAUDE_SESSION, "benchmark": "omnigaia", "outcome": "success"},
        "not json",
        {"source": "x.jsonl", "colour": "red"},
        {"task_id": "no key"},
        {"native_id": "zzz", "reward": "high"},
        {"native_id": "zzz", "outcome": "maybe"},
    ]
    meta.write_bytes(b"\n".join(x.encode() if isinstance(x, str) else orjson.dumps(x) for x in lines) + b"\n")
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False)
    m = rep.runners["meta"]
    assert (m.files, m.records_seen, m.records_ingested, m.records_quarantined) == (1, 7, 2, 5)
    assert rep.invariant_holds
    lab = Lab.open(tmp_path / "lab")
    t = trajectories(lab)
    codex = t["0199aaaa-1111-7000-8000-000000000001"]
    assert (codex["task_id"], codex["outcome"], codex["split"], codex["tags"], codex["reward"]) == (
        "v-017",
        "failure",
        "train",
        ["omni"],
        0.0,
    )
    assert codex["expected_answer"] == "4" and codex["outcome_source"] == "trajlab-meta"
    assert orjson.loads(codex["metadata"])["grader"] == "exact"
    assert orjson.loads(codex["metadata"])["cwd"] == "/work/task"  # merged with the adapter's metadata
    assert (t[CLAUDE_SESSION]["benchmark"], t[CLAUDE_SESSION]["outcome"]) == ("omnigaia", "success")
    q = query(lab, "select line, byte_offset, reason, error_type from quarantine order by line").to_pylist()
    assert [(r["line"], r["error_type"]) for r in q] == [
        (3, "meta"),
        (4, "meta"),
        (5, "meta"),
        (6, "meta"),
        (7, "meta"),
    ]
    assert "trajlab-meta.jsonl line 3" in q[0]["reason"] and "not valid JSON" in q[0]["reason"]
    assert "unknown fields ['colour']" in q[1]["reason"]
    assert "needs `source` or `native_id`" in q[2]["reason"]
    assert "`reward` must be" in q[3]["reason"] and "`outcome` must be one of" in q[4]["reason"]
    raw = meta.read_bytes()
    assert [r["byte_offset"] for r in q] == [
        sum(len(x) + 1 for x in raw.split(b"\n")[:k]) for k in range(2, 7)
    ]
    invariant(lab)

    # unchanged sidecar: nothing to do
    assert ingest([runs], tmp_path / "lab", workers=1, progress=False).commits == 0
    # a changed sidecar re-ingests the runs it applies to, and only those
    lines[0] = {**lines[0], "outcome": "success"}
    meta.write_bytes(b"\n".join(x.encode() if isinstance(x, str) else orjson.dumps(x) for x in lines) + b"\n")
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False)
    assert (
        rep.runners["codex"].files,
        rep.runners["claude_code"].files,
        rep.runners["claude_code"].unchanged,
    ) == (1, 0, 1)
    lab.refresh()
    assert trajectories(lab)["0199aaaa-1111-7000-8000-000000000001"]["outcome"] == "success"
    assert query(lab, "select count(*) n from quarantine").to_pylist() == [{"n": 5}]  # not duplicated
    # a deleted sidecar: its values go away with it
    meta.unlink()
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False)
    lab.refresh()
    t = trajectories(lab)
    assert t["0199aaaa-1111-7000-8000-000000000001"]["outcome"] == "unknown"
    assert t[CLAUDE_SESSION]["benchmark"] is None
    assert query(lab, "select count(*) n from quarantine").to_pylist() == [{"n": 0}]
    invariant(lab)


def test_meta_option_file_is_remembered(runs: Path, tmp_path: Path) -> None:
    meta = tmp_path / "grades.trajlab-meta.jsonl"
    meta.write_bytes(orjson.dumps({"native_id": CLAUDE_SESSION, "task_id": "a-3", "difficulty": 2}) + b"\n")
    ingest([runs], tmp_path / "lab", workers=1, progress=False, meta_files=[meta])
    lab = Lab.open(tmp_path / "lab")
    (row,) = query(
        lab, f"select task_id, difficulty from trajectories where native_id = '{CLAUDE_SESSION}'"
    ).to_pylist()
    assert row == {"task_id": "a-3", "difficulty": "2"}
    # a later run without --meta still knows the sidecar: nothing changes
    assert ingest([runs], tmp_path / "lab", workers=1, progress=False).commits == 0


def test_force_reparses_with_same_ids(runs: Path, tmp_path: Path) -> None:
    ingest([runs], tmp_path / "lab", workers=1, progress=False)
    lab = Lab.open(tmp_path / "lab")
    before = trajectories(lab)
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False, force=True)
    assert rep.runners["codex"].files == 1 and rep.commits == 1
    lab.refresh()
    after = trajectories(lab)
    assert {k: v["trajectory_id"] for k, v in after.items()} == {
        k: v["trajectory_id"] for k, v in before.items()
    }
    assert query(lab, "select count(*) n from steps").to_pylist() == [{"n": 36}]  # replaced, not doubled


@pytest.mark.slow
def test_two_workers_give_the_same_lab(runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trajlab.ingest._run as run

    monkeypatch.setattr(run, "POOL_MIN_BYTES", 0)
    for i in range(6):  # enough distinct units for several batches
        p = runs / "codex" / f"rollout-copy-{i}.jsonl"
        data = (
            (runs / "codex" / Path(CODEX).name)
            .read_bytes()
            .replace(b"0199aaaa-1111", f"0199aaaa-{i:04d}".encode())
        )
        p.write_bytes(data)
    one = ingest([runs], tmp_path / "one", workers=1, progress=False)
    two = ingest([runs], tmp_path / "two", workers=2, progress=False)
    assert one.totals == two.totals and one.totals.trajectories == 8
    q = "select trajectory_id, n_steps, n_tool_calls, input_tokens from trajectories order by 1"
    assert (
        query(Lab.open(tmp_path / "one"), q).to_pylist() == query(Lab.open(tmp_path / "two"), q).to_pylist()
    )
