"""Contamination: a skill that would carry an eval task's gold answer, task id or unique text is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from distill_labs import EXTRACT, OCR, make_lab, traj

from trajlab.cli import cli
from trajlab.distill import (
    ContaminationError,
    EvalIndex,
    MineParams,
    SkillStore,
    distill,
    empty_skill,
    read_eval_tasks,
)
from trajlab.distill._distill import write_checked
from trajlab.distill._skill import Item

P = MineParams(min_support=3)


def test_eval_index_scan() -> None:
    idx = EvalIndex.build(
        eval_tasks=[
            ("omni-v-0099", "What code is shown in harbor_cam_099.mp4 at the end?", "ZEBRA-42"),
            ("omni-a-0098", "Sum the amounts.", "7"),
        ],
        other_tasks=[("omni-v-0001", "What code is shown in lecture_clip_001.mp4 at the end?", "ORBIT-19")],
    )
    assert idx.task_ids == {"omni-v-0099": "omni-v-0099", "omni-a-0098": "omni-a-0098"}
    assert idx.answers == {"ZEBRA-42": "omni-v-0099"}
    assert idx.short_answers == 1  # "7" is too short to scan for without false alarms
    assert "harbor_cam_099.mp4" in idx.words and "lecture_clip_001.mp4" not in idx.words
    hits = idx.scan({"SKILL.md": "Answer zebra-42 quickly; see harbor_cam_099.mp4 and omni-v-0099."})
    assert sorted((h.kind, h.value) for h in hits) == [
        ("answer", "ZEBRA-42"),
        ("task_id", "omni-v-0099"),
        ("task_text", "harbor_cam_099.mp4"),
    ]
    # whole tokens only: ZEBRA-421 is not ZEBRA-42
    assert idx.scan({"x": "ZEBRA-421 omni-v-00991"}) == []


def _leaky_lab(path: Path, leak: str) -> None:
    runs = []
    for i in range(5):
        runs.append((traj(f"s{i}", "success"), [f"cat {leak}", OCR]))
        runs.append((traj(f"f{i}", "failure"), [EXTRACT, OCR]))
    runs.append(
        (
            traj(
                "ev",
                "failure",
                split="eval",
                task_id="omni-v-0099",
                task="Read the sign.",
                expected_answer="ZEBRA-42",
            ),
            [EXTRACT],
        )
    )
    make_lab(path, runs)


@pytest.mark.parametrize("leak,kind", [("ZEBRA-42", "answer"), ("/work/omni-v-0099/notes.txt", "task_id")])
def test_distill_refuses_contaminated_skill(tmp_path: Path, leak: str, kind: str) -> None:
    _leaky_lab(tmp_path / "lab", leak)
    res = distill(tmp_path / "out", lab=tmp_path / "lab", params=P, progress=False)
    [sk] = res.skills
    assert sk.refused is not None and kind in sk.refused and "omni-v-0099" in sk.refused
    assert sk.path is None
    assert not (tmp_path / "out" / sk.name).exists()
    assert not (tmp_path / "out" / ".history").exists()


def test_cli_exits_nonzero_on_refusal(tmp_path: Path) -> None:
    _leaky_lab(tmp_path / "lab", "ZEBRA-42")
    r = CliRunner().invoke(
        cli,
        [
            "distill",
            "--lab",
            str(tmp_path / "lab"),
            "--out",
            str(tmp_path / "out"),
            "--min-support",
            "3",
            "-q",
        ],
    )
    assert r.exit_code == 1
    assert "REFUSED distilled-general" in r.output and "contamination guard" in r.output


def test_clean_lab_is_written(tmp_path: Path) -> None:
    _leaky_lab(tmp_path / "lab", "hello-world-train")
    res = distill(tmp_path / "out", lab=tmp_path / "lab", params=P, progress=False)
    assert res.skills[0].refused is None and res.skills[0].version == 1


def test_write_checked_refuses_edits(tmp_path: Path) -> None:
    idx = EvalIndex.build([("omni-v-0099", "", "ZEBRA-42")])
    sk = empty_skill("cal")
    sk.section("Do").items.append(Item("The answer is usually ZEBRA-42."))  # type: ignore[union-attr]
    with pytest.raises(ContaminationError, match="ZEBRA-42"):
        write_checked(SkillStore(tmp_path), sk, idx, "edit", [])
    assert not (tmp_path / "cal").exists()


def test_eval_tasks_file_extends_the_guard(tmp_path: Path) -> None:
    runs = []
    for i in range(5):
        runs.append((traj(f"s{i}", "success"), ["cat ZEBRA-42", OCR]))
        runs.append((traj(f"f{i}", "failure"), [EXTRACT, OCR]))
    make_lab(tmp_path / "lab", runs)  # no eval runs in this lab at all
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        '{"task_id": "ext-1", "question": "Read the sign.", "answer": "ZEBRA-42", "split": "eval"}\n'
        '{"task_id": "tr-1", "question": "Other.", "answer": "OTHER-99", "split": "train"}\n',
        encoding="utf-8",
    )
    assert read_eval_tasks(tasks) == [("ext-1", "Read the sign.", "ZEBRA-42")]
    ok = distill(tmp_path / "a", lab=tmp_path / "lab", params=P, progress=False)
    assert ok.skills[0].refused is None
    r = CliRunner().invoke(
        cli,
        [
            "distill",
            "--lab",
            str(tmp_path / "lab"),
            "--out",
            str(tmp_path / "b"),
            "--min-support",
            "3",
            "--eval-tasks",
            str(tasks),
            "-q",
        ],
    )
    assert r.exit_code == 1 and "answer 'ZEBRA-42' of eval task ext-1" in r.output
