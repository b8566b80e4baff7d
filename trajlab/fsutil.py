"""Atomic file writes: readers see the old file or the new one, never a half-written mix; and a failed
write leaves no empty folder it made behind."""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from .textsafe import utf8_text

PathLike = str | os.PathLike[str]

# One list per enclosing `removing_new_dirs_on_error`: the folders `make_dirs` created in its block.
_MADE: contextvars.ContextVar[tuple[list[Path], ...]] = contextvars.ContextVar("_MADE", default=())


# Errors of the file system as a whole (a full disk), not of a folder or file the path names.
WHOLE_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def os_reason(e: OSError) -> str:
    """Why `e` happened, in the OS's words: "No space left on device" for a full disk whatever the
    writer's own strerror (pyarrow's is "Error writing bytes to file..."), else the strerror."""
    if e.errno in WHOLE_DISK_ERRNOS:
        return os.strerror(e.errno)
    return e.strerror or str(e)


def path_text(p: PathLike) -> str:
    """A path as text that can be stored and printed: bytes of the name that are not UTF-8 as `\\xNN`
    (see `textsafe.utf8_text`); any other path as it is."""
    return utf8_text(os.fspath(p))


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


def make_dirs(path: PathLike) -> Path:
    """`mkdir -p path`, telling every enclosing `removing_new_dirs_on_error` which folders it created
    (only those: a folder another process made at the same moment is not counted as ours)."""
    p = Path(path)
    missing = []
    for d in (p, *p.parents):
        if d.is_dir():
            break
        missing.append(d)
    for d in reversed(missing):
        try:
            os.mkdir(d)
        except FileExistsError:
            if not d.is_dir():
                raise
            continue
        for made in _MADE.get():
            made.append(d.absolute())
    return p


def _missing_dirs(path: Path) -> list[Path]:
    """`path` and its parents that do not exist yet, deepest first."""
    out = []
    for d in (path, *path.parents):
        if os.path.lexists(d):
            break
        out.append(d)
    return out


def _remove_empty_below(top: Path) -> None:
    """Remove the empty folders under `top` (not `top`), deepest first."""
    for dirpath, _dirs, _files in os.walk(top, topdown=False):
        if Path(dirpath) != top:
            with contextlib.suppress(OSError):
                os.rmdir(dirpath)


@contextlib.contextmanager
def removing_new_dirs_on_error(*paths: PathLike) -> Iterator[None]:
    """On an exception (Ctrl-C too), remove the folders made in the block that are still empty, deepest
    first: those `make_dirs` created, and the ones among `paths` (the folders a command writes into) and
    their parents that did not exist on entry, with the empty folders below those (anyone may have made
    them). A folder that existed on entry is never removed, nor one with anything in it.

    So a command that fails after creating its output folder (a full disk, an input found bad late)
    does not leave `out/`, or `a/b/out/`, behind empty."""
    new = [d for p in paths for d in _missing_dirs(Path(p).absolute())]
    made: list[Path] = []
    token = _MADE.set((*_MADE.get(), made))
    try:
        yield
    except BaseException:
        _MADE.reset(token)
        for top in new:
            if top.is_dir() and not top.is_symlink():
                _remove_empty_below(top)
        # deepest first: a child is removed before its parent is tried
        for d in sorted({*made, *new}, key=lambda d: len(d.parts), reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(d)
        raise
    _MADE.reset(token)


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


@contextlib.contextmanager
def naming_the_file(path: str | os.PathLike[str] | None, always: bool = False) -> Iterator[None]:
    """Re-raise an OSError that names no file (a failed write or fsync, pyarrow's "[Errno 28] Error
    writing bytes to file") as one naming `path`, with the same errno, so the message says which file.
    With `always`, one naming another file (a temporary one) is re-raised naming `path` too."""
    try:
        yield
    except OSError as e:
        if path is None or (e.filename is not None and not always) or e.errno is None:
            raise
        raise OSError(e.errno, e.strerror or str(e), str(path)) from e


def atomic_write_with(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Have `write(tmp)` write the file at a temporary path of its own (unique, beside `path`), then make
    it durable and put it in place. For writers that want a path (pyarrow, kaleido) rather than bytes:
    two writers of the same file never share a temporary file, and a failed write leaves none behind."""
    p = Path(path)
    make_dirs(p.parent)
    mode = _new_file_mode(p)
    with naming_the_file(p, always=True):  # not the temporary file's name, which the user never gave
        fd, name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    tmp = Path(name)
    try:
        os.close(fd)
        with naming_the_file(p):
            write(tmp)
            with open(tmp, "rb+") as f:
                with contextlib.suppress(OSError):
                    os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(p.parent)
    return p


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write_with(path, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))
