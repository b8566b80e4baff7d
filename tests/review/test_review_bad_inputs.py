"""Review commands against damaged annotation files, bad layouts, hostile names, read-only folders, bad
taxonomies and degenerate agreement data: exit code, a message naming file/line/field, no traceback,
and nothing already written lost or changed."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from review_synth import judge_row, make_lab, step_rows, traj_row
from sklearn.metrics import cohen_kappa_score

from trajlab.cli import cli
from trajlab.review import agreement

ACTS = [("whisper", "whisper a.wav", "hello", False), ("python", "python x.py", "42", False)]
TIDS = ("t_one", "t_two", "t_three", "t_four")
OMNI = Path(__file__).resolve().parents[2] / "taxonomy" / "omni-failure.yaml"


def run(*args: str, input: str | None = None):
    r = CliRunner().invoke(cli, list(args), input=input)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"trajlab {' '.join(args)} raised {r.exception!r}") from r.exception
    assert "Traceback" not in r.output
    return r


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every file and folder under root, except the (empty, git-ignored) dataset lock files."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else "dir")
        for p in sorted(root.rglob("*"))
        if p.name != ".lock"
    }


def rec(tid: str = "t_one", cat: str = "audio_perception", who: str = "bob", **kw) -> str:
    d = {"trajectory_id": tid, "taxonomy_id": "omni-failure", "taxonomy_version": "1.0.0", "category": cat,
         "annotator": who, "created_at": "2026-01-01T00:00:00Z", **kw}  # fmt: skip
    return json.dumps(d)


@pytest.fixture
def lab(tmp_path: Path):
    return make_lab(
        tmp_path / "lab",
        [(traj_row(t, 4), step_rows(t, ACTS)) for t in TIDS],
        [judge_row(t, "audio_perception", confidence=0.2 * i) for i, t in enumerate(TIDS)],
    )


def test_every_bad_line_is_named_and_nothing_is_lost(tmp_path: Path, lab) -> None:
    ds = tmp_path / "ann" / "default"
    ds.mkdir(parents=True)
    bob = ds / "bob.jsonl"
    bob.write_bytes(
        b"\n".join(
            [
                rec().encode(),  # 1 ok
                b"[1, 2]",  # 2 a JSON array
                rec("t_missing").encode(),  # 3 not in the lab
                rec("t_two", "bad_category").encode(),  # 4 unknown category
                json.dumps(
                    {"taxonomy_id": "omni-failure", "annotator": "bob"}
                ).encode(),  # 5 no trajectory id
                b"\xff\xfe not utf-8",  # 6
                b"{not json",  # 7
                rec("t_one", note="same label, newer note").encode(),  # 8 a repeat: the newest note wins
                rec("t_one", "video_perception").encode(),  # 9 a conflicting duplicate: line 1 (8) is kept
                rec("t_three").encode(),  # 10 ok
                rec("t_four")[:40].encode(),  # 11 cut off mid-write
            ]
        )
    )
    (ds / "carol.jsonl").write_bytes(b"")  # an empty file is no problem
    before = snapshot(tmp_path / "ann")
    ann = ("--annotations", str(tmp_path / "ann"))
    r = run("annotations", "validate", str(lab.root), *ann)
    assert r.exit_code == 1
    for line, text in [
        (2, "expected a JSON object, got list"),
        (3, "unknown trajectory id 't_missing': not in the lab"),
        (4, "category 'bad_category' is not in taxonomy omni-failure v1.0.0"),
        (5, "trajectory_id: Field required"),
        (6, "not UTF-8 (byte 0)"),
        (7, "not valid JSON"),
        (9, "conflicting duplicate: bob already labeled t_one as audio_perception"),
        (11, "half-written last line (no newline at the end; an interrupted write?)"),
    ]:
        assert f"{bob}:{line}: error: {text}" in r.output, line
    assert "2 files, 6 records: 8 errors, 0 warnings" in r.output
    r = run("annotations", "load", str(lab.root), *ann)
    assert r.exit_code == 1 and f"Error: {bob}:2: expected a JSON object, got list" in r.output
    assert lab.refresh().rows("human_labels") == 0  # strict: the lab is left unchanged
    r = run("annotations", "load", str(lab.root), *ann, "--skip-invalid")
    assert r.exit_code == 0 and "2 labels loaded into human_labels from 4 records in 2 files" in r.output
    assert r.output.count(f"{bob}:") == 8  # every skipped line is reported, not silently dropped
    loaded = {x["trajectory_id"]: x for x in lab.refresh().read("human_labels").to_pylist()}
    assert set(loaded) == {"t_one", "t_three"}
    one = loaded["t_one"]  # the repeat (line 8) replaced the note; the conflicting line 9 did not win
    assert (one["category"], one["note"], one["source_line"]) == (
        "audio_perception",
        "same label, newer note",
        8,
    )
    assert snapshot(tmp_path / "ann") == before  # validation and loading never rewrite a file


def test_a_folder_where_a_file_belongs_is_reported_not_skipped(tmp_path: Path, lab) -> None:
    ann = tmp_path / "ann"
    (ann / "default" / "alice.jsonl").mkdir(parents=True)
    (ann / "default" / "bob.jsonl").write_text(rec() + "\n")
    before = snapshot(ann)
    opt = ("--annotations", str(ann))
    r = run("annotations", "validate", str(lab.root), *opt)
    alice = ann / "default" / "alice.jsonl"
    assert r.exit_code == 1
    assert f"{alice}: error: is a folder, not an annotation file: nothing in it was read" in r.output
    r = run("annotations", "load", str(lab.root), *opt)
    assert r.exit_code == 1 and f"Error: {alice}: is a folder" in r.output
    assert lab.refresh().rows("human_labels") == 0
    # alice cannot save a label: told before she types one (it used to be IsADirectoryError on save)
    r = run("review", str(lab.root), "-a", "alice", *opt, input="1\n\nnote\n")
    assert r.exit_code == 1
    assert f"Error: {alice}: cannot write the annotation file: it is a folder, not a file" in r.output
    assert "decisive step" not in r.output  # no item was shown for labeling
    # a dataset "folder" that is a file
    (tmp_path / "ann2").mkdir()
    (tmp_path / "ann2" / "default").write_text("x")
    r = run("annotations", "validate", str(lab.root), "--annotations", str(tmp_path / "ann2"))
    assert r.exit_code == 1 and "default: error: is a file, not a dataset folder" in r.output
    r = run("adjudicate", str(lab.root), "--annotations", str(tmp_path / "ann2"), "--decide", "t_one",
            "audio_perception", "--by", "dana", "--reason", "r")  # fmt: skip
    assert (
        r.exit_code == 1
        and "cannot write the annotation file: a file is where a folder should be" in r.output
    )
    assert (tmp_path / "ann2" / "default").read_text() == "x" and snapshot(ann) == before


@pytest.mark.parametrize(
    "name", ["../evil", "a/b", "..", "/tmp/abs", "a\\b", ".hidden", "_adjudications", "x" * 65, "é"]
)
def test_annotator_names_cannot_leave_the_annotations_folder(tmp_path: Path, lab, name: str) -> None:
    before = snapshot(tmp_path)
    r = run("review", str(lab.root), "-a", name, "--annotations", str(tmp_path / "ann"), input="1\n\nn\n")
    assert r.exit_code == 1
    assert f"Error: annotator name {name!r} is not allowed: use 1-64 letters, digits" in r.output
    assert snapshot(tmp_path) == before  # nothing written anywhere, not even the annotations folder
    r = run("review", str(lab.root), "-a", "ok", "-d", name, "--annotations", str(tmp_path / "ann"), "--list")
    assert r.exit_code == 1 and f"dataset name {name!r} is not allowed" in r.output
    assert snapshot(tmp_path) == before


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """A folder nobody can add files to: mode 0555, or (root ignores modes) the immutable attribute."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("running as root and chattr +i is not available: cannot make a read-only folder")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_read_only_annotations_folder_is_a_message_before_typing(tmp_path: Path, lab) -> None:
    ds = tmp_path / "ann" / "default"
    ds.mkdir(parents=True)
    (ds / "bob.jsonl").write_text(rec() + "\n")
    before = snapshot(tmp_path / "ann")
    opt = ("--annotations", str(tmp_path / "ann"))
    with read_only(ds):
        r = run("review", str(lab.root), "-a", "alice", *opt, input="1\n\nnote\n")
        assert r.exit_code == 1
        assert f"Error: {ds}: cannot write the dataset folder:" in r.output
        assert f"({ds / '.lock'}); nothing was written" in r.output
        assert "decisive step" not in r.output
        r = run("review", str(lab.root), "-a", "alice", *opt, "--list")  # reading still works
        assert r.exit_code == 0 and [ln.split()[0] for ln in r.output.splitlines()[2:]] == list(TIDS[1:])
        r = run("adjudicate", str(lab.root), *opt, "--decide", "t_one", "audio_perception", "--by", "dana",
                "--reason", "r")  # fmt: skip
        assert r.exit_code == 1
        assert f"Error: {ds / '_adjudications.jsonl'}: cannot write the annotation file:" in r.output
    assert snapshot(tmp_path / "ann") == before


