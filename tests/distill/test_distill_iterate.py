"""End-to-end `iterate` with the deterministic toy runner (tests/fixtures/distill/toy_runner.py).

The toy agent solves video tasks only when it probes with ffprobe and audio tasks only when it
transcribes with whisper; it does either on its own for some tasks (a fixed hash), and always when
the skill it is given mentions the tool. So the curve must go up, and the chosen version must
contain the decisive guidance.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trajlab.cli import cli
from trajlab.distill import iterate, read_tasks, validate_skill
from trajlab.errors import ConfigError, InputFileError

RUNNER = Path(__file__).resolve().parents[1] / "fixtures" / "distill" / "toy_runner.py"
CMD = f"{sys.executable} {RUNNER} {{task}} {{skills_dir}} {{out_dir}}"
CAL = (
    [f"video-{i:02d}" for i in range(1, 7)]
    + [f"audio-{i:02d}" for i in range(1, 7)]
    + [
        "image-01",
        "crash-01",
        "silent-01",
    ]
)


def calls(work: Path) -> int:
    return sum(len(f.read_text().split()) for f in work.glob("rounds/*/calls.log"))


@pytest.mark.slow
def test_iterate_curve_goes_up_and_resumes(tmp_path: Path) -> None:
    work = tmp_path / "work"
    res = iterate(work, CAL, CMD, rounds=1, max_ops=2, progress=False)
    assert [r.cal_score for r in res.rounds] == pytest.approx([5 / 13, 9 / 13])
    assert calls(work) == 2 * len(CAL)
    # resume with more rounds: the two finished rounds are not run again
    res = iterate(work, CAL, CMD, rounds=3, max_ops=2, progress=False)
    assert calls(work) == 4 * len(CAL)
    curve = [(r.round, r.version, r.cal_score, r.accepted) for r in res.rounds]
    assert curve == [
        (0, 1, pytest.approx(5 / 13), True),
        (1, 2, pytest.approx(9 / 13), True),
        (2, 3, pytest.approx(9 / 13), False),  # tesseract / ffmpeg -vn edits do not help: rejected
        (3, 4, pytest.approx(13 / 13), True),
    ]
    assert [o["rule"] for o in res.rounds[1].ops] == ["avoid|all|use:strings", "do|all|use:ffprobe"]
    assert [o["rule"] for o in res.rounds[3].ops] == ["do|all|use:whisper"]
    # infrastructure failures are reported, not counted as wrong answers
    r0 = res.rounds[0]
    assert r0.calibration["crash-01"] == "infra" and r0.calibration["silent-01"] == "infra"
    assert r0.infra == 2
    results = [json.loads(x) for x in (work / "rounds" / "r000" / "results.jsonl").read_text().splitlines()]
    reasons = {r["task"]: r["reason"] for r in results if r["status"] == "infra"}
    assert reasons == {
        "crash-01": "runner exited 3: toy runner: sandbox failed to start",
        "silent-01": "runner wrote no output",
    }
    # the chosen version carries the decisive guidance and is what is live
    assert res.chosen_version == 4
    text = (res.chosen_path / "SKILL.md").read_text(encoding="utf-8")
    assert "`ffprobe`" in text and "`whisper`" in text
    assert validate_skill(res.chosen_path).ok
    assert json.loads((work / "curve.json").read_text())[3]["calibration"] == 1.0
    assert "does not beat" in res.rounds[2].decision
    v3 = (work / "skills" / ".history" / "calibrated" / "v0003" / "skill" / "SKILL.md").read_text()
    assert "`tesseract`" in v3 and "`tesseract`" not in text  # the rejected candidate stays on record only
    info = json.loads((work / "skills" / ".history" / "calibrated" / "v0004" / "version.json").read_text())
    assert info["parent"] == 2 and info["reason"] == "round 3 candidate (edits v2)"
    diff = (work / "skills" / ".history" / "calibrated" / "v0004" / "diff.patch").read_text()
    assert diff.startswith("--- v0002/") and "tesseract" not in diff  # diffed from the version it edits


@pytest.mark.slow
def test_heldout_drop_rejects_and_heldout_never_distilled(tmp_path: Path) -> None:
    work = tmp_path / "work"
    cal = ["video-01", "video-02", "video-03", "video-04"]
    res = iterate(work, cal, CMD, rounds=1, heldout=["trap-01", "trap-02"], max_ops=2, progress=False)
    r0, r1 = res.rounds
    assert (r0.cal_score, r0.heldout_score) == (pytest.approx(2 / 4), 1.0)
    assert (r1.cal_score, r1.heldout_score) == (1.0, 0.0)  # better on calibration, worse held out
    assert not r1.accepted and r1.decision == "rejected: held-out dropped 1.000 -> 0.000"
    assert res.chosen_version == 1
    # held-out runs are in the lab but never mined, and their ids never reach a skill
    rules = [o["rule"] for o in r1.ops]
    assert rules == ["do|all|use:ffprobe"]
    for v in (work / "skills" / ".history" / "calibrated").glob("v*/skill"):
        blob = "".join(p.read_text() for p in v.rglob("*") if p.is_file())
        assert "trap-01" not in blob and "trap-02" not in blob


def test_cli_iterate_and_bad_inputs(tmp_path: Path) -> None:
    cal = tmp_path / "cal.txt"
    cal.write_text('# toy tasks\nimage-01\n{"task_id": "image-02"}\n', encoding="utf-8")
    assert read_tasks(cal) == ["image-01", "image-02"]
    r = CliRunner().invoke(
        cli,
        [
            "iterate",
            "--calibration",
            str(cal),
            "--runner",
            CMD,
            "--rounds",
            "1",
            "--work",
            str(tmp_path / "w"),
            "-q",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "baseline" in r.output and "chosen: calibrated v1" in r.output  # all solved: nothing to mine
    dup = tmp_path / "dup.txt"
    dup.write_text("a\na\n", encoding="utf-8")
    with pytest.raises(InputFileError, match="twice"):
        read_tasks(dup)
    with pytest.raises(ConfigError, match="out_dir"):
        iterate(tmp_path / "x", ["a"], "echo {task}", rounds=1)
    # every run an infrastructure failure: reported, nothing scored, nothing edited
    res = iterate(tmp_path / "w3", ["a", "b"], "false {out_dir}", rounds=2, progress=False)
    assert [(r.cal_score, r.infra) for r in res.rounds] == [(None, 2)]
    assert res.chosen_version == 1
    with pytest.raises(ConfigError, match="other settings"):
        iterate(tmp_path / "w", ["image-01"], CMD, rounds=1, progress=False)


@pytest.mark.slow
def test_resume_after_interruption_mid_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trajlab.distill._iterate import Iteration

    work = tmp_path / "work"
    cal = ["video-01", "video-02", "audio-01", "crash-01", "audio-02", "video-03"]
    real = Iteration._run_task
    n = {"calls": 0}

    def flaky(self, rdir, skills_dir, task, split):  # the 5th task is interrupted (Ctrl-C)
        n["calls"] += 1
        if n["calls"] == 5:
            raise KeyboardInterrupt
        return real(self, rdir, skills_dir, task, split)

    monkeypatch.setattr(Iteration, "_run_task", flaky)
    with pytest.raises(KeyboardInterrupt):
        iterate(work, cal, CMD, rounds=0, progress=False)
    assert calls(work) == 4
    monkeypatch.setattr(Iteration, "_run_task", real)
    res = iterate(work, cal, CMD, rounds=0, progress=False)
    assert calls(work) == 6  # only the two unfinished tasks ran again
    assert res.rounds[0].calibration == {
        "video-01": "correct",
        "video-02": "wrong",
        "audio-01": "correct",
        "crash-01": "infra",
        "audio-02": "wrong",
        "video-03": "wrong",
    }
