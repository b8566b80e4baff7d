"""The lab's writer lock: a flock of `LAB/.lock`, re-entrant per thread, released in forked children."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from ..errors import LabError, LabLockedError
from ..fsutil import make_dirs, os_reason

LOCK_NAME = ".lock"
LOCK_WAIT_ENV = "TRAJLAB_LOCK_WAIT"


def lock_wait_s() -> float:
    """How long a writer waits for the lab lock: $TRAJLAB_LOCK_WAIT seconds, else 30."""
    raw = os.environ.get(LOCK_WAIT_ENV, "").strip()
    if not raw:
        return 30.0
    try:
        value = float(raw)
    except ValueError:
        raise LabError(f"{LOCK_WAIT_ENV}={raw!r} is not a number of seconds") from None
    if not value >= 0:
        raise LabError(f"{LOCK_WAIT_ENV}={raw!r} must be >= 0 seconds")
    return value


_held = threading.local()  # roots whose lock this thread holds (`Lab.exclusive` nests `write` in it)
_held_fds: set[int] = set()  # lock fds of this process, closed in forked children (see below)


def _close_held_locks_in_child() -> None:
    """A forked child (an ingest worker) must not keep the parent's lock alive: flock belongs to the
    open file, so a worker orphaned by a killed parent would otherwise lock the lab out until it dies.
    Closing the child's copy leaves the parent's lock in place."""
    for fd in list(_held_fds):
        with suppress(OSError):
            os.close(fd)
    _held_fds.clear()
    _held.__dict__.clear()


os.register_at_fork(after_in_child=_close_held_locks_in_child)


@contextmanager
def _lock(root: Path, wait_s: float | None = None, make_folder: bool = False) -> Iterator[bool]:
    """Hold the writer lock of the lab at `root` (flock of `root/.lock`); yield whether this call
    created the lock file (False when this thread already holds it). With `make_folder`, the lab
    folder is made (`make_dirs`) if missing, also when a failed creation removed it while we waited.

    A failed creation removes the lock file it made (`_unmake`) while it holds the lock, so a writer
    waiting on that file may be granted a lock on a file that is no longer at the path, which a later
    writer, opening the path afresh, would not see. So a lock is taken as held only once the file it
    is on is still the one at the path (same device and inode); otherwise the path is opened again.
    Nobody else removes the file, and only while holding its lock, so once that check passes the file
    stays at the path for as long as we hold it."""
    roots: set[Path] = _held.__dict__.setdefault("roots", set())
    if root in roots:  # this thread already holds it (inside `Lab.exclusive`)
        yield False
        return
    wait_s = lock_wait_s() if wait_s is None else wait_s
    deadline = time.monotonic() + wait_s
    while True:
        if make_folder:
            try:
                make_dirs(root)
            except OSError as e:
                raise LabError(f"{root}: cannot create the lab folder ({os_reason(e)})") from None
        fd, made = _open_lock_file(root)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LabLockedError(
                            f"{root}: another trajlab process is writing to this lab (waited {wait_s:g} s "
                            f"for {LOCK_NAME}; set {LOCK_WAIT_ENV} to wait longer)"
                        ) from None
                    time.sleep(0.05)
            if _is_at(fd, root / LOCK_NAME):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed by a failed creation while we waited: take the one at the path now
    try:
        roots.add(root)
        _held_fds.add(fd)
        try:
            yield made
        finally:
            roots.discard(root)
            _held_fds.discard(fd)
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _open_lock_file(root: Path) -> tuple[int, bool]:
    """An fd of `root/.lock` (created if missing) and whether this call created it."""
    path = root / LOCK_NAME
    try:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644), True
        except FileExistsError:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644), False
    except OSError as e:
        raise LabError(f"{path}: cannot take the writer lock ({os_reason(e)})") from None


def _is_at(fd: int, path: Path) -> bool:
    """Whether the file open as `fd` is the one at `path` now."""
    try:
        at = os.stat(path)
    except OSError:
        return False
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (at.st_dev, at.st_ino)