def _taxonomy(tmp_path: Path, name: str, edit) -> Path:
    data = yaml.safe_load(OMNI.read_text())
    edit(data)
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def test_bad_taxonomy_files_name_line_and_field(tmp_path: Path) -> None:
    cases = {
        "noid": (lambda d: d["categories"][1].pop("id"), ":79: categories[1].id: required field is missing"),
        "noname": (
            lambda d: d["categories"][2].pop("name"),
            ":132: categories[2](insufficient_exploration).name: required field is missing",
        ),
        "dup": (
            lambda d: d["categories"][1].update(id="audio_perception"),
            ":79: categories[1](audio_perception).id: duplicate category id 'audio_perception'",
        ),
        "empty": (lambda d: d.update(categories=[]), ":23: categories: List should have at least 2 items"),
        "version": (lambda d: d.update(version=[1, 2]), ":3: version: [1, 2] must be a quoted string"),
        "versus": (
            lambda d: d["categories"][0]["tie_breakers"][0].update(versus="ghost"),
            ":40: categories[0](audio_perception).tie_breakers[0].versus: unknown category 'ghost'",
        ),
    }
    for name, (edit, message) in cases.items():
        p = _taxonomy(tmp_path, name, edit)
        r = run("taxonomy", "validate", str(p))
        assert r.exit_code == 1 and f"{p}{message}" in r.output, (name, r.output)
        r = run("taxonomy", "show", str(p))  # the commands that load it stop with the first problem
        assert r.exit_code == 1 and f"Error: {p}" in r.output and message.split(": ", 1)[1] in r.output
    bad = tmp_path / "notyaml.yaml"
    bad.write_text("id: [unclosed\n  - : :\n")
    r = run("taxonomy", "validate", str(bad))
    assert r.exit_code == 1 and f"{bad}:2: YAML syntax error" in r.output
    (tmp_path / "folder.yaml").mkdir()
    r = run("taxonomy", "show", str(tmp_path / "folder.yaml"))
    assert r.exit_code == 1 and "folder.yaml is a folder, not a YAML file" in r.output


