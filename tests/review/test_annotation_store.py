from __future__ import annotations

import json
import multiprocessing as mp
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from review_synth import Tax, make_lab, step_rows, traj_row

from trajlab.errors import ConfigError, InputFileError
from trajlab.review import AnnotationRecord, AnnotationStore

TAX = Tax()


def rec(tid: str = "t_one", category: str = "audio_perception", annotator: str = "alice", **kw) -> dict:
    return {
        "trajectory_id": tid,
        "taxonomy_id": "omni-failure",
        "taxonomy_version": "1.0.0",
        "category": category,
        "annotator": annotator,
        **kw,
    }


@pytest.fixture()
def lab(tmp_path: Path):
    acts = [("whisper", "whisper a.wav", "hello", False), ("python", "python x.py", "42", False)]
    trajs = [(traj_row(t, 4), step_rows(t, acts)) for t in ("t_one", "t_two", "t_three", "t_four")]
    return make_lab(tmp_path / "lab", trajs)


def test_append_writes_one_stable_line_per_record(tmp_path: Path) -> None:
    store = AnnotationStore(tmp_path / "ann", "ds")
    rid = store.append(rec(decisive_step_index=2, evidence_steps=[1, 2, 1], note="größer"))
    path = tmp_path / "ann" / "ds" / "alice.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    obj = json.loads(lines[0])
    assert list(obj) == list(AnnotationRecord.model_fields)  # stable key order = declaration order
    assert obj["record_id"] == rid and rid.startswith("hr_")
    assert obj["evidence_steps"] == [1, 2]
    assert "größer" in lines[0]  # readable, not \u-escaped
    assert AnnotationRecord.model_validate(obj).content_id() == rid
    # An exact repeat (a retried write) is a no-op; a new review of the same label is appended.
    again = AnnotationRecord.model_validate(obj)
    assert store.append(again) == rid
    assert len(path.read_text().splitlines()) == 1


def test_a_note_with_a_lone_surrogate_is_saved_with_a_replacement_character(tmp_path: Path) -> None:
    # a cut emoji in a pasted note ("\ud83d" alone) failed the save with Python's codec message
    store = AnnotationStore(tmp_path / "ann", "ds")
    store.append(rec(note="saw \ud83d then 🎬 ok"))
    (line,) = (tmp_path / "ann" / "ds" / "alice.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["note"] == "saw \ufffd then 🎬 ok"


def test_conflicting_label_is_refused_and_supersede_changes_it(tmp_path: Path) -> None:
    store = AnnotationStore(tmp_path, "ds")
    first = store.append(rec(decisive_step_index=1))
    with pytest.raises(InputFileError) as e:
        store.append(rec(category="video_perception", decisive_step_index=1))
    assert e.value.line == 1 and e.value.path.endswith("ds/alice.jsonl")
    assert f'"supersedes": "{first}"' in str(e.value)
    second = store.append(rec(category="video_perception", decisive_step_index=1, supersedes=first))
    assert [r.record_id for r in store.records()] == [first, second]  # the old line stays
    assert [r.category for r in store.records(effective=True)] == ["video_perception"]
    with pytest.raises(InputFileError, match="current label"):
        store.append(rec(category="unsure", supersedes=first))  # must supersede the latest
    with pytest.raises(InputFileError, match="not in this file"):
        store.append(rec(category="unsure", supersedes="hr_ffffffffffffffff"))


def test_bad_names_and_records_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="dataset name"):
        AnnotationStore(tmp_path, "../escape")
    store = AnnotationStore(tmp_path, "ds")
    with pytest.raises(ConfigError, match="annotator"):
        store.append(rec(annotator="../../etc/passwd"))
    with pytest.raises(ConfigError, match="reviews_label_id"):
        store.append(rec(review_action="accepted"))
    with pytest.raises(ConfigError, match="record_id"):
        store.append(
            rec(record_id="hr_0123456789abcdef", created_at=datetime(2026, 1, 1, tzinfo=timezone.utc))
        )


BAD = Path(__file__).resolve().parents[1] / "fixtures" / "review" / "bad"


