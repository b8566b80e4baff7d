"""What an adapter is, and the small toolkit adapters share.

An adapter recognises its own files (`sniff`), says which other files belong with one of them
(`companions`: sub-agent transcripts, result.json, continuations), and turns a source unit into
`ParsedTrajectory` objects: a trajectory row plus its ordered step rows, as plain dicts following
`trajlab.schema.Trajectory` / `Step`. Ids, counts, tool normalization and token totals are filled in
afterwards by `finish_trajectory`, so adapters only translate what the runner wrote.

Bad records never raise out of an adapter: the reader helpers quarantine a line that is not JSON,
and adapters call `ctx.reject(...)` for a record that is JSON but not what they expect. Every record
read is counted, so `records_seen == records_ingested + records_quarantined` holds per unit.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import orjson

HEAD_BYTES = 65_536


@dataclass
class SourceUnit:
    """A primary file plus the companion files its adapter reads with it."""

    primary: Path
    adapter: str
    companions: list[Path] = field(default_factory=list)
    digest: str | None = None

    @property
    def files(self) -> list[Path]:
        return [self.primary, *self.companions]


@dataclass
class ParsedTrajectory:
    """One trajectory as an adapter produced it: row dicts, not yet finished (see `finish_trajectory`)."""

    trajectory: dict[str, Any]
    steps: list[dict[str, Any]]
    native_key: str | None = None
    locator: str | None = None


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

    def __init__(self, unit: SourceUnit, runner: str | None = None, keep_raw_max: int = 256 << 20):
        self.unit = unit
        self.runner = runner
        self.keep_raw_max = keep_raw_max
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
        keep = raw if raw is not None and size <= self.keep_raw_max else None
        self.quarantined.append(QuarantinedRecord(str(path), line, offset, reason, error_type, keep, size))

    def reject(self, rec: Record, reason: str, error_type: str = "schema") -> None:
        """Quarantine a record a reader already yielded (JSON that is not what the adapter expects)."""
        self.quarantine(rec.path, reason, error_type, rec.raw, rec.line, rec.offset, counted=True)


@dataclass
class Record:
    """One JSON record read from a file, with where it came from."""

    path: Path
    line: int | None  # 1-based line for JSONL, element index for JSON lists
    offset: int | None
    raw: bytes | None
    obj: Any


def _classify_json_error(raw: bytes, err: Exception, last: bool) -> tuple[str, str]:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as ue:
        return "utf8", f"invalid UTF-8 at byte {ue.start} of the record"
    if raw[:1] == b"\x00" or sum(b < 9 for b in raw[:256]) > 8:
        return "binary", "binary data, not JSON"
    msg = str(err).splitlines()[0]
    if last:
        return "truncated", f"truncated JSON at end of file ({msg})"
    return "json", f"not valid JSON ({msg})"


def read_jsonl(path: Path, ctx: ParseContext) -> Iterator[Record]:
    """Yield every JSON line of a JSONL file; quarantine lines that are not JSON (with line and offset)."""
    offset = 0
    lineno = 0
    with open(path, "rb") as f:
        pending: bytes | None = None
        pending_line = 0
        pending_off = 0
        for raw in f:
            lineno += 1
            if pending is not None:
                yield from _jsonl_record(path, ctx, pending, pending_line, pending_off, last=False)
            pending, pending_line, pending_off = raw, lineno, offset
            offset += len(raw)
        if pending is not None:
            yield from _jsonl_record(
                path, ctx, pending, pending_line, pending_off, last=not pending.endswith(b"\n")
            )


def _jsonl_record(
    path: Path, ctx: ParseContext, raw: bytes, line: int, off: int, last: bool
) -> Iterator[Record]:
    stripped = raw.strip()
    if not stripped:
        return
    try:
        obj = orjson.loads(stripped)
    except orjson.JSONDecodeError as e:
        etype, reason = _classify_json_error(stripped, e, last)
        ctx.quarantine(path, f"line {line}: {reason}", etype, raw, line, off)
        return
    ctx.seen_ok()
    yield Record(path, line, off, raw, obj)


def load_json(path: Path, ctx: ParseContext) -> Any | None:
    """Load a whole JSON file; on failure quarantine the file as one record and return None."""
    try:
        data = path.read_bytes()
    except OSError as e:
        ctx.quarantine(path, f"cannot read file: {e}", "io")
        return None
    if not data.strip():
        ctx.quarantine(path, "empty file", "empty", data)
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        try:  # orjson rejects some valid JSON (e.g. NaN, lone surrogates); the stdlib is more lenient
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            pass
        etype, reason = _classify_json_error(data, e, last=True)
        if etype == "truncated" and data.rstrip()[-1:] in (b"}", b"]"):
            etype, reason = "json", reason.replace("truncated JSON at end of file", "not valid JSON")
        ctx.quarantine(path, reason, etype, data)
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


def head(path: Path, n: int = HEAD_BYTES) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def first_json_line(head_bytes: bytes) -> dict[str, Any] | None:
    """The first non-empty line of a JSONL head parsed as an object, or None."""
    for line in io.BytesIO(head_bytes):
        s = line.strip()
        if not s:
            continue
        try:
            obj = orjson.loads(s)
        except orjson.JSONDecodeError:
            return None
        return obj if isinstance(obj, dict) else None
    return None


def parse_ts(value: Any) -> datetime | None:
    """ISO-8601 strings (with Z), epoch seconds/ms/ns numbers -> aware UTC datetime; None if unparsable."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)):
        v = float(value)
        if v > 1e17:
            v /= 1e9
        elif v > 1e14:
            v /= 1e6
        elif v > 1e11:
            v /= 1e3
        try:
            return datetime.fromtimestamp(v, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        s = value.strip()
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            try:
                return parse_ts(float(s))
            except ValueError:
                return None
        return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
    return None


def as_text(content: Any) -> str | None:
    """Flatten message content (str, list of text/image parts, dicts) into text; images become markers."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [as_text(c) for c in content]
        return "\n".join(p for p in parts if p)
    if isinstance(content, dict):
        t = content.get("type")
        if t in ("image", "input_image", "image_url"):
            src = content.get("source") or {}
            media = src.get("media_type") if isinstance(src, dict) else None
            return f"[image{': ' + media if media else ''}]"
        for key in ("text", "content", "output", "thinking", "reasoning", "summary", "value"):
            if key in content and content[key] is not None:
                return as_text(content[key])
        return None
    return str(content)


def json_str(value: Any) -> str | None:
    """Arguments and metadata are stored as JSON strings; strings that already are JSON stay as they are."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value, default=str)


def parse_args(value: Any) -> Any:
    """Tool arguments may be a JSON string or already an object."""
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "["):
            try:
                return orjson.loads(s)
            except orjson.JSONDecodeError:
                return value
    return value


