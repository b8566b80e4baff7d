"""Reading and appending annotation JSONL files: line-exact problems, locked appends, fsync.

Appends open the file with O_APPEND and hold an exclusive `flock` while they check for conflicts and
write one complete line, so several reviewers (processes) can write the same dataset at once and
every line stays intact. A file whose last line was cut off (a crash mid-write) keeps that line: the
next append starts on a fresh line, and readers report the broken line with its number.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InputFileError
from ..fsutil import fsync_dir, make_dirs, removing_new_dirs_on_error

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class Problem:
    """Something wrong with one line of an annotation file."""

    path: str
    line: int | None
    message: str
    severity: str = "error"  # or "warning": reported, the record is still used

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.severity}: {self.message}"

    def to_error(self) -> InputFileError:
        return InputFileError(self.path, self.message, self.line)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "severity": self.severity, "message": self.message}


@dataclass(frozen=True)
class Located(Generic[R]):
    """A record with the file and 1-based line it was read from."""

    record: R
    path: Path
    line: int


def _validation_message(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "record"
        msg = err.get("msg", "invalid")
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def parse_line(
    raw: bytes, path: Path, line: int, model: type[R], last_unterminated: bool = False
) -> tuple[R | None, Problem | None]:
    """One line -> a record with its id checked, or a problem naming what is wrong."""
    p = str(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, Problem(p, line, f"not UTF-8 (byte {e.start})")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        if last_unterminated:
            return None, Problem(
                p,
                line,
                "half-written last line (no newline at the end; an interrupted write?): "
                f"{e.msg}. Earlier lines are intact; this line is ignored",
            )
        return None, Problem(p, line, f"not valid JSON: {e.msg} (column {e.colno})")
    if not isinstance(obj, dict):
        return None, Problem(p, line, f"expected a JSON object, got {type(obj).__name__}")
    try:
        rec = model.model_validate(obj)
    except ValidationError as e:
        return None, Problem(p, line, _validation_message(e))
    expected = rec.content_id()  # type: ignore[attr-defined]
    given = getattr(rec, "record_id", None)
    if given is None:
        rec = rec.model_copy(update={"record_id": expected})
    elif given != expected:
        return None, Problem(
            p,
            line,
            f"record_id {given} does not match the record's content ({expected}): the line was edited. "
            "Files are append-only: restore the line and append a new record with "
            f'"supersedes": "{given}" instead',
        )
    return rec, None


def iter_lines(data: bytes, start: int = 0) -> Iterator[tuple[int, bytes, bool]]:
    """(end offset, line bytes without newline, terminated) for each line from `start`."""
    pos = start
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:
            yield n, data[pos:], False
            return
        yield nl + 1, data[pos:nl], True
        pos = nl + 1


def read_file(
    path: Path, model: type[R], start: int = 0, first_line: int = 1, complete_only: bool = False
) -> tuple[list[Located[R]], list[Problem], int, int]:
    """Parse a JSONL file from byte `start`.

    Returns (records, problems, offset after the last complete line, next line number). With
    `complete_only` an unterminated last line is left for later (the incremental reader of `append`).
    """
    try:
        with open(path, "rb") as f:
            if start:
                f.seek(start)
            data = f.read()
    except FileNotFoundError:
        return [], [], start, first_line
    except OSError as e:
        raise os_error(path, "read", e) from None
    records: list[Located[R]] = []
    problems: list[Problem] = []
    line = first_line
    end = start
    for stop, raw, terminated in iter_lines(data):
        if not terminated and complete_only:
            break
        body = raw.rstrip(b"\r")
        if body.strip():
            rec, prob = parse_line(body.strip(), path, line, model, last_unterminated=not terminated)
            if rec is not None:
                records.append(Located(rec, path, line))
            if prob is not None:
                problems.append(prob)
        if terminated:
            end = start + stop
            line += 1
    return records, problems, end, line


@contextmanager
def locked(path: Path, create: bool = True) -> Iterator[int]:
    """An fd of `path` (O_APPEND) held under an exclusive flock for the duration.

    A file (and folders) this call created are removed again when the block fails with nothing written
    (a full disk, a refused record): an empty `<annotator>.jsonl` would read as an annotator with no
    labels. Removal happens under the lock, and a process that was waiting for it sees that its fd is
    no longer the file at `path` and opens the path again, so no label goes to a removed file."""
    with removing_new_dirs_on_error(path.parent):
        try:
            make_dirs(path.parent)
            fd, created = _open_locked(path, create)
        except OSError as e:
            raise os_error(path, "write", e) from None
        try:
            if created:
                fsync_dir(path.parent)
            yield fd
        except BaseException:
            if created:
                with contextlib.suppress(OSError):
                    if os.fstat(fd).st_size == 0:
                        os.unlink(path)
                        fsync_dir(path.parent)
            raise
        finally:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


def _open_locked(path: Path, create: bool) -> tuple[int, bool]:
    """(fd of `path` under an exclusive flock, whether this call created the file)."""
    flags = os.O_RDWR | os.O_APPEND
    while True:
        created = False
        if not create:
            fd = os.open(path, flags)
        else:
            try:
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
                created = True
            except FileNotFoundError:  # its folder was removed since (a failed first append's)
                make_dirs(path.parent)
                continue
            except FileExistsError:
                try:
                    fd = os.open(path, flags)
                except FileNotFoundError:
                    if not os.path.islink(path):
                        continue  # removed since (a failed first append): create it again
                    fd = os.open(path, flags | os.O_CREAT, 0o644)  # a dangling symlink: its target
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            return fd, created
        os.close(fd)  # removed (or replaced) while we waited for the lock: open the path again
        if not create and now is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))


def os_error(path: Path, action: str, e: OSError, kind: str = "the annotation file") -> InputFileError:
    """An OSError met reading or writing annotations, as an error naming the path and the cause."""
    why = {
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EROFS: "read-only file system",
        errno.EISDIR: "it is a folder, not a file",
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.EEXIST: "a file is where a folder should be",
        errno.ENOSPC: os.strerror(errno.ENOSPC),  # "No space left on device", as the other commands say
    }.get(e.errno or 0, e.strerror or str(e))
    target = e.filename if isinstance(e.filename, str) and e.filename != str(path) else None
    where = f" ({target})" if target else ""
    tail = "; nothing was written" if action == "write" else ""
    return InputFileError(str(path), f"cannot {action} {kind}: {why}{where}{tail}")


def append_line(fd: int, line: str, path: Path) -> None:
    """Write one complete line at the end of `path` (open as `fd`; a fresh line after a cut-off one) and
    fsync. A write that fails part-way (a full disk) is cut back off, so that no half line is left for
    the next reader to report, and raised as an InputFileError naming the file."""
    data = line.encode("utf-8")
    if not data.endswith(b"\n"):
        data += b"\n"
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        data = b"\n" + data
    view = memoryview(data)
    try:
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise os_error(path, "write", e) from None
