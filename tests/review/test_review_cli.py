from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from review_synth import judge_row, make_lab, step_rows, traj_row

from trajlab.cli import cli
from trajlab.review import AnnotationStore

ACTS = [("whisper", "whisper a.wav", "hello", False), ("python", "python x.py", "42", False)]
BAD = Path(__file__).resolve().parents[1] / "fixtures" / "review" / "bad"


def lab_at(tmp_path: Path):
    tids = ("t_one", "t_two", "t_three", "t_four")
    return make_lab(
        tmp_path / "lab",
        [(traj_row(t, 4), step_rows(t, ACTS)) for t in tids],
        [judge_row(t, "audio_perception", confidence=0.2 * i) for i, t in enumerate(tids)],
    )


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_validate_and_load_name_file_and_line(tmp_path: Path) -> None:
    lab = lab_at(tmp_path)
    ann = tmp_path / "ann"
    shutil.copytree(BAD, ann)
    r = invoke("annotations", "validate", str(lab.root), "--annotations", str(ann))
    assert r.exit_code == 1
    path = ann / "default" / "alice.jsonl"
    assert f"{path}:2: error: not valid JSON" in r.output
    assert f"{path}:11: error: half-written last line" in r.output
    assert "1 files, 7 records: 9 errors, 0 warnings" in r.output
    r = invoke("annotations", "load", str(lab.root), "--annotations", str(ann))
    assert r.exit_code == 1 and f"Error: {path}:2: not valid JSON" in r.output
    r = invoke("annotations", "load", str(lab.root), "--annotations", str(ann), "--skip-invalid")
    assert r.exit_code == 0 and "2 labels loaded into human_labels" in r.output


def test_review_list_adjudicate_and_agreement(tmp_path: Path) -> None:
    lab = lab_at(tmp_path)
    ann = tmp_path / "ann"
    r = invoke("review", str(lab.root), "-a", "alice", "--annotations", str(ann), "--list")
    assert r.exit_code == 0
    listed = [line.split()[0] for line in r.output.splitlines()[2:]]
    assert listed == ["t_one", "t_two", "t_three", "t_four"]  # lowest judge confidence first
    store = AnnotationStore(ann, "default")
    for who, cats in {
        "alice": ["audio_perception", "video_perception"],
        "bob": ["audio_perception", "tool_infrastructure"],
    }.items():
        for tid, cat in zip(("t_one", "t_two"), cats):
            store.append(
                {
                    "trajectory_id": tid,
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1.0.0",
                    "category": cat,
                    "annotator": who,
                    "decisive_step_index": 1,
                }
            )
    r = invoke("adjudicate", str(lab.root), "--annotations", str(ann), "--min-reviewers", "2")
    assert r.exit_code == 0
    assert "4 labels loaded" in r.output and "unanimous 1" in r.output
    assert "t_two: alice=video_perception, bob=tool_infrastructure (no majority)" in r.output
    r = invoke(
        "adjudicate", str(lab.root), "--annotations", str(ann), "--min-reviewers", "2",
        "--decide", "t_two", "video_perception", "--by", "dana", "--reason", "frames were misread",
    )  # fmt: skip
    assert (
        r.exit_code == 0 and "adjudicated 1" in r.output and "unresolved (need an adjudicator): 0" in r.output
    )
    assert len(store.adjudications()[0]) == 1
    r = invoke("agreement", str(lab.root), "--json", "--k", "0")
    data = json.loads(r.output)
    assert data["k"] == 0 and data["taxonomy_id"] == "omni-failure"
    pair = next(p for p in data["pairs"] if (p["rater_a"], p["rater_b"]) == ("alice", "bob"))
    assert pair["n_items"] == 2 and pair["observed"] == 0.5
    assert data["confusion"]["judge:llm"]["n"] == 2
    r = invoke("agreement", str(lab.root))
    assert (
        "Krippendorff's alpha" in r.output
        and "judge:llm vs gold: accuracy 0.500 over 2 trajectories (the judge labeled 2 of 2" in r.output
    )


def test_bad_command_input_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    lab = lab_at(tmp_path)
    r = invoke("propagate", str(lab.root))
    assert r.exit_code == 1 and "Error: propagation needs at least 3 reviewed labels" in r.output
    r = invoke("review", str(lab.root), "-a", "../x", "--annotations", str(tmp_path), "--list")
    assert r.exit_code == 1 and "annotator name '../x' is not allowed" in r.output
    r = invoke("review", str(tmp_path / "nolab"), "-a", "x")
    assert r.exit_code == 1 and "no such lab" in r.output
    r = invoke("adjudicate", str(lab.root), "--annotations", str(tmp_path), "--decide", "t_one", "x")
    assert r.exit_code == 2 and "--decide needs --by NAME and --reason TEXT" in r.output
    r = invoke("annotations", "schema")
    assert "supersedes" in json.loads(r.output)["properties"]
