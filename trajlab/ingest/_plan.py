"""Decide what an ingest run has to do: which units are new or changed, unchanged, touched only,
duplicates of other units, and which unknown files and meta sidecars need (re)recording.

A unit is unchanged when its member files, sizes and mtimes equal the ones recorded in `sources`, the
meta sidecar entries that apply to its runs are the same as last time, and the adapter that claims it
now is the one, at the same version, that parsed it (else it is *reparsed*: a file no adapter knew that
a new adapter recognises, or a unit parsed by an adapter that has changed since). Only units of equal total
size can be byte-identical, so only those are hashed up front to find duplicates and touched files.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..formats import ROWS_VERSION, SourceUnit, get_adapter
from ..fsutil import path_text
from ..store import Lab
from ._discover import Discovery
from ._meta import MetaIndex, load_meta, norm_path
from ._worker import unit_digest

Fingerprint = tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]
SOURCE_COLUMNS = [
    "source_path",
    "files",
    "sizes",
    "mtimes_ns",
    "digest",
    "meta_digest",
    "runner",
    "format",
    "adapter_version",
    "rows_version",
    "status",
    "duplicate_of",
    "records_seen",
    "records_ingested",
    "records_quarantined",
    "trajectory_ids",
    "n_steps",
    "n_tool_calls",
    "error",
    "ingested_at",
]


def fingerprint(unit: SourceUnit) -> Fingerprint:
    files, sizes, mtimes = [], [], []
    for f in unit.files:
        st = f.stat()
        files.append(path_text(f))
        sizes.append(st.st_size)
        mtimes.append(st.st_mtime_ns)
    return tuple(files), tuple(sizes), tuple(mtimes)


def _recorded(row: dict[str, Any]) -> Fingerprint:
    return tuple(row["files"]), tuple(row["sizes"]), tuple(row["mtimes_ns"])


def parsed_by(row: dict[str, Any]) -> tuple[str | None, int]:
    """(adapter name, version) that wrote a `sources` row; rows from before the version column: 1."""
    return row.get("format"), row.get("adapter_version") or 1


def _stale(old: dict[str, Any], unit: SourceUnit) -> str | None:
    """Why a recorded unit must be parsed again though its bytes did not change, or None."""
    name, version = parsed_by(old)
    adapter = get_adapter(unit.adapter)
    if old["status"] == "unknown" or name != adapter.name:
        was = "no adapter" if old["status"] == "unknown" or name is None else name
        return f"now recognised by {adapter.name} (was {was})"
    if version != adapter.version:
        return f"{adapter.name} v{version} -> v{adapter.version}"
    rows = old.get("rows_version") or 1
    if old["status"] != "duplicate" and rows != ROWS_VERSION:
        return f"trajlab's row finishing (tool normalization, ids) v{rows} -> v{ROWS_VERSION}"
    return None


@dataclass
class Plan:
    existing: dict[str, dict[str, Any]]
    todo: list[SourceUnit] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)  # unit key -> total bytes
    replaced: dict[str, dict[str, Any]] = field(default_factory=dict)  # unit key -> previous sources row
    duplicates: list[tuple[SourceUnit, str]] = field(default_factory=list)  # (unit, key of the original)
    moved: dict[str, str] = field(default_factory=dict)  # unit key -> key of its recorded, vanished original
    touched: list[SourceUnit] = field(default_factory=list)  # same bytes, new mtime: refresh the fingerprint
    unchanged: Counter[str] = field(default_factory=Counter)  # runner -> units skipped
    unknown: list[tuple[Path, list[str]]] = field(default_factory=list)  # new or changed unknown files
    vanished: list[str] = field(default_factory=list)  # discovered, then gone before it could be read
    meta: MetaIndex = field(default_factory=MetaIndex)
    meta_paths: list[Path] = field(default_factory=list)
    meta_changed: list[Path] = field(default_factory=list)  # sidecars to (re)record
    meta_gone: list[str] = field(default_factory=list)  # remembered sidecars that no longer exist
    shared: set[str] = field(default_factory=set)  # companion files read by several units
    reparsed: dict[str, str] = field(default_factory=dict)  # unit key -> why its same bytes are parsed again


def _expected_meta(plan: Plan, key: str, native_ids: list[str | None]) -> str | None:
    entries = [m for n in native_ids if (m := plan.meta.lookup(key, n)) is not None]
    if not native_ids and (m := plan.meta.lookup(key, None)) is not None:
        entries = [m]
    return plan.meta.digest_of(entries)


def make_plan(lab: Lab, disc: Discovery, meta_files: list[Path], force: bool) -> Plan:
    existing: dict[str, dict[str, Any]] = {}
    if lab.has("sources"):
        for row in lab.read("sources", SOURCE_COLUMNS).to_pylist():
            existing[row["source_path"]] = row
    plan = Plan(existing=existing, shared={path_text(p) for p in disc.shared})
    _plan_meta(plan, disc, meta_files, force)

    native_ids: dict[str, str | None] = {}
    if plan.meta or any(r.get("meta_digest") for r in existing.values()):
        t = lab.read("trajectories", ["trajectory_id", "native_id"])
        native_ids = dict(zip(t.column("trajectory_id").to_pylist(), t.column("native_id").to_pylist()))

    for unit in disc.units:
        key = path_text(unit.primary)
        try:
            fp = fingerprint(unit)
        except OSError:
            plan.vanished.append(key)
            continue
        old = existing.get(key)
        stale = None if old is None or force else _stale(old, unit)
        if stale is not None and _recorded(old) == fp:  # type: ignore[arg-type]
            plan.reparsed[key] = stale
        elif not force and old is not None and _recorded(old) == fp:
            if old["status"] == "duplicate":
                plan.unchanged[get_adapter(unit.adapter).runner] += 1
                continue
            ids = [native_ids.get(t) for t in old.get("trajectory_ids") or []]
            if _expected_meta(plan, key, ids) == old.get("meta_digest"):
                plan.unchanged[get_adapter(unit.adapter).runner] += 1
                continue
        if old is not None:
            plan.replaced[key] = old
        plan.sizes[key] = sum(fp[1])
        plan.todo.append(unit)
    _find_duplicates(plan, force, native_ids)

    for path, tried in disc.unknown:
        key = path_text(path)
        try:
            st = path.stat()
        except OSError:
            plan.vanished.append(key)
            continue
        old = existing.get(key)
        if force or old is None or (old["sizes"], old["mtimes_ns"]) != ([st.st_size], [st.st_mtime_ns]):
            plan.unknown.append((path, tried))
        else:
            plan.unchanged["unknown"] += 1
    return plan


def _plan_meta(plan: Plan, disc: Discovery, meta_files: list[Path], force: bool) -> None:
    """Sidecars in effect: found, given, and remembered from earlier runs (if still on disk)."""
    paths: dict[str, Path] = {}
    for p in [*disc.meta, *meta_files]:
        paths.setdefault(norm_path(p), Path(norm_path(p)))
    for key, row in plan.existing.items():
        if row.get("runner") == "meta" and key not in paths:
            if Path(key).is_file():
                paths[key] = Path(key)
            else:
                plan.meta_gone.append(key)
    plan.meta_paths = list(paths.values())
    plan.meta = load_meta(plan.meta_paths)
    for key, p in paths.items():
        st = p.stat()
        old = plan.existing.get(key)
        if force or old is None or (old["sizes"], old["mtimes_ns"]) != ([st.st_size], [st.st_mtime_ns]):
            plan.meta_changed.append(p)


def _find_duplicates(plan: Plan, force: bool, native_ids: dict[str, str | None]) -> None:
    """Hash units whose size matches another unit's (new or recorded) to find duplicates and touches."""
    by_size: dict[int, int] = defaultdict(int)
    for u in plan.todo:
        by_size[plan.sizes[path_text(u.primary)]] += 1
    old_sizes = {sum(r["sizes"]) for r in plan.existing.values() if r.get("sizes")}
    # Digests of ingested units that stay as they are (a unit being replaced no longer has its old bytes).
    known: dict[str, str] = {
        r["digest"]: key
        for key, r in plan.existing.items()
        if r.get("digest") and r["status"] in ("ingested", "partial") and key not in plan.replaced
    }
    seen: dict[str, str] = {}
    kept: list[SourceUnit] = []
    for u in plan.todo:
        key = path_text(u.primary)
        size = plan.sizes[key]
        if by_size[size] > 1 or size in old_sizes:
            try:
                u.digest = unit_digest(u.files)
            except OSError:
                plan.vanished.append(key)
                continue
            old = plan.replaced.get(key)
            stale = None if old is None or force else _stale(old, u)
            if stale is not None and old is not None and old.get("digest") == u.digest:
                plan.reparsed[key] = stale  # touched, and its adapter changed: parse it again
            if (
                old is not None
                and not force
                and old.get("digest") == u.digest
                and old["status"] != "duplicate"
                and stale is None
                and _expected_meta(plan, key, [native_ids.get(t) for t in old.get("trajectory_ids") or []])
                == old.get("meta_digest")
            ):
                plan.touched.append(u)  # touched but unchanged: refresh the fingerprint only
                del plan.replaced[key]
                seen[u.digest] = key
                continue
            other = seen.get(u.digest) or known.get(u.digest)
            if other is not None and other != key and other not in seen.values() and not Path(other).exists():
                # the recorded original is gone: the file was moved or renamed, not copied
                plan.moved[key] = other
                known.pop(u.digest, None)
                other = None
            if other is not None and other != key:
                plan.duplicates.append((u, other))
                continue
            seen[u.digest] = key
        kept.append(u)
    plan.todo = kept
