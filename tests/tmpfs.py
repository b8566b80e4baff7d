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
def tmpfs(where: Path, size_mb: int) -> Iterator[Path]:
    """Mount a tmpfs of `size_mb` MB at `where` (created); skips the test when mounting fails."""
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command: cannot make a small file system")
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(where)],
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
