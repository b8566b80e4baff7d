"""The held-out split of `iterate` stays held out even when the runner records a split of its own.

A real harness often writes the benchmark's split (`train`, `dev`...) into its trajectory metadata.
Ingest keeps a split found in the files (defaults only fill what is missing), so before the fix the
held-out runs were stored as `train`, mined by the offline editor and counted in the evidence of
the calibration edits.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trajlab.distill import iterate
from trajlab.distill._features import load_corpus
from trajlab.store import Lab

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "distill" / "toy_runner.py"

WRAPPER = f"""
import json, subprocess, sys
from pathlib import Path
rc = subprocess.run([sys.executable, {str(TOY)!r}, *sys.argv[1:4]]).returncode
meta = Path(sys.argv[3]) / "trajlab-meta.jsonl"
if meta.exists():
    row = json.loads(meta.read_text())
    row["split"] = "train"  # the harness's own split label
    meta.write_text(json.dumps(row) + "\\n")
sys.exit(rc)
"""

# calibration: audio only (whisper decides); held-out: video only (ffprobe decides)
CAL = ["audio-01", "audio-04", "audio-02", "audio-03"]
HELD = ["video-01", "video-04", "video-07", "video-02", "video-03", "video-05"]


@pytest.mark.slow
def test_heldout_runs_never_feed_the_editor_when_the_runner_records_a_split(tmp_path: Path) -> None:
    runner = tmp_path / "split_runner.py"
    runner.write_text(WRAPPER, encoding="utf-8")
    cmd = f"{sys.executable} {runner} {{task}} {{skills_dir}} {{out_dir}}"
    work = tmp_path / "work"
    res = iterate(work, CAL, cmd, rounds=1, heldout=HELD, max_ops=10, progress=False)
    # only calibration runs are distillable in the iteration's lab
    lab = Lab.open(work / "lab")
    corpus = load_corpus(lab)
    rounds = len(res.rounds)
    assert sorted(r.task_id for r in corpus.runs) == sorted(CAL * rounds)
    assert corpus.excluded_eval == len(HELD) * rounds
    # no version ever learned from the held-out tasks (ffprobe only matters there)
    for f in (work / "skills").rglob("SKILL.md"):
        assert "ffprobe" not in f.read_text(encoding="utf-8"), f
    # the calibration signal is still found and helps
    assert res.rounds[1].accepted and res.rounds[1].cal_score == 1.0
    assert "do|all|use:whisper" in {o["rule"] for o in res.rounds[1].ops}
