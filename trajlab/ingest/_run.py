"""`trajlab ingest`: discover, skip what is unchanged, parse in worker processes, commit atomically."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..formats import SourceUnit, get_adapter
from ..store import Lab
from ._discover import discover
from ._meta import MetaIndex, load_meta
from ._worker import RAW_KEEP_MAX, BatchResult, parse_batch, unit_digest

BATCH_BYTES = 64 << 20
COMMIT_EVERY_BYTES = 2 << 30
DERIVED_TABLES = ("dag_nodes", "dag_edges", "dag_metrics")


@dataclass
class RunnerSummary:
    files: int = 0
    trajectories: int = 0
    steps: int = 0
    tool_calls: int = 0
    records_seen: int = 0
    records_ingested: int = 0
    records_quarantined: int = 0
    duplicates: int = 0
    unchanged: int = 0


@dataclass
class IngestReport:
    lab: Path
    runners: dict[str, RunnerSummary] = field(default_factory=lambda: defaultdict(RunnerSummary))
    unknown: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    skipped: int = 0
    bytes: int = 0
    seconds: float = 0.0
    generation: int = 0

    @property
    def records_seen(self) -> int:
        return sum(r.records_seen for r in self.runners.values())

    @property
    def records_ingested(self) -> int:
        return sum(r.records_ingested for r in self.runners.values())

    @property
    def records_quarantined(self) -> int:
        return sum(r.records_quarantined for r in self.runners.values())

    @property
    def totals(self) -> RunnerSummary:
        t = RunnerSummary()
        for r in self.runners.values():
            for k in t.__dataclass_fields__:
                setattr(t, k, getattr(t, k) + getattr(r, k))
        return t

    def format(self) -> str:
        lines = [
            f"{'runner':<16} {'files':>6} {'traj':>7} {'steps':>9} {'calls':>8} {'seen':>8} {'ingested':>9} "
            f"{'quarant.':>8} {'dup':>4} {'same':>5}"
        ]
        for name in sorted(self.runners):
            r = self.runners[name]
            lines.append(
                f"{name:<16} {r.files:>6} {r.trajectories:>7} {r.steps:>9} {r.tool_calls:>8} {r.records_seen:>8} "
                f"{r.records_ingested:>9} {r.records_quarantined:>8} {r.duplicates:>4} {r.unchanged:>5}"
            )
        t = self.totals
        lines.append(
            f"{'total':<16} {t.files:>6} {t.trajectories:>7} {t.steps:>9} {t.tool_calls:>8} {t.records_seen:>8} "
            f"{t.records_ingested:>9} {t.records_quarantined:>8} {t.duplicates:>4} {t.unchanged:>5}"
        )
        ok = "holds" if t.records_seen == t.records_ingested + t.records_quarantined else "VIOLATED"
        lines.append(
            f"records seen {t.records_seen} = ingested {t.records_ingested} + quarantined {t.records_quarantined} ({ok})"
        )
        for path, why in self.unknown:
            lines.append(f"unknown format (quarantined): {path}: {why}")
        for path in self.missing:
            lines.append(f"missing input: {path}")
        if self.seconds:
            mb = self.bytes / 1e6
            lines.append(
                f"{mb:.1f} MB in {self.seconds:.2f}s ({mb / self.seconds:.1f} MB/s); lab generation {self.generation}"
            )
        return "\n".join(lines)


def _fingerprint(unit: SourceUnit) -> tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]:
    files, sizes, mtimes = [], [], []
    for f in unit.files:
        st = f.stat()
        files.append(str(f))
        sizes.append(st.st_size)
        mtimes.append(st.st_mtime_ns)
    return tuple(files), tuple(sizes), tuple(mtimes)


def _batches(units: list[SourceUnit], sizes: dict[str, int], n_workers: int) -> list[list[SourceUnit]]:
    total = sum(sizes.values()) or 1
    target = max(1 << 20, min(BATCH_BYTES, total // max(n_workers * 4, 1)))
    out: list[list[SourceUnit]] = []
    cur: list[SourceUnit] = []
    cur_bytes = 0
    for u in sorted(units, key=lambda u: -sizes[str(u.primary)]):
        cur.append(u)
        cur_bytes += sizes[str(u.primary)]
        if cur_bytes >= target:
            out.append(cur)
            cur, cur_bytes = [], 0
    if cur:
        out.append(cur)
    return out


def _chunks(
    batches: list[list[SourceUnit]], sizes: dict[str, int], limit: int
) -> Iterator[list[list[SourceUnit]]]:
    cur: list[list[SourceUnit]] = []
    cur_bytes = 0
    for b in batches:
        cur.append(b)
        cur_bytes += sum(sizes[str(u.primary)] for u in b)
        if cur_bytes >= limit:
            yield cur
            cur, cur_bytes = [], 0
    if cur:
        yield cur


def ingest(
    paths: list[str | Path],
    out: str | Path,
    workers: int | None = None,
    defaults: dict[str, Any] | None = None,
    progress: bool = True,
    force: bool = False,
    commit_every_bytes: int = COMMIT_EVERY_BYTES,
    meta_files: list[str | Path] | None = None,
) -> IngestReport:
    """Ingest trajectories under `paths` into the lab at `out` (created if needed); incremental and idempotent."""
    import time

    t0 = time.perf_counter()
    lab = Lab.open(out, create=True)
    report = IngestReport(lab=lab.root)
    disc = discover(list(paths))
    report.missing = [str(p) for p in disc.missing]
    report.skipped = len(disc.skipped)
    defaults = {k: v for k, v in (defaults or {}).items() if v not in (None, [], ())}

    existing: dict[str, dict[str, Any]] = {}
    if lab.has("sources"):
        for row in lab.read("sources").to_pylist():
            existing[row["source_path"]] = row
    meta_paths = [*disc.meta, *(Path(m).absolute() for m in meta_files or [])]
    meta = load_meta(meta_paths)
    changed_meta_dirs = []
    for mp_ in meta_paths:
        st = mp_.stat()
        old = existing.get(str(mp_))
        if force or old is None or old["sizes"] != [st.st_size] or old["mtimes_ns"] != [st.st_mtime_ns]:
            changed_meta_dirs.append(str(mp_.parent) + os.sep)
    digests_known: dict[str, str] = {
        r["digest"]: p
        for p, r in existing.items()
        if r.get("digest") and r["status"] in ("ingested", "partial")
    }

    todo: list[SourceUnit] = []
    replaced: dict[str, dict[str, Any]] = {}
    sizes: dict[str, int] = {}
    for unit in disc.units:
        try:
            fp = _fingerprint(unit)
        except OSError:
            continue
        key = str(unit.primary)
        old = existing.get(key)
        runner = get_adapter(unit.adapter).runner
        if (
            not force
            and old is not None
            and not any(key.startswith(d) for d in changed_meta_dirs)
            and (tuple(old["files"]), tuple(old["sizes"]), tuple(old["mtimes_ns"])) == fp
        ):
            report.runners[runner].unchanged += 1
            continue
        if old is not None:
            replaced[key] = old
        sizes[key] = sum(fp[1])
        todo.append(unit)

    # Only units of equal size can be byte-identical: hash those up front to find duplicates.
    by_size: dict[int, list[SourceUnit]] = defaultdict(list)
    for u in todo:
        by_size[sizes[str(u.primary)]].append(u)
    old_sizes = {sum(r["sizes"]) for r in existing.values()}
    run_digests: dict[str, str] = {}
    dup_units: list[tuple[SourceUnit, str]] = []
    kept: list[SourceUnit] = []
    for u in todo:
        size = sizes[str(u.primary)]
        if len(by_size[size]) > 1 or size in old_sizes:
            u.digest = unit_digest(u.files)
            key = str(u.primary)
            other = run_digests.get(u.digest) or digests_known.get(u.digest)
            old = replaced.get(key)
            if old is not None and old.get("digest") == u.digest and not force:
                dup_units.append((u, key))  # touched but unchanged: refresh the fingerprint only
                continue
            if other is not None and other != key:
                dup_units.append((u, other))
                continue
            run_digests[u.digest] = key
        kept.append(u)
    todo = kept

    n_workers = workers or min(os.cpu_count() or 1, 8)
    batches = _batches(todo, sizes, n_workers)
    total_bytes = sum(sizes[str(u.primary)] for u in todo)
    bar = tqdm(total=total_bytes, unit="B", unit_scale=True, desc="ingest", disable=not progress, leave=False)
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context("spawn")
    pool = ctx.Pool(n_workers) if n_workers > 1 and len(batches) > 1 else None
    first = True
    try:
        chunks = list(_chunks(batches, sizes, commit_every_bytes)) or [[]]
        for chunk in chunks:
            with lab.write("ingest") as txn:
                if first:
                    _record_dups_and_unknown(txn, lab, disc.unknown, existing, dup_units, report, force)
                    _record_meta(txn, meta_paths, meta, report)
                    first = False
                jobs = [(b, str(txn.staging_dir), txn.generation, defaults, meta or None) for b in chunk]
                results = pool.imap_unordered(parse_batch, jobs) if pool else map(parse_batch, jobs)
                for br in results:
                    _absorb(txn, br, replaced, report)
                    bar.update(br.bytes)
                txn.summary["ingest"] = {"units": sum(len(b) for b in chunk)}
    finally:
        if pool is not None:
            pool.close()
            pool.join()
        bar.close()
    report.bytes = total_bytes
    report.seconds = time.perf_counter() - t0
    report.generation = lab.refresh().generation
    return report


def _absorb(txn: Any, br: BatchResult, replaced: dict[str, dict[str, Any]], report: IngestReport) -> None:
    for table, path, rows in br.parts:
        txn.add_part(table, Path(path), rows)
    for ur in br.units:
        src = ur.source
        r = report.runners[ur.runner]
        r.files += 1
        r.trajectories += ur.trajectories
        r.steps += ur.steps
        r.tool_calls += ur.tool_calls
        r.records_seen += src["records_seen"]
        r.records_ingested += src["records_ingested"]
        r.records_quarantined += src["records_quarantined"]
        key = src["source_path"]
        old = replaced.get(key)
        txn.delete("sources", "source_path", [key])
        txn.delete("quarantine", "source_path", src["files"])
        if old is not None:
            gone = set(old.get("trajectory_ids") or []) - set(src["trajectory_ids"])
            # identical ids were rewritten in this transaction: delete the old copies by part
            old_ids = set(old.get("trajectory_ids") or [])
            if old_ids:
                txn.delete("trajectories", "trajectory_id", old_ids)
                txn.delete("steps", "trajectory_id", old_ids)
                for t in DERIVED_TABLES:
                    txn.delete(t, "trajectory_id", gone)
        txn.append("sources", [src])


def _record_dups_and_unknown(
    txn: Any,
    lab: Lab,
    unknown: list[tuple[Path, list[str]]],
    existing: dict[str, dict[str, Any]],
    dups: list[tuple[SourceUnit, str]],
    report: IngestReport,
    force: bool,
) -> None:
    now = datetime.now(timezone.utc)
    for u, other in dups:
        runner = get_adapter(u.adapter).runner
        key = str(u.primary)
        if other == key:  # same bytes as before, only the mtime changed
            old = dict(existing[key])
            files, sizes_, mtimes = _fingerprint(u)
            old.update(files=list(files), sizes=list(sizes_), mtimes_ns=list(mtimes))
            txn.delete("sources", "source_path", [key])
            txn.append("sources", [old])
            report.runners[runner].unchanged += 1
            continue
        report.runners[runner].duplicates += 1
        files, sizes_, mtimes = _fingerprint(u)
        txn.delete("sources", "source_path", [key])
        txn.append(
            "sources",
            [
                {
                    "source_path": key,
                    "files": list(files),
                    "sizes": list(sizes_),
                    "mtimes_ns": list(mtimes),
                    "digest": u.digest,
                    "runner": runner,
                    "format": u.adapter,
                    "status": "duplicate",
                    "duplicate_of": other,
                    "ingested_at": now,
                }
            ],
        )
    for path, tried in unknown:
        key = str(path)
        try:
            st = path.stat()
        except OSError:
            continue
        old = existing.get(key)
        if (
            not force
            and old is not None
            and old["sizes"] == [st.st_size]
            and old["mtimes_ns"] == [st.st_mtime_ns]
        ):
            continue
        raw = path.read_bytes() if st.st_size <= RAW_KEEP_MAX else None
        if st.st_size == 0:
            etype, why = "empty", "empty file"
        elif raw is not None and (b"\x00" in raw[:4096] or _not_text(raw[:4096])):
            etype, why = "binary", "binary data, not a trajectory file"
        else:
            etype, why = "unknown_format", "no adapter recognised this file"
        reason = f"{why}; tried: " + ("; ".join(tried) if tried else "no adapter handles this extension")
        report.unknown.append((key, reason))
        r = report.runners["unknown"]
        r.files += 1
        r.records_seen += 1
        r.records_quarantined += 1
        txn.delete("quarantine", "source_path", [key])
        txn.delete("sources", "source_path", [key])
        txn.append(
            "quarantine",
            [
                {
                    "source_path": key,
                    "reason": reason,
                    "error_type": etype,
                    "raw": raw,
                    "raw_size": st.st_size,
                    "ingested_at": now,
                }
            ],
        )
        txn.append(
            "sources",
            [
                {
                    "source_path": key,
                    "files": [key],
                    "sizes": [st.st_size],
                    "mtimes_ns": [st.st_mtime_ns],
                    "status": "unknown",
                    "records_seen": 1,
                    "records_quarantined": 1,
                    "error": reason,
                    "ingested_at": now,
                }
            ],
        )


def _record_meta(txn: Any, paths: list[Path], meta: MetaIndex, report: IngestReport) -> None:
    """Track meta sidecars in `sources` (so a changed sidecar re-ingests its folder); quarantine bad lines."""
    now = datetime.now(timezone.utc)
    bad: dict[str, int] = defaultdict(int)
    for f, line, reason, raw in meta.problems:
        bad[f] += 1
        txn.append(
            "quarantine",
            [
                {
                    "source_path": f,
                    "line": line,
                    "reason": reason,
                    "error_type": "meta",
                    "raw": raw,
                    "raw_size": len(raw),
                    "ingested_at": now,
                }
            ],
        )
    r = report.runners["meta"] if paths else None
    for p in paths:
        st = p.stat()
        key = str(p)
        txn.delete("sources", "source_path", [key])
        txn.delete("quarantine", "source_path", [key])
        n_lines = sum(1 for ln in p.read_bytes().splitlines() if ln.strip())
        assert r is not None
        r.files += 1
        r.records_seen += n_lines
        r.records_quarantined += bad[key]
        r.records_ingested += n_lines - bad[key]
        txn.append(
            "sources",
            [
                {
                    "source_path": key,
                    "files": [key],
                    "sizes": [st.st_size],
                    "mtimes_ns": [st.st_mtime_ns],
                    "runner": "meta",
                    "format": "trajlab-meta",
                    "status": "partial" if bad[key] else "ingested",
                    "records_seen": n_lines,
                    "records_ingested": n_lines - bad[key],
                    "records_quarantined": bad[key],
                    "ingested_at": now,
                }
            ],
        )


def _not_text(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return False
    except UnicodeDecodeError as e:
        return e.start < len(b) - 4  # a cut multi-byte char at the end is fine
