"""Atomic writes: readers see the old or the new file, and the file gets the mode a plain write would."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from trajlab.fsutil import atomic_write_bytes, atomic_write_text


def _mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.mark.parametrize(("umask", "want"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_file_gets_the_umask_mode_not_mkstemp_0600(tmp_path, monkeypatch, umask, want):
    import trajlab.fsutil as fsutil

    monkeypatch.setattr(fsutil, "_UMASK", umask)
    p = atomic_write_text(tmp_path / "out.csv", "a,b\n")
    assert p.read_text() == "a,b\n"
    assert _mode(p) == want


def test_replaced_file_keeps_its_mode(tmp_path):
    p = tmp_path / "table.md"
    p.write_text("old")
    os.chmod(p, 0o640)
    atomic_write_bytes(p, b"new")
    assert p.read_bytes() == b"new"
    assert _mode(p) == 0o640


def test_umask_read_from_proc_matches_the_process_umask():
    import trajlab.fsutil as fsutil

    current = os.umask(0o022)
    os.umask(current)
    assert fsutil._read_umask() == current


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "keep.txt"
    p.write_text("old")

    with pytest.raises(TypeError):
        atomic_write_bytes(p, 12345)  # type: ignore[arg-type]
    assert p.read_text() == "old"
    assert [x.name for x in tmp_path.iterdir()] == ["keep.txt"]


def test_a_writer_failing_part_way_leaves_the_old_file_which_readers_see_until_the_end(
    tmp_path: Path,
) -> None:
    """The writer gets a path of its own: while it writes, and after it fails half-way, the file
    still holds the old bytes (a write in place would have truncated it)."""
    from trajlab.fsutil import atomic_write_with

    p = tmp_path / "keep.txt"
    p.write_text("old")
    seen: list[str] = []

    def write(tmp: Path, fail: bool) -> None:
        tmp.write_bytes(b"half of the n")
        seen.append(p.read_text())
        if fail:
            raise OSError(28, "No space left on device")
        tmp.write_bytes(b"new")

    with pytest.raises(OSError, match="No space"):
        atomic_write_with(p, lambda tmp: write(tmp, fail=True))
    assert p.read_text() == "old"
    assert [x.name for x in tmp_path.iterdir()] == ["keep.txt"]
    atomic_write_with(p, lambda tmp: write(tmp, fail=False))
    assert seen == ["old", "old"] and p.read_text() == "new"
    assert [x.name for x in tmp_path.iterdir()] == ["keep.txt"]


def test_the_new_bytes_are_fsynced_before_the_rename_and_the_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Durable across a power cut: the data reaches the disk before the rename makes it the file
    (else the file could come back empty), and the folder's entry after it (else the old file)."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        data = Path(target).read_bytes() if Path(target).is_file() else None
        events.append(("fsync", "dir" if data is None else data.decode()))
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append(("replace", Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    (tmp_path / "out").mkdir()
    atomic_write_text(tmp_path / "out" / "lab.json", "{}")
    assert events == [("fsync", "{}"), ("replace", "lab.json"), ("fsync", "dir")]


def test_a_failed_block_removes_the_folders_it_made_and_keeps_the_rest(tmp_path):
    """The folders a failed write made (the output folder, its new parents, new folders below an
    existing one) are removed when still empty; folders that were there, or hold a file, stay."""
    from trajlab.fsutil import make_dirs, removing_new_dirs_on_error

    there = tmp_path / "there"
    (there / "old").mkdir(parents=True)
    out = tmp_path / "a" / "b" / "out"
    with pytest.raises(OSError), removing_new_dirs_on_error(out):
        make_dirs(out / "figs" / "deep")
        make_dirs(there / "new" / "deeper")  # inside a folder that existed: only make_dirs knows
        (out / "untracked").mkdir()  # below a new folder: anyone's
        make_dirs(there / "kept")
        (there / "kept" / "f.txt").write_text("x")
        raise OSError(28, "No space left on device")
    assert not (tmp_path / "a").exists()
    assert sorted(p.name for p in there.iterdir()) == ["kept", "old"]
    assert (there / "kept" / "f.txt").read_text() == "x"


def test_a_block_that_succeeds_or_is_interrupted(tmp_path):
    from trajlab.fsutil import make_dirs, removing_new_dirs_on_error

    with removing_new_dirs_on_error(tmp_path / "ok"):
        make_dirs(tmp_path / "ok" / "empty")
    assert (tmp_path / "ok" / "empty").is_dir()  # success: what was made stays, empty or not
    with pytest.raises(KeyboardInterrupt), removing_new_dirs_on_error(tmp_path / "x"):
        make_dirs(tmp_path / "x" / "y")
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok"]


def test_nested_blocks_the_outer_one_removes_what_the_inner_one_made(tmp_path):
    from trajlab.fsutil import make_dirs, removing_new_dirs_on_error

    (tmp_path / "out").mkdir()
    with pytest.raises(ValueError), removing_new_dirs_on_error(tmp_path / "out"):
        with removing_new_dirs_on_error():
            make_dirs(tmp_path / "out" / "inner")
        assert (tmp_path / "out" / "inner").is_dir()
        raise ValueError("bad input found late")
    assert list((tmp_path / "out").iterdir()) == []  # out existed: kept, empty


def test_make_dirs_counts_only_the_folders_it_created(tmp_path, monkeypatch):
    """A folder that appears between the check and the mkdir (another process) is not ours."""
    import trajlab.fsutil as fsutil

    real_mkdir = os.mkdir

    def racing_mkdir(path, *a, **k):
        if os.path.basename(path) == "raced":
            real_mkdir(path)  # made by someone else just before us
        return real_mkdir(path, *a, **k)

    monkeypatch.setattr(fsutil.os, "mkdir", racing_mkdir)
    (tmp_path / "out").mkdir()
    with pytest.raises(OSError), fsutil.removing_new_dirs_on_error(tmp_path / "out"):
        fsutil.make_dirs(tmp_path / "out" / "raced" / "ours")
        raise OSError(5, "Input/output error")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["raced"]
    (tmp_path / "afile").write_text("")
    with pytest.raises(FileExistsError):  # as Path.mkdir(parents=True, exist_ok=True) says
        fsutil.make_dirs(tmp_path / "afile" / "x")
