"""Parse a batch of source units into Parquet parts (runs in worker processes, or inline for one worker)."""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import xxhash

from ..formats import ParseContext, SourceUnit, finish_trajectory, get_adapter
from ..schema import DIGEST_ALGORITHM, TABLES, default_row
from ..store import PartWriter, table_schema
from ._meta import MetaIndex, apply_meta

UNIT_BUFFER_BYTES = 256 << 20  # rows of one unit are held back until it parses cleanly, up to this size
RAW_KEEP_MAX = 16 << 20  # whole unreadable files larger than this are referenced, not copied


def unit_digest(files: list[Path]) -> str:
    h = xxhash.xxh3_128()
    for f in files:
        h.update(str(f.name).encode())
        h.update(b"\x00")
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 22):
                h.update(chunk)
        h.update(b"\x00")
    return f"{DIGEST_ALGORITHM}:{h.hexdigest()}"


@dataclass
class UnitResult:
    source: dict[str, Any]
    runner: str
    trajectories: int = 0
    steps: int = 0
    tool_calls: int = 0


@dataclass
class BatchResult:
    units: list[UnitResult] = field(default_factory=list)
    parts: list[tuple[str, str, int]] = field(default_factory=list)  # (table, path, rows)
    bytes: int = 0


def _size_hint(step: dict[str, Any]) -> int:
    n = 64
    for k in ("output", "text", "arguments", "stderr"):
        v = step.get(k)
        if v:
            n += len(v)
    return n


class _Writers:
    def __init__(self, folder: Path, generation: int):
        self.folder = folder
        self.generation = generation
        self._w: dict[str, PartWriter] = {}

    def get(self, table: str) -> PartWriter:
        if table not in self._w:
            self._w[table] = PartWriter(
                self.folder / table, table_schema(table), default_row(TABLES[table]), self.generation
            )
        return self._w[table]

    def close(self) -> list[tuple[str, str, int]]:
        out = []
        for table, w in self._w.items():
            for path, rows in w.close():
                out.append((table, str(path), rows))
        return out


def parse_batch(args: tuple[list[SourceUnit], str, int, dict[str, Any], MetaIndex | None]) -> BatchResult:
    units, staging, generation, defaults, meta = args
    folder = Path(staging) / f"w{os.getpid()}-{units[0].primary.name[:40]}-{id(units) & 0xFFFF:x}"
    writers = _Writers(folder, generation)
    result = BatchResult()
    for unit in units:
        result.units.append(_parse_unit(unit, writers, defaults, meta))
        result.bytes += sum(result.units[-1].source["sizes"])
    result.parts = writers.close()
    return result


def _parse_unit(
    unit: SourceUnit, writers: _Writers, defaults: dict[str, Any], meta: MetaIndex | None
) -> UnitResult:
    now = datetime.now(timezone.utc)
    adapter = get_adapter(unit.adapter)
    sizes, mtimes = [], []
    for f in unit.files:
        try:
            st = f.stat()
            sizes.append(st.st_size)
            mtimes.append(st.st_mtime_ns)
        except OSError:
            sizes.append(0)
            mtimes.append(0)
    ctx = ParseContext(unit, adapter.runner)
    if unit.digest is None:
        try:
            unit.digest = unit_digest(unit.files)
        except OSError as e:
            ctx.quarantine(unit.primary, f"cannot read: {e}", "io")
            unit.digest = f"{DIGEST_ALGORITHM}:unreadable"
    res = UnitResult(source={}, runner=adapter.runner)
    held: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    held_bytes = 0
    streaming = False
    tids: list[str] = []
    error: str | None = None

    def write(t: dict[str, Any], steps: list[dict[str, Any]]) -> None:
        wt, ws = writers.get("trajectories"), writers.get("steps")
        wt.add(t, 512)
        for s in steps:
            ws.add(s, _size_hint(s))

    if not ctx.quarantined:
        try:
            for pt in adapter.parse(unit, ctx):
                t, steps = finish_trajectory(pt, unit, adapter.runner, adapter.name, now, defaults)
                if meta:
                    m = meta.lookup(str(unit.primary), t.get("native_id"))
                    if m:
                        apply_meta(t, m)
                tids.append(t["trajectory_id"])
                res.trajectories += 1
                res.steps += len(steps)
                res.tool_calls += t["n_tool_calls"]
                if streaming:
                    write(t, steps)
                    continue
                held.append((t, steps))
                held_bytes += sum(_size_hint(s) for s in steps)
                if held_bytes > UNIT_BUFFER_BYTES:
                    for ht, hs in held:
                        write(ht, hs)
                    held = []
                    streaming = True
        except Exception as e:  # an adapter bug must not lose the file: quarantine what was not ingested
            error = f"{unit.adapter} adapter failed: {type(e).__name__}: {e}"
            tb = traceback.format_exc(limit=3)
            if not streaming:
                # nothing of this unit was written: quarantine the whole unit
                ctx.records_ingested = 0
                ctx.records_seen = len(ctx.quarantined)
                tids, res.trajectories, res.steps, res.tool_calls = [], 0, 0, 0
                held = []
                raw = _read_small(unit.primary)
                ctx.quarantine(unit.primary, f"{error}\n{tb}", "adapter", raw)
            else:
                ctx.quarantine(unit.primary, f"{error} after {len(tids)} trajectories\n{tb}", "adapter")
    for t, steps in held:
        write(t, steps)
    if ctx.records_seen == 0 and not ctx.quarantined:
        empty = all(s == 0 for s in sizes)
        ctx.quarantine(
            unit.primary,
            "empty file" if empty else f"no records found by {unit.adapter}",
            "empty" if empty else "schema",
            _read_small(unit.primary),
        )
    wq = writers.get("quarantine") if ctx.quarantined else None
    for q in ctx.quarantined:
        assert wq is not None
        wq.add(
            {
                "source_path": q.source_path,
                "line": q.line,
                "byte_offset": q.byte_offset,
                "runner": adapter.runner,
                "reason": q.reason,
                "error_type": q.error_type,
                "raw": q.raw,
                "raw_size": q.raw_size,
                "ingested_at": now,
            },
            q.raw_size,
        )
    if tids and ctx.quarantined:
        status = "partial"
    elif tids:
        status = "ingested"
    else:
        status = "quarantined"
    res.source = {
        "source_path": str(unit.primary),
        "files": [str(f) for f in unit.files],
        "sizes": sizes,
        "mtimes_ns": mtimes,
        "digest": unit.digest,
        "runner": adapter.runner,
        "format": adapter.name,
        "status": status,
        "records_seen": ctx.records_seen,
        "records_ingested": ctx.records_ingested,
        "records_quarantined": ctx.records_quarantined,
        "trajectory_ids": tids,
        "n_steps": res.steps,
        "n_tool_calls": res.tool_calls,
        "error": error
        or (ctx.quarantined[0].reason if status == "quarantined" and ctx.quarantined else None),
        "ingested_at": now,
    }
    return res


def _read_small(path: Path) -> bytes | None:
    try:
        if path.stat().st_size <= RAW_KEEP_MAX:
            return path.read_bytes()
    except OSError:
        return None
    return None
