from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from trajlab.examples import PATTERNS, generate_examples, load_ground_truth
from trajlab.ingest import ingest
from trajlab.store import Lab, query


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def example_set(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("ex") / "set"
    res = generate_examples(out, n_tasks=16, seed=3)
    return out, res


def test_deterministic_in_seed(tmp_path: Path, example_set) -> None:
    out, _ = example_set
    again = generate_examples(tmp_path / "again", n_tasks=16, seed=3)
    assert _tree_digest(again.out) == _tree_digest(out)
    other = generate_examples(tmp_path / "other", n_tasks=16, seed=4)
    assert _tree_digest(other.out) != _tree_digest(out)


def test_refuses_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        generate_examples(tmp_path / "x", n_tasks=2)


def test_ground_truth_is_consistent(example_set) -> None:
    out, res = example_set
    gt = load_ground_truth(out)
    assert len(gt) == res.runs == 16 * 4
    assert sum(r["outcome"] == "success" for r in gt) == res.successes
    for r in gt:
        src = out / "runs" / r["source"]
        assert src.exists(), src
        text = src.read_text()
        if r["outcome"] == "failure":
            assert r["category"] in {
                "audio_perception",
                "video_perception",
                "insufficient_exploration",
                "knowledge_retrieval",
                "reasoning_calculation",
                "tool_infrastructure",
            }
            assert r["decisive"], r
            if "call_id" in r["decisive"]:
                assert r["decisive"]["call_id"] in text
            assert r["final_answer"] != r["expected_answer"]
        else:
            assert r["category"] is None and r["decisive"] is None
            assert r["final_answer"] == r["expected_answer"]
        for cid in r["evidence_call_ids"]:
            assert cid in text
        assert set(r["patterns"]) <= set(PATTERNS)
    # successes and failures differ in the planted patterns the distiller must recover
    succ = [r for r in gt if r["outcome"] == "success" and r["domain"] in ("audio", "mixed")]
    assert all("transcribe_audio" in r["patterns"] for r in succ)


def test_ingests_with_meta_and_maps_decisive_steps(example_set, tmp_path: Path) -> None:
    out, _ = example_set
    rep = ingest([out / "runs"], tmp_path / "lab", progress=False, workers=1)
    assert rep.records_seen == rep.records_ingested + rep.records_quarantined
    assert rep.records_quarantined == 0
    lab = Lab.open(tmp_path / "lab")
    gt = {r["source"]: r for r in load_ground_truth(out)}
    rows = query(
        lab, "SELECT source_path, outcome, task_id, benchmark, split, expected_answer FROM trajectories"
    ).to_pylist()
    ingested_runners = {
        r["runner"] for r in gt.values() if any(x["source_path"].endswith(r["source"]) for x in rows)
    }
    assert {"codex", "claude_code"} <= ingested_runners
    for row in rows:
        rel = row["source_path"].split("/runs/", 1)[1]
        truth = gt[rel]
        assert row["outcome"] == truth["outcome"]
        assert row["task_id"] == truth["task_id"]
        assert row["benchmark"] == "omni-synth"
        assert row["expected_answer"] == truth["expected_answer"]
    calls = query(lab, "SELECT call_id FROM steps WHERE call_id IS NOT NULL").column("call_id").to_pylist()
    wanted = [
        r["decisive"]["call_id"]
        for r in gt.values()
        if r["decisive"] and "call_id" in r["decisive"] and r["runner"] != "atif"
    ]
    assert wanted and set(wanted) <= set(calls)
    specials = json.dumps([r["special"] for r in gt.values()])
    assert "secrets" in specials or len(gt) < 6


def test_examples_and_demo_on_a_full_or_read_only_disk_are_one_line_and_leave_no_half_set(
    tmp_path: Path,
) -> None:
    """Both were an OSError traceback ('[Errno 28] No space left on device', naming no file) that left
    the runs written so far behind, so that the rerun once there was space failed with
    'FileExistsError: .../examples is not empty' (another traceback, for the demo)."""
    from cli_harness import fails, run
    from tmpfs import fill, read_only, tmpfs

    with tmpfs(tmp_path / "fs", 1) as fs:
        filler = fill(fs, leave=64 * 1024)  # room for a few runs, not for the set
        err = fails("examples", str(fs / "ex"), "--tasks", "2")
        assert f"Error: cannot write into {fs / 'ex'}: No space left on device" in err
        assert len(err.strip().splitlines()) == 1, err
        assert not (fs / "ex").exists()
        (fs / "empty").mkdir()
        fails("examples", str(fs / "empty"), "--tasks", "2")
        assert list((fs / "empty").iterdir()) == []  # a folder that was there stays, empty
        err = fails("demo", "-o", str(fs / "demo"), "-q", "--tasks", "2")
        assert f"Error: cannot write into {fs / 'demo'}" in err and "No space left on device" in err
        assert not (fs / "demo" / "examples").exists()
        filler.unlink()
        assert run("examples", str(fs / "ex"), "--tasks", "2").code == 0
        assert (fs / "ex" / "ground_truth.jsonl").is_file()
        read_only(fs)
        err = fails("examples", str(fs / "ro"), "--tasks", "2")
        assert f"Error: cannot write {fs / 'ro'}: Read-only file system" in err
        err = fails("demo", "-o", str(fs / "ro"), "-q", "--tasks", "2")
        assert f"Error: cannot write {fs / 'ro'}: Read-only file system" in err
