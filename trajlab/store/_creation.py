"""Creating a lab folder, and undoing a creation that failed (a full disk, say) so nothing is left."""

from __future__ import annotations

import os
import shutil
from contextlib import suppress
from pathlib import Path

from ..errors import LabError
from ..fsutil import WHOLE_DISK_ERRNOS, os_reason
from . import _publish
from ._locking import LOCK_NAME
from ._manifest import MANIFEST_NAME, read_manifest

STAGING = _publish.STAGING


def _unmake(root: Path, made_lock: bool, made_manifest: bool) -> bool:
    """Undo a lab creation that failed: remove the manifest of generation 0 this process wrote, the
    empty staging and generation folders, and the lock file if this process created it; True if so
    (the lab folder then holds what it held before the creation, nothing if it is new).

    Called holding the lock, and only when everything in the folder is this creation's (or a lock
    file that was there before, which stays): a lab that has a commit, or any file we did not make,
    is left alone. Safe for other processes: none can have written to the lab (we held the lock from
    before its manifest existed), a reader that opened it at generation 0 read no part, and a writer
    waiting on the lock file we remove takes the lock at the path instead (see `_lock`). lab.json
    goes first, so from then on the folder is not a lab to anyone."""
    try:
        if made_manifest:
            m = read_manifest(root)
            if m.generation != 0 or m.tables:
                return False
        elif (root / MANIFEST_NAME).exists():
            return False
        names = os.listdir(root)
    except (OSError, LabError):
        return False
    for name in names:
        if name == LOCK_NAME or (name == MANIFEST_NAME and made_manifest) or _publish.is_manifest_tmp(name):
            continue
        if name in (STAGING, _publish.GEN) and _only_folders(root / name):
            continue
        return False
    try:
        if made_manifest:
            (root / MANIFEST_NAME).unlink()
        for name in names:
            if _publish.is_manifest_tmp(name):
                (root / name).unlink(missing_ok=True)
            elif name in (STAGING, _publish.GEN):
                shutil.rmtree(root / name)
        if made_lock:
            (root / LOCK_NAME).unlink()
    except OSError:
        return False
    return True


def _only_folders(top: Path) -> bool:
    """`top` is a folder (not a symlink) holding nothing but folders."""
    if top.is_symlink() or not top.is_dir():
        return False
    for dirpath, dirs, files in os.walk(top):
        if files or any(os.path.islink(os.path.join(dirpath, d)) for d in dirs):
            return False
    return True


def _raise_not_created(root: Path, e: BaseException) -> None:
    """Say a creation that ran out of space (and was undone) did not create the lab; other errors go on
    as they are."""
    cause = e if isinstance(e, OSError) else e.__cause__ if isinstance(e, LabError) else None
    if not isinstance(cause, OSError) or cause.errno not in WHOLE_DISK_ERRNOS:
        return
    where = ""
    if cause.filename:
        f = Path(os.fsdecode(cause.filename))
        with suppress(ValueError):
            f = f.relative_to(root)
        where = f" (writing {f})"
    elif isinstance(e, LabError) and MANIFEST_NAME in str(e):
        where = f" (writing {MANIFEST_NAME})"
    raise LabError(
        f"{root}: {os_reason(cause)}{where}; the lab was not created (nothing of it is left); "
        "free some space and run the command again"
    ) from cause


def _creatable(path: str | os.PathLike[str]) -> Path:
    """The absolute root for a lab at `path`: a lab, a missing or empty folder, or one holding only what
    a creation that died before writing lab.json leaves (its lock file, a temporary manifest)."""
    root = Path(path).expanduser().absolute()
    if root.exists() and not root.is_dir():
        raise LabError(f"{root}: is a file, not a lab folder")
    if root.exists() and not (root / MANIFEST_NAME).exists() and not _unfinished_lab(root):
        raise LabError(f"{root}: folder exists and is not empty; refusing to turn it into a lab")
    return root


def _unfinished_lab(root: Path) -> bool:
    """A folder holding only what a creation that died or failed before writing lab.json leaves: its
    lock file and a temporary manifest (an empty folder too)."""
    return all(n == LOCK_NAME or _publish.is_manifest_tmp(n) for n in os.listdir(root))
