"""A label appended to an annotation file on a full disk: a clear error, and no half line left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from tmpfs import fill, tmpfs

from trajlab.errors import InputFileError
from trajlab.review import AnnotationStore


def _rec(tid: str) -> dict:
    return {
        "trajectory_id": tid,
        "annotator": "alice",
        "taxonomy_id": "omni-failure",
        "taxonomy_version": "1.0.0",
        "category": "audio_perception",
        "note": "n" * 3000,  # the second label cannot fit in what is left of the file's first page
    }


def test_an_append_on_a_full_disk_names_the_file_and_leaves_no_half_line(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "fs", 1) as fs:
        store = AnnotationStore(fs / "annotations", "study")
        store.append(_rec("t1"))
        path = store.path_for("alice")
        before = path.read_bytes()
        filler = fill(fs)
        with pytest.raises(InputFileError) as e:
            store.append(_rec("t2"))
        msg = str(e.value)
        assert str(path) in msg and "No space left on device" in msg and "nothing was written" in msg
        # the part of the line that fitted was cut off again: the file is as it was, no bad line
        assert path.read_bytes() == before
        assert store.read().problems == []
        filler.unlink()
        store.append(_rec("t2"))
        assert [r.trajectory_id for r in store.records()] == ["t1", "t2"] and store.read().problems == []


def test_a_first_label_on_a_full_disk_leaves_no_empty_annotator_file(tmp_path: Path) -> None:
    """An empty alice.jsonl was left, which read as an annotator with no labels (`annotations validate`
    counted "2 files, 1 records"); and the first label of a new store left annotations/study/ empty."""
    from cli_harness import run

    with tmpfs(tmp_path / "fs", 1) as fs:
        store = AnnotationStore(fs / "annotations", "study")
        store.append({**_rec("t1"), "annotator": "bob", "note": "short"})
        filler = fill(fs)
        path = store.path_for("alice")
        with pytest.raises(InputFileError) as e:
            store.append(_rec("t1"))
        msg = str(e.value)
        assert msg.startswith(f"{path}: ") and "No space left on device" in msg and "\n" not in msg, msg
        assert not path.exists() and store.annotators() == ["bob"]
        r = run("annotations", "validate", "--annotations", str(fs / "annotations"), "-d", "study")
        assert r.stdout.strip() == "1 files, 1 records: 0 errors, 0 warnings", r.text
        new = AnnotationStore(fs / "new-annotations", "study")
        with pytest.raises(InputFileError, match="No space left on device"):
            new.append(_rec("t1"))
        assert not (fs / "new-annotations").exists()
        filler.unlink()
        store.append(_rec("t1"))
        assert store.annotators() == ["alice", "bob"] and store.read().problems == []


def test_no_free_inode_for_the_file_leaves_no_empty_dataset_folder(tmp_path: Path) -> None:
    """With room for the dataset folder but not for a file in it, the reviewer check (`trajlab review`
    before the first label) and a first label each left annotations/<dataset>/ behind empty."""
    from tmpfs import fill_inodes

    with tmpfs(tmp_path / "fs", 1, inodes=64) as fs:
        fillers = fill_inodes(fs)
        fillers.pop().unlink()  # one inode: the dataset folder, not the file in it
        store = AnnotationStore(fs, "study")
        with pytest.raises(InputFileError, match="No space left on device"):
            store.check_writable("alice")
        assert not store.folder.exists()
        with pytest.raises(InputFileError) as e:
            store.append(_rec("t1"))
        assert str(store.path_for("alice")) in str(e.value) and "No space left on device" in str(e.value)
        assert not store.folder.exists()
