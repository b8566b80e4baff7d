"""A small tmpfs for full-disk tests: mounted for the test, filled on demand, always unmounted.

Mounting needs root (or CAP_SYS_ADMIN); where it is not permitted the test is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(where: Path, size_mb: int, inodes: int | None = None) -> Iterator[Path]:
    """Mount a tmpfs of `size_mb` MB (and at most `inodes` files, folders and symlinks) at `where`
    (created); skips the test when mounting fails."""
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command: cannot make a small file system")
    opts = f"size={size_mb}m" + (f",nr_inodes={inodes}" if inodes else "")
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[0]
        pytest.skip(f"cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): {why}")
    try:
        yield where
    finally:
        r = subprocess.run(["umount", str(where)], capture_output=True, text=True)
        if r.returncode != 0:  # still busy (a file left open): detach it, it goes once closed
            subprocess.run(["umount", "-l", str(where)], capture_output=True)


def read_only(fs: Path) -> None:
    """Remount the tmpfs at `fs` read-only (root ignores permission bits, so chmod 555 would not do)."""
    r = subprocess.run(["mount", "-o", "remount,ro", str(fs)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot remount {fs} read-only: {r.stderr.strip() or r.returncode}")


def fill_inodes(fs: Path) -> list[Path]:
    """Create empty files on `fs` until it has no free inode (a tmpfs mounted with `inodes`)."""
    made: list[Path] = []
    while True:
        p = fs / f"inode-filler-{len(made)}"
        try:
            p.touch(exist_ok=False)
        except OSError:
            return made
        made.append(p)


def free_bytes(fs: Path) -> int:
    st = os.statvfs(fs)
    return st.f_bavail * st.f_frsize


def fill(fs: Path, leave: int = 0, name: str = "filler") -> Path:
    """Write a file on `fs` until only `leave` bytes are free (0: the file system is full)."""
    path = fs / name
    with open(path, "ab", buffering=0) as f:
        while (n := free_bytes(fs) - leave) > 0:
            try:
                f.write(b"\0" * min(n, 1 << 20))
            except OSError:
                break
    return path
