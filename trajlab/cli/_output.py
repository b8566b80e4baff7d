"""Writing command results to `--out` files: clear errors for unwritable targets, and never into the lab."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

from ..errors import ConfigError
from ..fsutil import WHOLE_DISK_ERRNOS, os_reason, removing_new_dirs_on_error
from ..schema import TABLES

T = TypeVar("T")

# Entries of a lab folder that the store owns; an output file there would change or hide lab data.
LAB_ENTRIES = frozenset({"lab.json", ".lock", ".gen", "_staging", "_cache", *TABLES})


def why_unwritable(out: Path, e: OSError) -> str:
    """Why `out` could not be written, naming the directory at fault (a full disk is nobody's folder)."""
    if e.errno in WHOLE_DISK_ERRNOS:
        return os_reason(e)
    if out.is_dir():
        return "it is a directory"
    for d in out.absolute().parents:
        if d.exists():
            if not d.is_dir():
                return f"{d} is not a directory"
            return f"cannot create files in {d} ({e.strerror or e})"
    return e.strerror or str(e)


def check_creatable(out: str | Path, option: str, folder: bool = False) -> None:
    """Refuse an output path below a file (the OS only says "Not a directory" or "File exists"), or a
    file where the output is a folder, naming the path at fault; creates nothing."""
    path = Path(out)
    if folder and (path.exists() or path.is_symlink()) and not path.is_dir():
        raise ConfigError(f"{option} {out}: is a file, not a folder")
    for d in path.absolute().parents:
        if d.exists() or d.is_symlink():
            if not d.is_dir():
                raise ConfigError(f"{option} {out}: {d} is a file, not a folder")
            return


def check_outside_lab(out: str | Path, lab: str | Path | None) -> None:
    """Refuse an output path that would land on the lab's own files (lab.json, table folders, ...)."""
    if lab is None:
        return
    root = Path(lab).expanduser().resolve()
    target = Path(out).expanduser().resolve()
    try:
        rel = target.relative_to(root)
    except ValueError:
        return
    if not rel.parts or rel.parts[0] in LAB_ENTRIES or rel.parts[0].startswith(".gen"):
        raise ConfigError(
            f"--out {out}: refusing to write into the lab's own files ({root}); choose a path outside "
            "lab.json, .gen/, _staging/, _cache/ and the table folders"
        )


def write_out(out: str | Path, write: Callable[[], T], lab: str | Path | None = None) -> T:
    """Run `write` (which writes `out`), turning file-system errors into a ConfigError naming `out`;
    the folders it made for `out` are removed again when the write fails."""
    check_outside_lab(out, lab)
    try:
        with removing_new_dirs_on_error(Path(out).parent):
            return write()
    except (OSError, pa.ArrowException) as e:
        reason = why_unwritable(Path(out), e) if isinstance(e, OSError) else str(e)
        raise ConfigError(f"cannot write {out}: {reason}") from None


@contextmanager
def writing_into(folder: str | Path) -> Iterator[None]:
    """An OSError while a command writes its files into `folder` (a full disk, a read-only file system)
    becomes a one-line ConfigError naming the file (or folder) that could not be written. On any error
    the folders made for `folder` (and inside it) that are still empty are removed again."""
    with removing_new_dirs_on_error(folder):
        try:
            yield
        except OSError as e:
            where = e.filename if isinstance(e.filename, str) else f"into {folder}"
            raise ConfigError(f"cannot write {where}: {os_reason(e)}") from None
