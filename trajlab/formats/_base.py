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

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, ClassVar

import orjson
from mypy_extensions import mypyc_attr

from ._read import (
    HEAD_BYTES,
    ParseContext,
    QuarantinedRecord,
    Record,
    describe_json_error,
    first_json_line,
    head,
    json_records,
    load_json,
    loads_lenient,
    raw_of,
    read_jsonl,
)


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


# The forms of ISO 8601 that Python 3.11+ `datetime.fromisoformat` reads and 3.10's (which reads only
# what `isoformat()` writes) does not: the basic format without separators (20240102T030405Z), hours
# without seconds or minutes, a fraction of other than 3 or 6 digits (nanoseconds from Go and
# OpenTelemetry, trimmed zeros) or after a comma, and a +HHMM or +HH offset. Matched after a Z became
# +00:00; `_iso_for_310` reads them as 3.11 does (a fraction truncated to microseconds).
_ISO_310 = re.compile(
    r"(\d{4})-?(\d{2})-?(\d{2})"
    r"(?:[T ](\d{2})(?::?(\d{2})(?::?(\d{2})(?:[.,](\d+))?)?)?)?"
    r"(?:([+-])(\d{2})(?::?(\d{2}))?)?"
)


def _iso_for_310(s: str) -> datetime | None:
    m = _ISO_310.fullmatch(s)
    if m is None:
        return None
    y, mo, d, hh, mm, ss, frac, sign, tzh, tzm = m.groups()
    try:
        tz = None
        if sign:
            off = timedelta(hours=int(tzh), minutes=int(tzm or 0))
            tz = timezone(-off if sign == "-" else off)
        return datetime(
            int(y), int(mo), int(d), int(hh or 0), int(mm or 0), int(ss or 0),
            int((frac + "00000")[:6]) if frac else 0, tzinfo=tz,
        )  # fmt: skip
    except ValueError:  # an impossible date, time or offset
        return None


def parse_ts(value: Any) -> datetime | None:
    """ISO-8601 strings (with Z), epoch seconds/ms/ns numbers -> aware UTC datetime; None if unparsable."""
    if isinstance(value, str):
        try:  # fast path (Python 3.11+ parses a trailing Z)
            dt = datetime.fromisoformat(value)
        except ValueError:
            s = value.strip()
            if s.endswith(("Z", "z")):
                s = s[:-1] + "+00:00"
            try:
                dt = datetime.fromisoformat(s)
            except ValueError:
                parsed = _iso_for_310(s)  # None on 3.11+, which has read all it matches
                if parsed is not None:
                    dt = parsed
                else:
                    try:
                        return parse_ts(float(s)) if s else None
                    except ValueError:
                        return None
        return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)):
        v = float(value)
        if v != v or v in (float("inf"), float("-inf")):
            return None
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


EARLY_RESULT = "came before its call"  # in the anomaly of a result paired with a later call


class CallLinker:
    """Joins tool results to their calls by call id, and records the anomalies it sees.

    A result whose call comes later (steps out of order) is kept as an orphan `tool_result` row until
    the call arrives; then its fields go onto the call, the row is marked `_paired` (dropped by
    `finish_trajectory`, so stored rows keep their own order and source lines) and its "result without
    call" anomaly becomes one saying it came before its call."""

    def __init__(self, steps: list[dict[str, Any]], anomalies: list[str]):
        self.steps = steps
        self.anomalies = anomalies
        self.by_id: dict[str, dict[str, Any]] = {}
        # call id -> orphan results still waiting for a call: (row, result fields)
        self.early: dict[Any, list[tuple[dict[str, Any], dict[str, Any]]]] = {}

    def call(self, step: dict[str, Any]) -> dict[str, Any]:
        cid = step.get("call_id")
        if cid:
            if cid in self.by_id:
                self.anomalies.append(f"duplicate call id {cid}")
            self.by_id[cid] = step
            if self.early and cid in self.early:
                self._pair_early(step, cid, self.early.pop(cid))
        self.steps.append(step)
        return step

    def get(self, call_id: str | None) -> dict[str, Any] | None:
        return self.by_id.get(call_id) if call_id else None

    def result(
        self, call_id: str | None, orphan: dict[str, Any] | None = None, **fields: Any
    ) -> dict[str, Any]:
        """Attach result fields to the call; an unknown id becomes a `tool_result` step (orphan)."""
        step = self.get(call_id)
        if step is None:
            self.anomalies.append(f"result without call {call_id}")
            row = {"kind": "tool_result", "call_id": call_id, **fields, **(orphan or {})}
            self.steps.append(row)
            if call_id:  # its call may still come (steps out of order)
                self.early.setdefault(call_id, []).append((row, fields))
            return row
        self._attach(step, fields)
        return step

    def _attach(self, step: dict[str, Any], fields: dict[str, Any]) -> None:
        if step.get("_has_result"):
            # A second result for the same call (polling, retries inside the runner): append output.
            if fields.get("output"):
                prev = step.get("output") or ""
                step["output"] = prev + ("\n" if prev else "") + fields["output"]
            for k, v in fields.items():
                if v is not None and k != "output":
                    step[k] = v
            return
        step["_has_result"] = True
        for k, v in fields.items():
            if v is not None:
                step[k] = v

    def _pair_early(
        self, step: dict[str, Any], cid: Any, early: list[tuple[dict[str, Any], dict[str, Any]]]
    ) -> None:
        for row, fields in early:
            self._attach(step, fields)
            row["_paired"] = True
        step["_early"] = (self, early)  # for rollback: the rows go back to being orphans
        self._reword(f"result without call {cid}", f"result for call {cid} {EARLY_RESULT} (out of order)")

    def _reword(self, old: str, new: str) -> None:
        a = self.anomalies
        for k in range(len(a) - 1, -1, -1):
            if a[k] == old:
                a[k] = new
                return
        a.append(new)

    def unpair(self, step: dict[str, Any]) -> None:
        """Undo the pairing this linker made of `step` with results that came before it (the call's
        record was rolled back): the rows are orphans again."""
        _, early = step.pop("_early")
        cid = step.get("call_id")
        for row, _ in early:
            row.pop("_paired", None)
        self.early.setdefault(cid, [])[:0] = early
        self._reword(f"result for call {cid} {EARLY_RESULT} (out of order)", f"result without call {cid}")

    def unresolved(self) -> list[dict[str, Any]]:
        return [s for s in self.by_id.values() if not s.get("_has_result")]


__all__ = [
    "EARLY_RESULT",
    "HEAD_BYTES",
    "Adapter",
    "CallLinker",
    "ParseContext",
    "ParsedTrajectory",
    "QuarantinedRecord",
    "Record",
    "SourceUnit",
    "as_text",
    "describe_json_error",
    "first_json_line",
    "head",
    "json_records",
    "json_str",
    "load_json",
    "loads_lenient",
    "parse_args",
    "parse_ts",
    "raw_of",
    "read_jsonl",
]


@mypyc_attr(allow_interpreted_subclasses=True)  # runners' adapters and plugins subclass it
class Adapter:
    """Base class of a format adapter. Subclasses set the class attributes and implement parse()."""

    name: ClassVar[str] = ""
    runner: ClassVar[str] = ""
    extensions: ClassVar[tuple[str, ...]] = (".json",)
    priority: ClassVar[int] = 50  # lower runs first when several adapters could claim a file
    description: ClassVar[str] = ""
    version: ClassVar[int] = 1
    """Bump when parse() gives different rows for the same input (a fix, a new field): incremental
    ingest re-parses the units a lab recorded with an older version (`sources.adapter_version`)."""

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
        return path.name.lower().endswith(self.extensions)
