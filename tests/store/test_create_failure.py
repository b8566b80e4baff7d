"""A lab creation that fails (a full disk on the first manifest or Parquet write, or anything else
before the first commit) leaves no lab folder if there was none, and an existing folder as it was;
a writer that waited on the lock file such a failure removed takes the lock of the lab at the path,
not of the removed file."""

from __future__ import annotations

import errno
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

import trajlab.store._lab as lab_mod
from trajlab.errors import LabError
from trajlab.store import Lab
from trajlab.store._parts import PartWriter

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def qrows(n: int, prefix: str) -> list[dict]:
    return [
        {"source_path": f"{prefix}{i}", "reason": "r", "error_type": "json", "ingested_at": NOW}
        for i in range(n)
    ]


def full_disk(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_lab_whose_manifest_does_not_fit_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lab_mod, "write_manifest", full_disk)
    root = tmp_path / "a" / "b" / "lab"
    with pytest.raises(LabError) as e:
        Lab.open(root, create=True)
    msg = str(e.value)
    assert msg.startswith(f"{root}: ") and "No space left on device" in msg and "\n" not in msg, msg
    assert "Error writing bytes" not in msg and "lab.json" in msg
    assert listing(tmp_path) == []  # not the lab folder (with its .lock), nor a/ or a/b/


@pytest.mark.parametrize("before", [[], [".lock"]], ids=["empty", "lock-only"])
def test_a_failed_creation_in_an_existing_folder_leaves_it_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: list[str]
) -> None:
    root = tmp_path / "lab"
    root.mkdir()
    for name in before:
        (root / name).write_bytes(b"")
    inodes = {n: (root / n).stat().st_ino for n in before}
    monkeypatch.setattr(lab_mod, "write_manifest", full_disk)
    with pytest.raises(LabError, match="No space left on device"):
        Lab.open(root, create=True)
    assert root.is_dir() and sorted(os.listdir(root)) == before
    assert {n: (root / n).stat().st_ino for n in before} == inodes
    monkeypatch.undo()
    assert Lab.open(root, create=True).generation == 0


def test_a_first_commit_that_does_not_fit_leaves_no_lab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Lab.creating` (what `trajlab ingest` opens its lab with): the manifest of generation 0 fits,
    the first part does not; the new lab is removed again and the error says it was not created."""
    monkeypatch.setattr(PartWriter, "_write_group", full_disk)
    root = tmp_path / "new" / "lab"
    with pytest.raises(LabError) as e, Lab.creating(root) as lab:
        assert lab.generation == 0 and (root / "lab.json").exists()
        with lab.write("add") as txn:
            txn.append("quarantine", qrows(3, "q"))
    msg = str(e.value)
    assert msg.startswith(f"{root}: No space left on device"), msg
    assert "not created" in msg and "generation 0" not in msg and "\n" not in msg, msg
    assert listing(tmp_path) == []


def test_a_new_lab_that_holds_a_commit_is_kept_when_a_later_write_fails(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    with pytest.raises(RuntimeError), Lab.creating(root) as lab:
        lab.append("quarantine", qrows(2, "q"))
        raise RuntimeError("later")
    assert Lab.open(root).rows("quarantine") == 2


def test_an_existing_lab_is_left_as_it_was_when_the_block_fails(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    Lab.open(root, create=True)  # generation 0, made by an earlier command
    before = listing(root)
    with pytest.raises(RuntimeError), Lab.creating(root):
        raise RuntimeError("boom")
    assert listing(root) == before and Lab.open(root).generation == 0


def test_a_writer_waiting_on_a_removed_lock_file_locks_the_lab_at_the_path(tmp_path: Path) -> None:
    """The creator's failure removes the lab, lock file included, while it holds the lock; a second
    creator already waiting on that file gets its lock only once it is removed. It must see that the
    file is gone and start again with the folder and lock file at the path (else it holds a lock no
    later writer can see, and writes a lab with no lock file)."""
    root = tmp_path / "lab"
    entered, other = threading.Event(), {}

    def second() -> None:
        entered.wait()
        try:
            other["lab"] = Lab.create(root)
        except BaseException as e:  # reported below
            other["error"] = e

    t = threading.Thread(target=second)
    t.start()
    with pytest.raises(RuntimeError), Lab.creating(root):
        entered.set()
        time.sleep(0.3)  # the second creator opens the lock file and waits for it
        raise RuntimeError("first creation fails")
    t.join(10)
    assert "error" not in other, other.get("error")
    assert other["lab"].generation == 0
    assert sorted(os.listdir(root)) == [".lock", "lab.json"]
    with Lab.open(root).write("add") as txn:  # and the lock at the path is the one writers use
        txn.append("quarantine", qrows(1, "q"))
    assert Lab.open(root).rows("quarantine") == 1