def test_agreement_edge_cases_against_hand_computation_and_sklearn() -> None:
    def rows(spec: dict[str, dict[str, str]]):
        return [
            {"rater": who, "trajectory_id": t, "category": c, "decisive_step_index": 1}
            for who, labels in spec.items()
            for t, c in labels.items()
        ]

    one = agreement(rows({"alice": {"t1": "a", "t2": "b"}}))  # one annotator: no pair, nothing to compare
    assert one.pairs == [] and one.fleiss_kappa is None and one.krippendorff_alpha is None
    assert "no trajectory has labels from two or more human reviewers" in one.to_table()
    item = agreement(rows({"alice": {"t1": "a"}, "bob": {"t1": "b"}}))  # one item, two labels
    p = item.pairs[0]
    assert (p.n_items, p.observed, p.kappa) == (1, 0.0, 0.0) == (1, 0.0, cohen_kappa_score(["a"], ["b"]))
    assert item.fleiss_kappa == -1.0 and item.krippendorff_alpha == 0.0
    same = agreement(rows({w: {"t1": "a", "t2": "a", "t3": "a"} for w in ("alice", "bob")}))
    assert same.pairs[0].observed == 1.0 and same.pairs[0].kappa is None  # undefined, not nan or a crash
    assert same.fleiss_kappa is None and same.krippendorff_alpha is None
    table = same.to_table()
    assert "nan" not in table and "n/a" in table
    assert (
        "kappa n/a for alice vs bob: both gave the same single category to all 3 shared trajectories" in table
    )
    disjoint = agreement(rows({"alice": {"t1": "a"}, "bob": {"t2": "a"}}))
    assert disjoint.pairs == [] and disjoint.n_items == 2 and disjoint.n_multi_rated == 0
    # the missing pair is named, with why, instead of simply having no row
    assert disjoint.unpaired == [{"rater_a": "alice", "rater_b": "bob", "n_a": 1, "n_b": 1, "n_both": 0}]
    assert "no row for alice vs bob: no trajectory was labeled by both (alice: 1, bob: 1 trajectories)" in (
        disjoint.to_table()
    )
    # c occurs only in alice's labels
    a, b = ["a", "b", "c"], ["a", "b", "b"]
    rep = agreement(
        rows({"alice": dict(zip(("t1", "t2", "t3"), a)), "bob": dict(zip(("t1", "t2", "t3"), b))})
    )
    assert rep.pairs[0].kappa == pytest.approx(cohen_kappa_score(a, b)) == pytest.approx(0.5)
    # Fleiss by hand: P_i = 1, 1, 0 -> 2/3; p = (2, 3, 1) / 6 -> Pe = 14/36; (2/3 - 14/36) / (22/36) = 10/22
    assert rep.fleiss_kappa == pytest.approx(10 / 22)
    # alpha by hand: 2 disagreeing pairable values of n = 6; expected 2 * (2*3 + 2*1 + 3*1) = 22
    assert rep.krippendorff_alpha == pytest.approx(1 - 5 * 2 / 22)
    per = {row["category"]: row for row in rep.per_category}
    assert per["c"]["human_labels"] == 1 and per["c"]["human_human_specific"] == 0.0
    # binary kappa for c: units [F,F], [F,F], [T,F]: P = 2/3, Pe = (25 + 1)/36 -> -0.2
    assert per["c"]["human_kappa"] == pytest.approx(-0.2)


def test_agreement_cli_on_identical_labels_says_kappa_is_undefined(tmp_path: Path, lab) -> None:
    ds = tmp_path / "ann" / "default"
    ds.mkdir(parents=True)
    for who in ("alice", "bob"):
        (ds / f"{who}.jsonl").write_text("".join(rec(t, who=who) + "\n" for t in TIDS[:3]))
    r = run("annotations", "load", str(lab.root), "--annotations", str(tmp_path / "ann"))
    assert r.exit_code == 0 and "6 labels loaded" in r.output
    r = run("agreement", str(lab.root))
    assert r.exit_code == 0 and "nan" not in r.output.lower()
    assert "Fleiss' kappa n/a, Krippendorff's alpha (nominal) n/a" in r.output
    assert "kappa n/a for alice vs bob: both gave the same single category to all 3 shared" in r.output
    data = json.loads(run("agreement", str(lab.root), "--json").output)
    pair = next(p for p in data["pairs"] if (p["rater_a"], p["rater_b"]) == ("alice", "bob"))
    assert pair["kappa"] is None and pair["observed"] == 1.0 and data["fleiss_kappa"] is None
