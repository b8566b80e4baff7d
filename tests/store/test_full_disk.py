"""Writes to a lab on a full file system (a small tmpfs): a one-line LabError that names the lab and
says 'No space left on device', the previous generation intact, nothing left behind, and the same
write succeeding once there is space again."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from tmpfs import fill, fill_inodes, tmpfs

from trajlab.errors import LabError
from trajlab.store import Lab

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def qrows(n: int, prefix: str, size: int = 0) -> list[dict]:
    return [
        {
            "source_path": f"{prefix}{i}",
            "reason": "r",
            "error_type": "json",
            "raw": os.urandom(size) if size else None,  # incompressible: takes its size on disk
            "ingested_at": NOW,
        }
        for i in range(n)
    ]


def left_behind(root: Path) -> list[str]:
    """Files of a write in progress: staging, temporary manifests and symlinks."""
    staging = [str(p.relative_to(root)) for p in (root / "_staging").rglob("*")]
    return staging + [n for n in os.listdir(root) if n.startswith(".") and n not in (".lock", ".gen")]


def sources(lab: Lab) -> list[str]:
    return sorted(lab.read("quarantine", ["source_path"]).column("source_path").to_pylist())


@pytest.fixture()
def fs(tmp_path: Path):
    with tmpfs(tmp_path / "fs", 4) as mounted:
        yield mounted


def test_a_write_on_a_full_disk_is_a_lab_error_and_the_lab_stays_as_it_was(fs: Path) -> None:
    lab = Lab.open(fs / "lab", create=True)
    lab.append("quarantine", qrows(3, "old"))
    filler = fill(fs)
    with pytest.raises(LabError) as e, lab.write("add") as txn:
        txn.append("quarantine", qrows(20, "new", size=4096))
    msg = str(e.value)
    assert str(lab.root) in msg and "No space left on device" in msg and "\n" not in msg
    assert "generation 1" in msg
    fresh = Lab.open(lab.root)
    assert fresh.generation == 1 and sources(fresh) == ["old0", "old1", "old2"]
    assert left_behind(lab.root) == []
    filler.unlink()
    with lab.write("add") as txn:
        txn.append("quarantine", qrows(20, "new", size=4096))
    assert Lab.open(lab.root).rows("quarantine") == 23


def test_rewriting_a_part_for_a_delete_on_a_full_disk_is_not_called_a_damaged_part(fs: Path) -> None:
    """A delete rewrites the parts it hits; that write failing is a full disk, not an unreadable part."""
    lab = Lab.open(fs / "lab", create=True)
    lab.append("quarantine", qrows(200, "old", size=1024))
    filler = fill(fs)
    with pytest.raises(LabError) as e, lab.write("forget") as txn:
        txn.delete("quarantine", "source_path", ["old0"])
    msg = str(e.value)
    assert "No space left on device" in msg and "unreadable" not in msg and str(lab.root) in msg
    assert Lab.open(lab.root).rows("quarantine") == 200 and left_behind(lab.root) == []
    filler.unlink()
    with lab.write("forget") as txn:
        txn.delete("quarantine", "source_path", ["old0"])
    assert Lab.open(lab.root).rows("quarantine") == 199


def test_creating_a_lab_on_a_full_disk_fails_clearly_and_can_be_retried(fs: Path) -> None:
    filler = fill(fs)
    with pytest.raises(LabError) as e:
        Lab.open(fs / "lab", create=True)
    msg = str(e.value)
    assert str(fs / "lab") in msg and "No space left on device" in msg
    assert not (fs / "lab").exists()  # not a folder holding only .lock
    filler.unlink()
    lab = Lab.open(fs / "lab", create=True)
    assert lab.generation == 0


def test_no_inode_left_for_the_recovery_symlink_swap_is_a_lab_error_and_the_lab_stays_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that died between the manifest switch and the symlink swap leaves the swap to the next
    writer's recovery. With no inode left for the new symlink that recovery was a bare OSError
    traceback ('[Errno 28] No space left on device: .gen/quarantine/g000002 -> ...') from `trajlab
    ingest`, `judge` and `annotations load`."""
    import pyarrow.dataset as ds

    from trajlab.store import _publish

    with tmpfs(tmp_path / "ifs", 4, inodes=200) as fs:
        lab = Lab.open(fs / "lab", create=True)
        lab.append("quarantine", qrows(3, "old"))

        def died(*args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt  # the writer dies after lab.json is in place, before the swap

        with monkeypatch.context() as m:
            m.setattr(_publish, "switch", died)
            with pytest.raises(KeyboardInterrupt), lab.write("add") as txn:
                txn.append("quarantine", qrows(2, "new"))
        root = lab.root
        shutil.rmtree(root / "_staging")  # (recovery frees its inodes first; here there are none)
        assert os.readlink(root / "quarantine") == ".gen/quarantine/g000001"
        fillers = fill_inodes(fs)
        for write in (lambda: lab.write("add"), lambda: lab.exclusive()):
            with pytest.raises(LabError) as e, write():
                pass
            msg = str(e.value)
            assert str(root) in msg and "No space left on device" in msg and "\n" not in msg, msg
            assert "quarantine" in msg
        # both generations stay readable: through lab.json, and through the old symlink for glob readers
        assert sources(Lab.open(root)) == ["new0", "new1", "old0", "old1", "old2"]
        assert ds.dataset(root / "quarantine").count_rows() == 3
        for f in fillers[-20:]:
            f.unlink()
        with lab.write("add") as txn:
            txn.append("quarantine", qrows(1, "more"))
        assert os.readlink(root / "quarantine") == ".gen/quarantine/g000003"
        assert ds.dataset(root / "quarantine").count_rows() == 6