def test_every_bad_line_is_named_with_file_and_line(tmp_path: Path, lab) -> None:
    root = tmp_path / "ann"
    shutil.copytree(BAD, root)
    path = root / "default" / "alice.jsonl"
    before = path.read_bytes()
    store = AnnotationStore(root, "default")
    problems = {p.line: p for p in store.validate(lab, TAX)}
    assert all(p.path == str(path) for p in problems.values())
    assert "not valid JSON" in problems[2].message
    assert "'bad_category' is not in taxonomy omni-failure" in problems[3].message
    assert "v0.9.0" in problems[4].message and "v1.0.0" in problems[4].message
    assert "unknown trajectory id 't_missing'" in problems[5].message
    assert "conflicting duplicate" in problems[6].message and "line 1" in problems[6].message
    assert "step index 99 does not exist" in problems[8].message
    assert "does not match the file name" in problems[9].message
    assert "the line was edited" in problems[10].message
    assert "half-written last line" in problems[11].message
    assert sorted(problems) == [2, 3, 4, 5, 6, 8, 9, 10, 11]
    assert all(p.severity == "error" for p in problems.values())
    # Strict load refuses, names the first problem's file and line, and leaves the lab unchanged.
    with pytest.raises(InputFileError) as e:
        store.load_into_lab(lab, TAX)
    assert str(e.value).startswith(f"{path}:2: not valid JSON")
    assert "8 more problem(s)" in str(e.value)
    assert lab.refresh().rows("human_labels") == 0
    # Lenient load keeps the two good labels (line 1 wins over its conflicting duplicate).
    report = store.load_into_lab(lab, TAX, strict=False)
    rows = sorted(lab.refresh().read("human_labels").to_pylist(), key=lambda r: r["source_line"])
    assert report.loaded == 2
    assert [(r["trajectory_id"], r["category"], r["source_line"]) for r in rows] == [
        ("t_one", "audio_perception", 1),
        ("t_two", "reasoning_calculation", 7),
    ]
    assert rows[0]["dataset"] == "default" and rows[0]["source_file"] == str(path)
    assert path.read_bytes() == before  # nothing read was changed
    # Appending after the half-written line starts a fresh line; the broken bytes stay.
    store.append(rec("t_four", "reasoning_calculation", decisive_step_index=1, note="after the cut"))
    after = path.read_bytes()
    assert after.startswith(before) and after[len(before) : len(before) + 1] == b"\n"
    assert json.loads(after.splitlines()[-1])["note"] == "after the cut"
    problems = {p.line: p.message for p in store.validate(lab, TAX)}
    assert "not valid JSON" in problems[11]  # now an ordinary broken line, still reported
    assert 12 not in problems


def test_load_is_idempotent_per_dataset(tmp_path: Path, lab) -> None:
    a = AnnotationStore(tmp_path, "one")
    b = AnnotationStore(tmp_path, "two")
    a.append(rec("t_one"))
    a.append(rec("t_two", "unsure", annotator="bob"))
    b.append(rec("t_three", "not_a_failure"))
    a.load_into_lab(lab, TAX)
    a.load_into_lab(lab, TAX)
    b.load_into_lab(lab, TAX)
    rows = lab.refresh().read("human_labels").to_pylist()
    assert sorted((r["dataset"], r["annotator"], r["trajectory_id"]) for r in rows) == [
        ("one", "alice", "t_one"),
        ("one", "bob", "t_two"),
        ("two", "alice", "t_three"),
    ]


def test_validation_with_the_real_taxonomy_catches_a_version_mismatch(tmp_path: Path) -> None:
    from trajlab.taxonomy import load_taxonomy

    tax = load_taxonomy("omni-failure")
    store = AnnotationStore(tmp_path, "ds")
    store.append(rec(taxonomy_version=tax.version))
    store.append(rec("t_two", taxonomy_version="0.0.1"))
    problems = store.validate()  # each record's taxonomy loaded by id
    assert [(p.line, "0.0.1" in p.message) for p in problems] == [(2, True)]


def test_a_rejected_line_is_corrected_by_a_record_that_supersedes_it(tmp_path: Path, lab) -> None:
    """Lines are never edited, so superseding is the only way to fix a bad one: the correction loads."""
    store = AnnotationStore(tmp_path / "ann", "ds")
    typo = store.append(rec("t_one", "audio_perceptoin"))  # not a category of the taxonomy
    store.append(rec("t_one", "audio_perception", decisive_step_index=1, supersedes=typo))
    old = store.append(rec("t_two", "video_perception", taxonomy_version="0.9.0"))  # another version
    store.append(rec("t_two", "video_perception", supersedes=old))
    path = store.path_for("alice")
    problems = store.validate(lab, TAX)
    assert [(p.line, p.severity) for p in problems] == [(1, "warning"), (3, "warning")]
    assert all(p.path == str(path) for p in problems)
    assert "'audio_perceptoin' is not in taxonomy" in problems[0].message
    assert "superseded by line 2" in problems[0].message and "superseded by line 4" in problems[1].message
    report = store.load_into_lab(lab, TAX)  # strict: nothing current is wrong
    rows = sorted(lab.refresh().read("human_labels").to_pylist(), key=lambda r: r["source_line"])
    assert report.loaded == 2
    assert [
        (r["trajectory_id"], r["category"], r["decisive_step_index"], r["source_line"]) for r in rows
    ] == [
        ("t_one", "audio_perception", 1, 2),
        ("t_two", "video_perception", None, 4),
    ]
    # A rejected line that nothing supersedes is still an error, and a bad correction does not hide it.
    store.append(rec("t_three", "bad_one"))
    assert [(p.line, p.severity) for p in store.validate(lab, TAX)][-1] == (5, "error")
    with pytest.raises(InputFileError, match=r"alice.jsonl:5: category 'bad_one'"):
        store.load_into_lab(lab, TAX)