class CallLinker:
    """Joins tool results to their calls by call id, and records the anomalies it sees."""

    def __init__(self, steps: list[dict[str, Any]], anomalies: list[str]):
        self.steps = steps
        self.anomalies = anomalies
        self.by_id: dict[str, dict[str, Any]] = {}

    def call(self, step: dict[str, Any]) -> dict[str, Any]:
        cid = step.get("call_id")
        if cid:
            if cid in self.by_id:
                self.anomalies.append(f"duplicate call id {cid}")
            self.by_id[cid] = step
        self.steps.append(step)
        return step

    def get(self, call_id: str | None) -> dict[str, Any] | None:
        return self.by_id.get(call_id) if call_id else None

    def result(
        self, call_id: str | None, orphan: dict[str, Any] | None = None, **fields: Any
    ) -> dict[str, Any] | None:
        """Attach result fields to the call; an unknown id becomes a `tool_result` step (orphan)."""
        step = self.get(call_id)
        if step is None:
            self.anomalies.append(f"result without call {call_id}")
            row = {"kind": "tool_result", "call_id": call_id, **fields, **(orphan or {})}
            self.steps.append(row)
            return row
        if step.get("_has_result"):
            # A second result for the same call (polling, retries inside the runner): append output.
            if fields.get("output"):
                prev = step.get("output") or ""
                step["output"] = prev + ("\n" if prev else "") + fields.pop("output")
            for k, v in fields.items():
                if v is not None:
                    step[k] = v
            return step
        step["_has_result"] = True
        for k, v in fields.items():
            if v is not None:
                step[k] = v
        return step

    def unresolved(self) -> list[dict[str, Any]]:
        return [s for s in self.by_id.values() if not s.get("_has_result")]


class Adapter:
    """Base class of a format adapter. Subclasses set the class attributes and implement parse()."""

    name: ClassVar[str] = ""
    runner: ClassVar[str] = ""
    extensions: ClassVar[tuple[str, ...]] = (".json",)
    priority: ClassVar[int] = 50  # lower runs first when several adapters could claim a file
    description: ClassVar[str] = ""

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        """True if this is one of this adapter's primary files (look at the name and the first bytes)."""
        raise NotImplementedError

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        """One line for the 'what was tried' list when sniff() said no."""
        return "not recognised"

    def companions(self, path: Path) -> list[Path]:
        """Other files that belong to the unit whose primary is `path`."""
        return []

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        raise NotImplementedError

    def matches_extension(self, path: Path) -> bool:
        name = path.name.lower()
        return any(name.endswith(ext) for ext in self.extensions)
