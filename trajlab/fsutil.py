"""Atomic file writes: readers see the old file or the new one, never a half-written mix."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read_umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask sets while it reads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def _new_file_mode(p: Path) -> int:
    """The mode a plain `open(p, "w")` would give: the replaced file's, else 0666 minus the umask.
    (mkstemp creates its temporary file 0600, which would leave every output unreadable to others.)"""
    try:
        return p.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_UMASK


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    mode = _new_file_mode(p)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None and e.errno is not None:
            # a failed write or fsync names no file ("[Errno 28] No space left on device"): name it
            raise OSError(e.errno, e.strerror or str(e), str(p)) from e
        raise
    fsync_dir(p.parent)
    return p


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))
