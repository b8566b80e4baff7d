"""Reading records from files, counting them, and quarantining the ones that cannot be used.

Every record read is counted, so `records_seen == records_ingested + records_quarantined` holds per
unit. A record that cannot be read (not JSON, invalid UTF-8, binary, cut off at the end of the file)
is quarantined with its file, 1-based line, byte offset and raw bytes; reading goes on with the next one.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..fsutil import path_text

if TYPE_CHECKING:
    from ._base import SourceUnit

HEAD_BYTES = 65_536
KEEP_RAW_RECORD = 256 << 20  # raw bytes of one quarantined record are kept up to this size
KEEP_RAW_UNIT = 512 << 20  # and up to this much per source unit (beyond: only the size is recorded)
FIRST_LINE_MAX = 64 << 20  # sniffing reads at most this much to see a whole first line
_SURROGATE = re.compile("[" + chr(0xD800) + "-" + chr(0xDFFF) + "]")  # mypyc takes no surrogate literals


@dataclass
class QuarantinedRecord:
    source_path: str
    line: int | None
    byte_offset: int | None
    reason: str
    error_type: str
    raw: bytes | None
    raw_size: int


class ParseContext:
    """Counts records and collects quarantined ones for one source unit."""

    def __init__(self, unit: SourceUnit, runner: str | None = None, keep_raw_max: int = KEEP_RAW_RECORD):
        self.unit = unit
        self.runner = runner
        self.keep_raw_max = keep_raw_max
        self.keep_raw_budget = KEEP_RAW_UNIT
        self.records_seen = 0
        self.records_ingested = 0
        self.quarantined: list[QuarantinedRecord] = []

    @property
    def records_quarantined(self) -> int:
        return len(self.quarantined)

    def seen_ok(self, n: int = 1) -> None:
        self.records_seen += n
        self.records_ingested += n

    def quarantine(
        self,
        path: Path | str,
        reason: str,
        error_type: str,
        raw: bytes | None = None,
        line: int | None = None,
        offset: int | None = None,
        counted: bool = False,
    ) -> None:
        """Quarantine a record. `counted=True` when it was already counted as ingested (e.g. by a reader)."""
        if counted:
            self.records_ingested -= 1
        else:
            self.records_seen += 1
        size = len(raw) if raw is not None else 0
        keep = None
        if raw is not None and size <= self.keep_raw_max and size <= self.keep_raw_budget:
            keep = raw
            self.keep_raw_budget -= size
        self.quarantined.append(
            QuarantinedRecord(path_text(path), line, offset, reason, error_type, keep, size)
        )

    def reject(self, rec: Record, reason: str, error_type: str = "schema") -> None:
        """Quarantine a record a reader already yielded (JSON that is not what the adapter expects)."""
        self.quarantine(rec.path, reason, error_type, raw_of(rec), rec.line, rec.offset, counted=True)

    def reject_line(self, path: Path, line: int, offset: int, raw: bytes, reason: str) -> None:
        """`reject` for a line `read_jsonl_lines` yielded."""
        self.quarantine(path, reason, "schema", raw, line, offset, counted=True)


@dataclass(slots=True)
class Record:
    """One JSON record read from a file, with where it came from."""

    path: Path
    line: int | None  # 1-based line for JSONL, element index for JSON lists
    offset: int | None  # byte offset of the record in the file, when known
    raw: bytes | None
    obj: Any


def describe_json_error(raw: bytes, err: Exception, at_end: bool) -> tuple[str, str, int]:
    """(error_type, reason, byte position inside `raw`) for bytes that did not parse as JSON."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as ue:
        if at_end and ue.reason == "unexpected end of data":  # cut inside a multi-byte character
            return (
                "truncated",
                f"truncated JSON, cut off at byte {len(raw)} inside a UTF-8 character",
                len(raw),
            )
        return "utf8", f"invalid UTF-8 at byte {ue.start}", ue.start
    pos = getattr(err, "pos", 0) or 0
    if raw[:1] == b"\x00" or sum(b < 9 for b in raw[:256]) > 8:
        return "binary", "binary data, not JSON", 0
    msg = str(err).splitlines()[0]
    if at_end:
        return "truncated", f"truncated JSON, cut off at byte {len(raw)} ({msg})", len(raw)
    return "json", f"not valid JSON at byte {pos} ({msg})", pos


def _scrub(obj: Any) -> Any:
    """Replace each lone UTF-16 surrogate (from `\\ud83d`-style escapes of cut emoji) with one U+FFFD."""
    if isinstance(obj, str):
        return _SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, list):
        return [_scrub(x) for x in obj]
    if isinstance(obj, dict):
        return {_scrub(k): _scrub(v) for k, v in obj.items()}
    return obj


