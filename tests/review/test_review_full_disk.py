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
        assert str(path) in msg and "no space left on the device" in msg and "nothing was written" in msg
        # the part of the line that fitted was cut off again: the file is as it was, no bad line
        assert path.read_bytes() == before
        assert store.read().problems == []
        filler.unlink()
        store.append(_rec("t2"))
        assert [r.trajectory_id for r in store.records()] == ["t1", "t2"] and store.read().problems == []