def _writer(args: tuple[str, str, int]) -> None:
    root, annotator, n = args
    store = AnnotationStore(root, "ds")
    for i in range(n):
        store.append(
            rec(f"t_{annotator}_{i}", "audio_perception", annotator=annotator, note="x" * (i * 37 % 900))
        )


def _shared_writer(args: tuple[str, int, int]) -> None:
    root, worker, n = args
    store = AnnotationStore(root, "ds")
    for i in range(n):
        store.append(rec(f"t_{worker}_{i}", "video_perception", annotator="shared", note="y" * 5000))


def test_concurrent_writers_keep_every_line_intact(tmp_path: Path) -> None:
    root = str(tmp_path)
    ctx = mp.get_context("fork")
    with ctx.Pool(4) as pool:
        jobs = [pool.apply_async(_shared_writer, ((root, w, 40),)) for w in range(4)]
        jobs += [pool.apply_async(_writer, ((root, name, 30),)) for name in ("ann1", "ann2")]
        for j in jobs:
            j.get(timeout=120)
    store = AnnotationStore(root, "ds")
    assert store.validate() == []
    lines = (tmp_path / "ds" / "shared.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == 160
    assert all(json.loads(x)["annotator"] == "shared" for x in lines[:-1])
    assert len({r.trajectory_id for r in store.records(annotator="shared")}) == 160
    assert len(store.records(annotator="ann1")) == len(store.records(annotator="ann2")) == 30


def test_a_refused_first_record_leaves_no_empty_file(tmp_path: Path) -> None:
    """A first record of a new annotator refused after the file was opened (it supersedes a record
    not in the file) left an empty alice.jsonl, and a new dataset folder, behind."""
    store = AnnotationStore(tmp_path / "ann", "ds")
    with pytest.raises(InputFileError, match="which is not in this file"):
        store.append(rec(supersedes="hr_0123456789abcdef"))
    assert not (tmp_path / "ann").exists()
    store.append(rec(annotator="bob"))
    with pytest.raises(InputFileError, match="which is not in this file"):
        store.append(rec(supersedes="hr_0123456789abcdef"))
    assert store.annotators() == ["bob"]
    # an existing file is kept as it was, empty too
    (tmp_path / "ann" / "ds" / "carol.jsonl").touch()
    with pytest.raises(InputFileError, match="which is not in this file"):
        store.append(rec(annotator="carol", supersedes="hr_0123456789abcdef"))
    assert (tmp_path / "ann" / "ds" / "carol.jsonl").read_bytes() == b""


def test_a_writer_waiting_for_a_file_that_a_failed_first_append_removes_writes_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed first append removes the empty file (and the folders) it created, while another writer
    may hold an fd of that file and wait for its lock: that writer must make the folder and the file
    again, not append to the removed file (its label would be lost)."""
    import fcntl
    import threading

    import trajlab.review._files as files
    import trajlab.review._store as store_mod

    a_holds, b_waits = threading.Event(), threading.Event()
    real_flock, real_append = fcntl.flock, store_mod.append_line

    def flock(fd: int, op: int) -> None:
        name = threading.current_thread().name
        if name == "b" and op == fcntl.LOCK_EX:
            b_waits.set()  # b has opened the file a created
        real_flock(fd, op)
        if name == "a" and op == fcntl.LOCK_EX:
            a_holds.set()

    def append_line(fd: int, line: str, p: Path) -> None:
        if threading.current_thread().name == "a":
            assert b_waits.wait(10)
            raise InputFileError(str(p), "cannot write the annotation file: No space left on device")
        real_append(fd, line, p)

    monkeypatch.setattr(files.fcntl, "flock", flock)
    monkeypatch.setattr(store_mod, "append_line", append_line)
    errors: list[BaseException] = []

    def write(tid: str) -> None:
        try:
            AnnotationStore(tmp_path / "ann", "ds").append(rec(tid))
        except BaseException as e:
            errors.append(e)

    a = threading.Thread(target=write, args=("t_one",), name="a")
    b = threading.Thread(target=write, args=("t_two",), name="b")
    a.start()
    assert a_holds.wait(10)  # a holds the lock of the file it created
    b.start()
    a.join(10)
    b.join(10)
    assert [type(e) for e in errors] == [InputFileError], errors
    store = AnnotationStore(tmp_path / "ann", "ds")
    assert [r.trajectory_id for r in store.records()] == ["t_two"] and store.read().problems == []
