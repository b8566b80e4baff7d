"""`trajlab ingest`: discover, skip what is unchanged, parse in worker processes, commit atomically.

Workers write Parquet parts straight into the transaction's staging folder; the parent only adopts
them and records the `sources` rows, so it stays light and the speed-up with workers is near-linear.
Every COMMIT_EVERY_BYTES of input is one transaction: a crash loses at most the batch in flight, and
the lab is always one consistent generation.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from collections import Counter
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from ..batching import consecutive_groups
from ..errors import WorkerDiedError
from ..formats import SourceUnit, describe_json_error, get_adapter, loads_lenient
from ..fsutil import path_text
from ..sigutil import deferred_sigint
from ..store import Lab, Transaction
from ._discover import discover
from ._plan import Plan, fingerprint, make_plan
from ._report import IngestReport
from ._worker import (
    RAW_KEEP_MAX,
    BatchResult,
    init_pool_worker,
    init_worker,
    parse_batch,
    parse_batches_inline,
)

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

BATCH_BYTES = 48 << 20
MIN_BATCH_BYTES = 1 << 20
POOL_MIN_BYTES = 8 << 20  # below this, starting worker processes costs more than it saves
COMMIT_EVERY_BYTES = 4 << 30
DERIVED_TABLES = ("dag_nodes", "dag_edges", "dag_metrics")


def _batches(units: list[SourceUnit], sizes: dict[str, int], n_workers: int) -> list[list[SourceUnit]]:
    """Group units into batches, biggest units first, of about BATCH_BYTES (less when there is little
    input). With several workers the batches shrink towards the end (each about 1/(2N) of what is left,
    down to MIN_BATCH_BYTES), so that the workers finish together instead of one idling through the
    other's last big batch."""
    todo = sorted(units, key=lambda u: -sizes[path_text(u.primary)])
    left = sum(sizes[path_text(u.primary)] for u in todo) or 1
    cap = max(MIN_BATCH_BYTES, min(BATCH_BYTES, left // max(n_workers * 4, 1)))
    out: list[list[SourceUnit]] = []
    cur: list[SourceUnit] = []
    cur_bytes = 0
    target = cap
    for u in todo:
        if not cur and n_workers > 1:
            target = max(MIN_BATCH_BYTES, min(cap, left // (2 * n_workers)))
        size = sizes[path_text(u.primary)]
        cur.append(u)
        cur_bytes += size
        left -= size
        if cur_bytes >= target:
            out.append(cur)
            cur, cur_bytes = [], 0
    if cur:
        out.append(cur)
    return out


def _chunks(
    batches: list[list[SourceUnit]], sizes: dict[str, int], limit: int
) -> Iterator[list[list[SourceUnit]]]:
    """Consecutive batches of at least `limit` input bytes: one transaction each."""
    return consecutive_groups(batches, lambda b: sum(sizes[path_text(u.primary)] for u in b), limit)


def _pool(n_workers: int, defaults: dict[str, Any], meta: Any) -> ProcessPoolExecutor:
    """Worker processes. `fork` where it is safe and cheap (Linux, Python < 3.12: pyarrow and xxhash
    re-initialise after fork); `forkserver` elsewhere, which pays one import of the worker module.
    (A ProcessPoolExecutor, not a multiprocessing.Pool: when a worker dies, a Pool replaces it and
    waits forever for the batch it lost; the executor fails every batch with BrokenProcessPool.)"""
    methods = mp.get_all_start_methods()
    ctx: BaseContext
    if "fork" in methods and sys.version_info < (3, 12):
        ctx = mp.get_context("fork")
    elif "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["trajlab.ingest._worker"])
    else:
        ctx = mp.get_context("spawn")
    return ProcessPoolExecutor(
        n_workers, mp_context=ctx, initializer=init_pool_worker, initargs=(defaults, meta)
    )


def _pooled(pool: ProcessPoolExecutor, jobs: list[Any]) -> Generator[BatchResult, None, None]:
    """`parse_batch` of every job in the workers, results as they finish. If anything fails (a batch,
    the caller, Ctrl-C), the batches not started are cancelled and the running ones are waited for
    before the error goes on: the transaction then removes its staging folder, and no worker may
    still be writing into it (it would leave part files behind). A dead worker has the pool kill
    the others; shutting down waits for that too."""
    futures: list[Future[BatchResult]] = []
    try:
        with deferred_sigint():  # the first submit forks the workers (see trajlab.sigutil)
            futures += [pool.submit(parse_batch, job) for job in jobs]
        for f in as_completed(futures):
            yield f.result()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise


def ingest(
    paths: Sequence[str | Path],
    out: str | Path,
    workers: int | None = None,
    defaults: dict[str, Any] | None = None,
    progress: bool = True,
    force: bool = False,
    commit_every_bytes: int | None = None,
    meta_files: list[str | Path] | None = None,
) -> IngestReport:
    """Ingest trajectories under `paths` into the lab at `out` (created if needed); incremental and idempotent."""
    t0 = time.perf_counter()
    # Plan and commit under one hold of the writer lock: a plan made against one generation and
    # committed on top of another writer's would add the same runs twice. Taking it also cleans up
    # after a writer that died (even when this run then finds nothing to write). A lab this run
    # creates is removed again if the run fails before its first commit (a full disk, Ctrl-C).
    with Lab.creating(out) as lab:
        report = IngestReport(lab=lab.root)
        disc = discover(list(paths), exclude=[lab.root])
        report.missing = [path_text(p) for p in disc.missing]
        report.skipped = len(disc.skipped)
        report.unreadable = [(path_text(p), why) for p, why in disc.unreadable]
        defaults = {k: v for k, v in (defaults or {}).items() if v not in (None, [], ())}
        plan = make_plan(lab, disc, [Path(m) for m in meta_files or []], force)
        report.vanished = list(plan.vanished)
        for runner, n in plan.unchanged.items():
            report.runners[runner].unchanged += n
        report.reparsed = dict(Counter(plan.reparsed.values()))

        n_workers = max(1, workers or min(os.cpu_count() or 1, 8))
        batches = _batches(plan.todo, plan.sizes, n_workers)
        total_bytes = sum(plan.sizes[path_text(u.primary)] for u in plan.todo)
        meta = plan.meta if plan.meta else None
        use_pool = n_workers > 1 and len(batches) > 1 and total_bytes >= POOL_MIN_BYTES
        pool = _pool(n_workers, defaults, meta) if use_pool else None
        if pool is None:
            init_worker(defaults, meta)
        bar = tqdm(
            total=total_bytes, unit="B", unit_scale=True, desc="ingest", disable=not progress, leave=False
        )
        bookkeeping = bool(
            plan.duplicates or plan.touched or plan.unknown or plan.meta_changed or plan.meta_gone
        )
        committed_units = committed_bytes = 0
        try:
            chunks = list(_chunks(batches, plan.sizes, commit_every_bytes or COMMIT_EVERY_BYTES))
            if not chunks and bookkeeping:
                chunks = [[]]
            for i, chunk in enumerate(chunks):
                with lab.write("ingest") as txn:
                    if i == 0:
                        _record_bookkeeping(txn, plan, report)
                    jobs = [(b, str(txn.staging_dir), txn.generation) for b in chunk]
                    results = _pooled(pool, jobs) if pool else parse_batches_inline(jobs)
                    try:
                        for br in results:
                            _absorb(txn, br, plan, report)
                            bar.update(br.bytes)
                    finally:
                        results.close()  # on an error: no worker writes into staging any more
                    txn.summary["ingest"] = {"units": sum(len(b) for b in chunk)}
                report.commits += 1
                committed_units += sum(len(b) for b in chunk)
                committed_bytes += sum(plan.sizes[path_text(u.primary)] for b in chunk for u in b)
        except KeyboardInterrupt:
            raise IngestInterrupted(
                lab.root, report.commits, committed_units, committed_bytes, total_bytes, removed=lab.created
            ) from None
        except BrokenProcessPool:
            kept = (
                f"the {report.commits} transaction(s) this run committed are kept: {committed_units} files, "
                f"{committed_bytes / 1e6:,.1f} of {total_bytes / 1e6:,.1f} MB"
                if report.commits
                else "this run committed nothing"
            )
            state = (
                "the lab this run created is removed again"
                if lab.created and not report.commits
                else f"the lab is at generation {lab.refresh().generation}"
            )
            raise WorkerDiedError(
                f"{lab.root}: an ingest worker process died (killed by a signal, or out of memory?); the "
                f"transaction in flight was rolled back and {state} ({kept}); run the same command again "
                "to ingest the rest (files already ingested are skipped)"
            ) from None
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            bar.close()
    report.bytes = total_bytes
    report.seconds = time.perf_counter() - t0
    report.generation = lab.refresh().generation
    return report


class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C during `ingest`: the transactions committed before it are kept (the one in flight is
    rolled back), and the next run skips the files they ingested. With `removed`, the run had created
    the lab and committed nothing, so the lab is removed again (`Lab.creating`)."""

    def __init__(
        self, lab: Path, commits: int, units: int, bytes_done: int, bytes_total: int, removed: bool = False
    ):
        super().__init__("ingest interrupted")
        self.lab, self.commits, self.units = lab, commits, units
        self.bytes_done, self.bytes_total = bytes_done, bytes_total
        self.removed = removed and not commits

    def format(self) -> str:
        if self.removed:
            return (
                f"interrupted: nothing was committed and the lab this run created, {self.lab}, is removed "
                "again; run the same command again to ingest"
            )
        return (
            f"interrupted: {self.commits} committed transactions kept in {self.lab} ({self.units} files, "
            f"{self.bytes_done / 1e6:,.1f} of {self.bytes_total / 1e6:,.1f} MB); the transaction in flight was "
            "rolled back; run the same command again to ingest the rest (files already ingested are skipped)"
        )


def _absorb(txn: Transaction, br: BatchResult, plan: Plan, report: IngestReport) -> None:
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
        for q in ur.quarantined:
            report.note_quarantined(*q)
        key = src["source_path"]
        # a unit parsed again by a changed adapter may have new steps under the same ids: its DAGs go too
        keep = set() if key in plan.reparsed else set(src["trajectory_ids"])
        _forget(txn, key, src["files"], plan.replaced.get(key), keep, plan.shared)
        if key in plan.moved:  # the same bytes were ingested under the old path: drop those rows
            old_key = plan.moved[key]
            _forget(txn, old_key, [], plan.existing.get(old_key), set(src["trajectory_ids"]))
        txn.append("sources", [src])


def _forget(
    txn: Transaction,
    key: str,
    files: list[str],
    old: dict[str, Any] | None,
    keep_ids: set[str] | None = None,
    shared: set[str] | frozenset[str] = frozenset(),
) -> None:
    """Delete what an earlier ingest of this unit wrote (new rows of this transaction are not touched).

    Quarantine rows are the unit's by `unit_path`; rows of labs written before that column existed are
    found by file, except files shared with other units (their rows may be the other units')."""
    txn.delete("sources", "source_path", [key])
    txn.delete("quarantine", "unit_path", [key])
    own = [f for f in [key, *files, *((old or {}).get("files") or [])] if f not in shared]
    txn.delete("quarantine", "source_path", own)
    old_ids = set((old or {}).get("trajectory_ids") or [])
    if old_ids:
        txn.delete("trajectories", "trajectory_id", old_ids)
        txn.delete("steps", "trajectory_id", old_ids)
        # Derived rows of runs that still exist with the same id (same bytes, new meta) stay valid.
        for t in DERIVED_TABLES:
            txn.delete(t, "trajectory_id", old_ids - (keep_ids or set()))


def _record_bookkeeping(txn: Transaction, plan: Plan, report: IngestReport) -> None:
    now = datetime.now(timezone.utc)
    for u in plan.touched:  # same bytes as before, only the mtime changed
        key = path_text(u.primary)
        row = dict(plan.existing[key])
        files, sizes, mtimes = fingerprint(u)
        row.update(files=list(files), sizes=list(sizes), mtimes_ns=list(mtimes))
        txn.delete("sources", "source_path", [key])
        txn.append("sources", [row])
        report.runners[get_adapter(u.adapter).runner].unchanged += 1
    for u, other in plan.duplicates:
        runner = get_adapter(u.adapter).runner
        key = path_text(u.primary)
        report.runners[runner].duplicates += 1
        report.duplicates.append((key, other))
        files, sizes, mtimes = fingerprint(u)
        _forget(txn, key, list(files), plan.replaced.get(key), shared=plan.shared)
        txn.append(
            "sources",
            [
                {
                    "source_path": key,
                    "files": list(files),
                    "sizes": list(sizes),
                    "mtimes_ns": list(mtimes),
                    "digest": u.digest,
                    "runner": runner,
                    "format": u.adapter,
                    "adapter_version": get_adapter(u.adapter).version,
                    "status": "duplicate",
                    "duplicate_of": other,
                    "ingested_at": now,
                }
            ],
        )
    for path, tried in plan.unknown:
        _record_unknown(txn, path, tried, report, now)
    _record_meta(txn, plan, report, now)


def classify_unreadable(path: Path, size: int, raw: bytes | None) -> tuple[str, str, int | None]:
    """(error_type, why, byte offset) for a file no adapter claimed: empty, binary, broken JSON, or other."""
    if size == 0:
        return "empty", "empty file", 0
    if raw is None:
        return "unknown_format", "no adapter recognised this file", None
    sample = raw[:4096]
    if b"\x00" in sample:
        return "binary", "binary data, not a trajectory file", 0
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(sample) - 4:  # a multi-byte char cut at the sample's end is fine
            return "binary", f"not UTF-8 text (invalid byte at {e.start})", e.start
    text = raw.lstrip()
    if text[:1] in (b"{", b"["):
        first = raw if path.suffix.lower() == ".json" else raw.split(b"\n", 1)[0]
        try:
            loads_lenient(first)
        except Exception as e:
            etype, why, pos = describe_json_error(
                first, e, at_end=len(first) == len(raw) and not raw.endswith(b"\n")
            )
            if etype == "truncated":
                why = f"truncated JSON, cut off at byte {len(first)}"
            return etype, f"{why}; no adapter recognised the rest", pos
    return "unknown_format", "no adapter recognised this file", None


def _record_unknown(
    txn: Transaction, path: Path, tried: list[str], report: IngestReport, now: datetime
) -> None:
    key = path_text(path)
    try:
        st = path.stat()
        raw = path.read_bytes() if st.st_size <= RAW_KEEP_MAX else None
    except OSError as e:
        report.vanished.append(f"{key} ({e})")
        return
    etype, why, offset = classify_unreadable(path, st.st_size, raw)
    reason = f"{path.name}: {why}; tried: " + (
        "; ".join(tried) if tried else "no adapter handles this extension"
    )
    report.unknown.append((key, reason))
    r = report.runners["unknown"]
    r.files += 1
    r.records_seen += 1
    r.records_quarantined += 1
    txn.delete("quarantine", "source_path", [key])
    txn.delete("sources", "source_path", [key])
    q = {
        "source_path": key,
        "byte_offset": offset,
        "reason": reason,
        "error_type": etype,
        "raw": raw,
        "raw_size": st.st_size,
        "ingested_at": now,
        "unit_path": key,
    }
    txn.append("quarantine", [q])
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


def _record_meta(txn: Transaction, plan: Plan, report: IngestReport, now: datetime) -> None:
    """Track changed meta sidecars in `sources` (a change re-ingests the runs it applies to) and
    quarantine their bad lines; forget sidecars that were deleted."""
    for key in plan.meta_gone:
        txn.delete("sources", "source_path", [key])
        txn.delete("quarantine", "source_path", [key])
    for p in plan.meta_changed:
        key = path_text(p)
        st = p.stat()
        bad = [q for q in plan.meta.problems if q.path == key]
        n = plan.meta.lines.get(key, 0)
        r = report.runners["meta"]
        r.files += 1
        r.records_seen += n
        r.records_quarantined += len(bad)
        r.records_ingested += n - len(bad)
        txn.delete("sources", "source_path", [key])
        txn.delete("quarantine", "source_path", [key])
        for q in bad:
            report.note_quarantined(q.path, q.line, q.offset, q.reason)
            txn.append(
                "quarantine",
                [
                    {
                        "source_path": q.path,
                        "line": q.line or None,
                        "byte_offset": q.offset,
                        "runner": "meta",
                        "reason": q.reason,
                        "error_type": "meta",
                        "raw": q.raw,
                        "raw_size": len(q.raw),
                        "ingested_at": now,
                        "unit_path": key,
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
                    "runner": "meta",
                    "format": "trajlab-meta",
                    "status": "partial" if bad else "ingested",
                    "records_seen": n,
                    "records_ingested": n - len(bad),
                    "records_quarantined": len(bad),
                    "ingested_at": now,
                }
            ],
        )
