"""Atomic writes: readers see the old or the new file, and the file gets the mode a plain write would."""

from __future__ import annotations

import os
import stat

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