def loads_lenient(raw: bytes) -> Any:
    """orjson, falling back to the stdlib for valid JSON orjson refuses (lone surrogates, NaN)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise
        try:
            return _scrub(json.loads(text))
        except (json.JSONDecodeError, RecursionError):
            pass
        raise


def read_jsonl(path: Path, ctx: ParseContext) -> Iterator[Record]:
    """Yield every JSON line of a JSONL file; quarantine lines that are not JSON (with line and offset).

    Streams the file line by line (a single line may be large; it is held once). Blank lines are not
    records. A last line without a newline that does not parse is reported as truncated.
    """
    for obj, lineno, offset, raw in read_jsonl_lines(path, ctx):
        yield Record(path, lineno, offset, raw, obj)


def read_jsonl_lines(path: Path, ctx: ParseContext) -> Iterator[tuple[Any, int, int, bytes]]:
    """`read_jsonl` yielding `(obj, line, offset, raw)` tuples instead of Records (cheaper per line, for
    the adapters of big files); reject a line with `ctx.reject_line(path, line, offset, raw, reason)`."""
    loads = orjson.loads
    offset = 0
    lineno = 0
    with open(path, "rb", buffering=1 << 20) as f:
        for raw in f:
            lineno += 1
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError as e:
                off = offset
                offset += len(raw)
                ok, obj = _recover(path, ctx, raw, e, lineno, off)
                if ok:
                    yield obj, lineno, off, raw
                continue
            ctx.records_seen += 1
            ctx.records_ingested += 1
            yield obj, lineno, offset, raw
            offset += len(raw)


def _recover(
    path: Path, ctx: ParseContext, raw: bytes, e: orjson.JSONDecodeError, lineno: int, off: int
) -> tuple[bool, Any]:
    """A line orjson refused: (True, value) when it is valid JSON after all (counted as ingested),
    else (False, None), a blank line skipped or the line quarantined."""
    if not raw.strip():
        return False, None
    try:
        obj = loads_lenient(raw)
    except (orjson.JSONDecodeError, UnicodeDecodeError):
        etype, why, pos = describe_json_error(raw, e, at_end=not raw.endswith(b"\n"))
        ctx.quarantine(path, f"{path.name} line {lineno} (byte {off + pos}): {why}", etype, raw, lineno, off)
        return False, None
    ctx.records_seen += 1
    ctx.records_ingested += 1
    return True, obj


def load_json(path: Path, ctx: ParseContext) -> Any | None:
    """Load a whole JSON file; on failure quarantine the file as one record and return None."""
    try:
        data = path.read_bytes()
    except OSError as e:
        ctx.quarantine(path, f"{path.name}: cannot read file: {e}", "io")
        return None
    if not data.strip():
        ctx.quarantine(path, f"{path.name}: empty file", "empty", data, offset=0)
        return None
    try:
        return loads_lenient(data)
    except (orjson.JSONDecodeError, UnicodeDecodeError) as e:
        stripped = data.rstrip()
        at_end = (isinstance(e, UnicodeDecodeError) and e.reason == "unexpected end of data") or (
            isinstance(e, orjson.JSONDecodeError) and (getattr(e, "pos", 0) or 0) >= len(stripped) - 1
        )
        etype, why, pos = describe_json_error(data, e, at_end=at_end)
        if etype == "truncated":
            why = f"truncated JSON file, cut off at byte {len(data)}"
        line = data.count(b"\n", 0, pos) + 1
        ctx.quarantine(path, f"{path.name} line {line} (byte {pos}): {why}", etype, data, None, pos)
        return None


def json_records(path: Path, ctx: ParseContext, items: list[Any]) -> Iterator[Record]:
    """Records for the elements of a JSON list (each counted; raw bytes re-serialized on demand)."""
    for i, obj in enumerate(items):
        ctx.seen_ok()
        yield Record(path, i, None, None, obj)


def raw_of(rec: Record) -> bytes:
    if rec.raw is not None:
        return rec.raw
    try:
        return orjson.dumps(rec.obj)
    except TypeError:
        return json.dumps(rec.obj, default=str).encode()


def head(path: Path, n: int = HEAD_BYTES, first_line_max: int = FIRST_LINE_MAX) -> bytes:
    """The first `n` bytes, extended to the end of the first non-blank line (up to `first_line_max`),
    so that sniffing a JSONL file whose first record is long (big instructions, an image) still sees
    one whole record."""
    try:
        with open(path, "rb") as f:
            data = f.read(n)
            if len(data) < n or b"\n" in data.lstrip():
                return data
            parts = [data]
            size = len(data)
            while size < first_line_max:
                chunk = f.read(min(1 << 20, first_line_max - size))
                if not chunk:
                    break
                parts.append(chunk)
                size += len(chunk)
                if b"\n" in chunk:
                    break
            return b"".join(parts)
    except OSError:
        return b""


SNIFF_LINES = 8  # sniffing looks past at most this many leading lines that are not JSON objects


def json_objects(head_bytes: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects among the first SNIFF_LINES non-blank lines of a JSONL head (damaged lines skipped)."""
    n = 0
    for line in io.BytesIO(head_bytes):
        s = line.strip()
        if not s:
            continue
        n += 1
        if n > SNIFF_LINES:
            return
        try:
            obj = loads_lenient(s)
        except (orjson.JSONDecodeError, UnicodeDecodeError, RecursionError):
            continue
        if isinstance(obj, dict):
            yield obj


def first_json_line(head_bytes: bytes) -> dict[str, Any] | None:
    """The first line of a JSONL head that parses as an object, or None.

    A few damaged leading lines (not JSON, `null`, a list) are looked past, so that one bad first
    record costs that record (quarantined by the reader), not the recognition of the whole file."""
    return next(json_objects(head_bytes), None)
