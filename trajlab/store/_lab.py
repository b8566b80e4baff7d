"""A lab: a folder of plain Parquet tables plus the manifest that says which parts are current.

Layout::

    LAB/lab.json                      manifest (schema version, generation, parts of every table, history)
    LAB/<table> -> .gen/<table>/g<gen>   symlink to the folder of the table's current parts
    LAB/.gen/<table>/g<gen>/part-g<gen>-<id>.parquet
    LAB/_staging/<txn>/...            parts of a write in progress (ignored by Parquet readers: leading _)
    LAB/.lock                         writer lock

Any Parquet reader can read `LAB/<table>/*.parquet` directly and sees one whole generation of that
table (see `_publish`). Writes are atomic: a crash before the manifest is replaced leaves the previous
generation intact, and the next writer removes the leftovers.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .. import __version__
from ..errors import LabError, LabLockedError
from ..fsutil import WHOLE_DISK_ERRNOS, make_dirs, naming_the_file, os_reason, removing_new_dirs_on_error
from ..schema import SCHEMA_VERSION, TABLES, arrow_schema, default_row
from . import _publish
from ._manifest import (
    HISTORY_LIMIT,
    MANIFEST_NAME,
    Manifest,
    PartEntry,
    TableEntry,
    read_manifest,
    utcnow,
    write_manifest,
)
from ._migrations import apply_migrations, pending_migrations
from ._parts import PartWriter, conform, new_part_name, parquet_options
from ._select import rows_where

STAGING = _publish.STAGING
LOCK_NAME = ".lock"
LOCK_WAIT_ENV = "TRAJLAB_LOCK_WAIT"
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})  # a full disk, or the user's quota used up


def table_schema(name: str) -> pa.Schema:
    return arrow_schema(TABLES[name]) if name in TABLES else _unknown_table(name)


def _unknown_table(name: str) -> pa.Schema:
    raise LabError(f"unknown table {name!r}; known tables: {', '.join(TABLES)}")


class Lab:
    """Read access to a lab, and the entry point for writes (`with lab.write(...) as txn`)."""

    hidden: frozenset[str] = frozenset()
    """Tables this object reads as absent (`hiding`); caches keyed by lab and generation include it."""

    created: bool = False
    """True for the lab `Lab.creating` made in its block: removed again if the block fails while the
    lab is still at generation 0."""

    def __init__(self, root: Path, manifest: Manifest):
        self.root = root
        self.manifest = manifest

    # -- opening ---------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], create: bool = False) -> Lab:
        root = Path(path).expanduser().absolute()
        if root.exists() and not root.is_dir():
            raise LabError(f"{root}: is a file, not a lab folder")
        if not (root / MANIFEST_NAME).exists():
            if not create:
                if not root.exists():
                    raise LabError(f"{root}: no such lab (build one with `trajlab ingest PATH --out {root}`)")
                raise LabError(f"{root}: not a lab (no {MANIFEST_NAME})")
            return cls.create(root)
        manifest = read_manifest(root)
        if manifest.schema_version > SCHEMA_VERSION:
            raise LabError(
                f"{root}: lab schema v{manifest.schema_version} is newer than this trajlab "
                f"(v{SCHEMA_VERSION}); upgrade trajlab"
            )
        try:
            _check_unlisted_tables(root, manifest)
        except LabError:
            # A writer may have committed a new table between our read of the manifest and the check
            # (the manifest is replaced before the table's symlink appears): read it again once.
            fresh = read_manifest(root)
            if fresh.generation == manifest.generation:
                raise
            manifest = fresh
            _check_unlisted_tables(root, manifest)
        lab = cls(root, manifest)
        if pending_migrations(manifest.schema_version, manifest.migrations):
            with lab.write("migrate") as txn:
                apply_migrations(txn)
        return lab

    @classmethod
    def create(cls, path: str | os.PathLike[str]) -> Lab:
        """The lab at `path`, made (generation 0) unless it exists. If making it fails (a full disk), no
        trace of it is left: no folder if there was none, an existing folder as it was."""
        root = _creatable(path)
        with cls._making(root) as (lab, _new):
            return lab

    @classmethod
    @contextmanager
    def creating(cls, path: str | os.PathLike[str], wait_s: float | None = None) -> Iterator[Lab]:
        """`Lab.open(path, create=True)` holding the writer lock for the block (as `exclusive`), for a
        command whose first write makes the lab what it is (`trajlab ingest --out NEW`): if the block
        fails while the lab this call made is still at generation 0, the lab is removed again (the
        folder too if this call made it), so a first write that does not fit leaves no empty lab.
        A lab that existed, or that holds a commit, is never removed."""
        root = _creatable(path)
        if (root / MANIFEST_NAME).exists():
            lab = cls.open(root)
            with lab.exclusive(wait_s):
                yield lab
            return
        with cls._making(root, wait_s) as (lab, new):
            if not new:  # another process made it first
                lab = cls.open(root)  # (under the lock: a migration writes within this hold)
            lab.created = new
            with lab.exclusive(wait_s):
                yield lab

    @classmethod
    @contextmanager
    def _making(cls, root: Path, wait_s: float | None = None) -> Iterator[tuple[Lab, bool]]:
        """Hold the lock of the lab at `root`, writing its first manifest unless it has one; yield the
        lab and whether this call made it. On an exception, what this call made is removed while the
        lock is still held (see `_unmake`), then the folders it made, if empty."""
        # (removing_new_dirs_on_error: the lab folder and its parents this call made, once empty)
        with removing_new_dirs_on_error(), _lock(root, wait_s, make_folder=True) as made_lock:
            if (root / MANIFEST_NAME).exists():
                yield cls(root, read_manifest(root)), False
                return
            made_manifest = False
            try:
                for name in os.listdir(root):  # a creation that died before lab.json was in place
                    if _publish.is_manifest_tmp(name):
                        (root / name).unlink(missing_ok=True)
                now = utcnow().isoformat()
                m = Manifest(created_at=now, updated_at=now, trajlab_version=__version__)
                try:
                    write_manifest(root, m)
                except OSError as e:
                    raise LabError(
                        f"{root}: cannot create the lab: {os_reason(e)} (writing {MANIFEST_NAME})"
                    ) from e
                made_manifest = True
                yield cls(root, m), True
            except BaseException as e:
                if _unmake(root, made_lock, made_manifest):
                    _raise_not_created(root, e)
                raise

    def refresh(self) -> Lab:
        self.manifest = read_manifest(self.root)
        return self

    def hiding(self, tables: Iterable[str]) -> Lab:
        """This lab at its current generation with `tables` read as absent (empty), e.g. the judge's
        labels for a blind reviewer; the view cannot write. See `trajlab.store._hidden`."""
        from ._hidden import HidingLab

        return HidingLab(self.root, self.manifest, tables)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        return self.manifest.generation

    def tables(self) -> list[str]:
        return [t for t in TABLES if self.has(t)]

    def has(self, table: str) -> bool:
        e = self.manifest.tables.get(table)
        return e is not None and e.rows > 0

    def rows(self, table: str) -> int:
        e = self.manifest.tables.get(table)
        return e.rows if e else 0

    def files(self, table: str) -> list[Path]:
        e = self.manifest.tables.get(table)
        return [self.root / p.path for p in e.parts] if e else []

    def dataset(self, table: str) -> ds.Dataset:
        schema = table_schema(table)
        files = [str(f) for f in self.files(table)]
        return ds.dataset(files, schema=schema, format="parquet")

    def _retrying(self, fn, table: str):  # type: ignore[no-untyped-def]
        """Run a read; if a concurrent writer removed a part we were about to read, reload and retry.
        A part that stays missing or cannot be read is a LabError naming the table (and pyarrow's the file)."""
        for attempt in range(5):
            try:
                return fn()
            except (FileNotFoundError, OSError) as e:
                if attempt == 4 or not _missing_part(e):
                    raise _unreadable(self.root, table, e) from e
                time.sleep(0.05 * (attempt + 1))
                self.refresh()
            except pa.ArrowInvalid as e:
                if ".parquet" not in str(e):  # a caller's bad column or filter, not a damaged part
                    raise
                raise _unreadable(self.root, table, e) from e
        raise AssertionError("unreachable")

    def read(
        self,
        table: str,
        columns: Sequence[str] | None = None,
        filter: ds.Expression | None = None,
    ) -> pa.Table:
        """The whole table (or selected columns/rows) as one Arrow table; empty with the schema if absent."""
        cols = list(columns) if columns else None
        return self._retrying(lambda: self.dataset(table).to_table(columns=cols, filter=filter), table)

    def iter_batches(
        self, table: str, columns: Sequence[str] | None = None, batch_size: int = 65_536
    ) -> Iterator[pa.RecordBatch]:
        """Stream a table in record batches (bounded memory)."""
        try:
            yield from self.dataset(table).to_batches(
                columns=list(columns) if columns else None, batch_size=batch_size
            )
        except (OSError, pa.ArrowInvalid) as e:
            if isinstance(e, pa.ArrowInvalid) and ".parquet" not in str(e):
                raise
            raise _unreadable(self.root, table, e) from e

    def read_trajectory(
        self, table: str, trajectory_id: str, columns: Sequence[str] | None = None
    ) -> pa.Table:
        """One trajectory's rows of `table` (selected columns), in part and row order. Unlike `read` with
        a filter, memory follows that trajectory's rows, not the row groups holding them: only the row
        groups whose statistics may hold it are read, a few thousand rows at a time (see `_select`)."""
        schema = table_schema(table)
        return self._retrying(
            lambda: rows_where(self.files(table), schema, "trajectory_id", trajectory_id, columns), table
        )

    def read_trajectory_steps(self, trajectory_id: str, columns: Sequence[str] | None = None) -> pa.Table:
        t = self.read_trajectory("steps", trajectory_id, columns)
        return t.sort_by("step_index") if "step_index" in t.column_names else t

    def to_polars(self, table: str, columns: Sequence[str] | None = None):  # -> polars.DataFrame
        import polars as pl

        return pl.from_arrow(self.read(table, columns))

    def to_pandas(self, table: str, columns: Sequence[str] | None = None):  # -> pandas.DataFrame
        return self.read(table, columns).to_pandas()

    def connect(self):  # -> duckdb.DuckDBPyConnection
        """A read-only DuckDB connection with one view per table (see `trajlab.store.connect`)."""
        from ._duckdb import connect

        return connect(self)

    # -- writing ---------------------------------------------------------------------------------

    @contextmanager
    def exclusive(self, wait_s: float | None = None) -> Iterator[Lab]:
        """Hold the writer lock across several transactions (and whatever is planned between them):
        `write` calls of this thread inside the block do not wait for it again, and no other writer can
        commit in between. On entry the manifest is re-read and the leftovers of a writer that died are
        cleaned up (staging, an unswapped symlink after a commit, a half-written manifest), so that a
        caller that ends up writing nothing still leaves the lab repaired. In a lab this process may not
        write to, nothing is locked: a caller that only reads works as before, and `write` says why not."""
        if not os.access(self.root, os.W_OK | os.X_OK):
            yield self
            return
        with _lock(self.root, wait_s=wait_s):
            self.manifest = read_manifest(self.root)
            if _publish.needs_recovery(self.root, self.manifest, list(TABLES)):
                self._recover()
            yield self

    def _recover(self) -> None:
        """`_publish.recover` under the lock; a full disk (no inode for a symlink swap) is a LabError."""
        try:
            _publish.recover(self.root, self.manifest, list(TABLES))
        except OSError as e:
            if e.errno not in NO_SPACE:
                raise
            name = Path(os.fsdecode(e.filename2 or e.filename or MANIFEST_NAME))
            with suppress(ValueError):
                name = name.relative_to(self.root)
            raise LabError(
                f"{self.root}: {os.strerror(e.errno or errno.ENOSPC)} (writing {name}) while finishing an "
                f"earlier write that stopped part-way; nothing else was written and the lab reads as "
                f"generation {self.generation}; free some space and run the command again"
            ) from e

    @contextmanager
    def write(self, operation: str, wait_s: float | None = None) -> Iterator[Transaction]:
        """Exclusive write transaction; commits on normal exit, rolls back on exception."""
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise LabError(
                f"{self.root}: the lab folder is read-only; {operation!r} needs to write to it (nothing was written)"
            )
        with _lock(self.root, wait_s=wait_s):
            self.manifest = read_manifest(self.root)
            self._recover()
            txn: Transaction | None = None
            try:
                txn = Transaction(self, operation)
                yield txn
                txn.commit()
            except BaseException as e:
                if txn is not None and not txn.done:
                    txn.abort()
                if isinstance(e, OSError) and e.errno in NO_SPACE:
                    raise _no_space(self, operation, txn, e) from e
                raise

    def append(
        self, table: str, rows: Iterable[Mapping[str, Any]] | pa.Table, operation: str = "append"
    ) -> None:
        with self.write(operation) as txn:
            txn.append(table, rows)

    def replace(
        self, table: str, rows: Iterable[Mapping[str, Any]] | pa.Table, operation: str = "replace"
    ) -> None:
        with self.write(operation) as txn:
            txn.clear(table)
            txn.append(table, rows)


class Transaction:
    """Stages new parts and row deletions; `commit` publishes them with one manifest rename."""

    def __init__(self, lab: Lab, operation: str):
        self.lab = lab
        self.operation = operation
        self.generation = lab.manifest.generation + 1
        self.id = f"g{self.generation:06d}-{uuid.uuid4().hex[:8]}"
        self.staging_dir = lab.root / STAGING / self.id
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        self._writers: dict[str, PartWriter] = {}
        self._staged: dict[str, list[tuple[Path, int]]] = {}
        self._deletes: dict[str, list[tuple[str, set[Any]]]] = {}
        self._cleared: set[str] = set()
        self.summary: dict[str, Any] = {}
        self.durable = True  # fsync parts and folders before the manifest switch
        self.done = False

    def writer(self, table: str) -> PartWriter:
        if table not in self._writers:
            self._writers[table] = PartWriter(
                self.staging_dir / table, table_schema(table), default_row(TABLES[table]), self.generation
            )
        return self._writers[table]

    def append(self, table: str, rows: Iterable[Mapping[str, Any]] | pa.Table) -> None:
        w = self.writer(table)
        if isinstance(rows, pa.Table):
            w.write_table(rows)
        else:
            w.extend(rows)

    def add_part(self, table: str, path: Path, rows: int | None = None) -> None:
        """Adopt a Parquet file written elsewhere (e.g. by a worker process) into this transaction."""
        path = Path(path)
        if rows is None:
            rows = pq.ParquetFile(path).metadata.num_rows
        if rows == 0:
            path.unlink(missing_ok=True)
            return
        self._staged.setdefault(table, []).append((path, rows))

    def delete(self, table: str, column: str, values: Iterable[Any]) -> None:
        """Delete rows whose `column` is in `values` (applied at commit by rewriting affected parts)."""
        vals = set(values)
        if vals:
            self._deletes.setdefault(table, []).append((column, vals))

    def clear(self, table: str) -> None:
        """Drop every existing part of the table (new rows appended in this transaction are kept)."""
        table_schema(table)
        self._cleared.add(table)

    def abort(self) -> None:
        try:
            for w in self._writers.values():
                w.abort()
        finally:
            shutil.rmtree(self.staging_dir, ignore_errors=True)
            self.done = True

    # -- commit ----------------------------------------------------------------------------------

    def commit(self) -> None:
        """Publish: close writers, rewrite parts hit by deletes, move staged parts into their table
        folders, fsync, then replace the manifest (the atomic step). On any error before the manifest
        switch the moved parts are removed again and the previous generation stays current."""
        if self.done:
            return
        lab = self.lab
        manifest = lab.manifest
        for table, w in self._writers.items():
            for path, rows in w.close():
                self._staged.setdefault(table, []).append((path, rows))
        changed = set(self._staged) | set(self._deletes) | self._cleared
        if not changed:
            self.abort()
            return
        now = utcnow().isoformat()
        new_tables = dict(manifest.tables)
        plans: list[_publish.TablePlan] = []
        stats: dict[str, dict[str, int]] = {}
        for table in sorted(changed):
            schema = table_schema(table)
            old = manifest.tables.get(table)
            old_parts = old.parts if old else []
            kept: list[PartEntry] = []
            removed_rows = 0
            if table in self._cleared:
                removed_rows += sum(p.rows for p in old_parts)
            else:
                for part in old_parts:
                    rewritten = self._apply_deletes(table, part, schema)
                    if rewritten is None:
                        kept.append(part)
                        continue
                    new_path, new_rows = rewritten
                    removed_rows += part.rows - new_rows
                    if new_path is not None:
                        self._staged.setdefault(table, []).append((new_path, new_rows))
            plan = _publish.TablePlan(
                table,
                self.generation,
                old.generation if old else None,
                kept=[lab.root / p.path for p in kept],
            )
            parts = [PartEntry(plan.part_path(Path(p.path).name), p.rows, p.bytes) for p in kept]
            added = 0
            for staged, rows in self._staged.get(table, []):
                plan.new.append(staged)
                parts.append(PartEntry(plan.part_path(staged.name), rows, staged.stat().st_size))
                added += rows
            kept = parts
            if not added and not removed_rows and table not in self._cleared:
                continue  # deletes that matched nothing: the table is unchanged
            plans.append(plan)
            new_tables[table] = TableEntry(
                parts=kept, schema_version=SCHEMA_VERSION, updated_at=now, generation=self.generation
            )
            stats[table] = {"added": added, "removed": removed_rows, "rows": sum(p.rows for p in kept)}
        if not plans:
            self.abort()
            return
        history = [
            *manifest.history,
            {
                "generation": self.generation,
                "operation": self.operation,
                "at": now,
                "tables": stats,
                **self.summary,
            },
        ][-HISTORY_LIMIT:]
        new_manifest = Manifest(
            format=manifest.format,
            schema_version=SCHEMA_VERSION,
            generation=self.generation,
            created_at=manifest.created_at or now,
            updated_at=now,
            trajlab_version=__version__,
            tables=new_tables,
            migrations=manifest.migrations,
            history=history,
        )
        root = lab.root
        try:
            _publish.build(root, plans, self.durable)  # new table folders, invisible so far
            write_manifest(root, new_manifest)  # the commit point
        except BaseException:
            # Roll back to whatever manifest is on disk (the old one unless its rename went through).
            on_disk = read_manifest(root)
            _publish.recover(root, on_disk, list(TABLES))
            lab.manifest = on_disk
            if on_disk.generation != self.generation:
                self.abort()
            self.done = True
            raise
        lab.manifest = new_manifest
        self.done = True
        _publish.switch(root, plans, self.durable)  # one symlink rename per table, for glob readers
        _publish.cleanup(root, plans)
        shutil.rmtree(self.staging_dir, ignore_errors=True)

    def _apply_deletes(
        self, table: str, part: PartEntry, schema: pa.Schema
    ) -> tuple[Path | None, int] | None:
        """None if the part is untouched; else (rewritten path or None if emptied, remaining rows)."""
        specs = self._deletes.get(table)
        if not specs:
            return None
        path = self.lab.root / part.path
        try:
            kept = self._kept_rows(table, path, part, specs, schema)
        except FileNotFoundError:
            raise LabError(f"{path}: part of table {table!r} listed in lab.json is missing") from None
        except (OSError, pa.ArrowException) as e:
            raise LabError(f"{path}: part of table {table!r} is unreadable ({e})") from None
        if kept is None:
            return None
        if kept.num_rows == 0:
            return (None, 0)
        # (a failure here is a write failure, a full disk say, not a damaged part)
        out = self.staging_dir / table / new_part_name(self.generation)
        out.parent.mkdir(parents=True, exist_ok=True)
        with naming_the_file(out):
            pq.write_table(kept, out, **parquet_options(schema))
        return (out, kept.num_rows)

    def _kept_rows(
        self, table: str, path: Path, part: PartEntry, specs: list[tuple[str, set[Any]]], schema: pa.Schema
    ) -> pa.Table | None:
        """The part's rows that survive the deletes; None if none of them is deleted."""
        pf = pq.ParquetFile(path)
        present = set(pf.schema_arrow.names)
        mask = None
        for column, values in specs:
            if column not in schema.names:
                raise LabError(f"cannot delete from {table!r} by unknown column {column!r}")
            if column not in present:  # a part written before the column existed: all nulls
                continue
            col = pf.read(columns=[column]).column(column)
            m = pc.is_in(col, value_set=pa.array(list(values), type=schema.field(column).type))
            m = pc.fill_null(m, False)
            mask = m if mask is None else pc.or_(mask, m)
        if mask is None:
            return None
        n_del = pc.sum(mask).as_py() or 0
        if n_del == 0:
            return None
        if n_del == part.rows:
            return schema.empty_table()
        return conform(pf.read(), schema).filter(pc.invert(mask))


# -- locking and recovery ------------------------------------------------------------------------


def lock_wait_s() -> float:
    """How long a writer waits for the lab lock: $TRAJLAB_LOCK_WAIT seconds, else 30."""
    raw = os.environ.get(LOCK_WAIT_ENV, "").strip()
    if not raw:
        return 30.0
    try:
        value = float(raw)
    except ValueError:
        raise LabError(f"{LOCK_WAIT_ENV}={raw!r} is not a number of seconds") from None
    if not value >= 0:
        raise LabError(f"{LOCK_WAIT_ENV}={raw!r} must be >= 0 seconds")
    return value


_held = threading.local()  # roots whose lock this thread holds (`Lab.exclusive` nests `write` in it)
_held_fds: set[int] = set()  # lock fds of this process, closed in forked children (see below)


def _close_held_locks_in_child() -> None:
    """A forked child (an ingest worker) must not keep the parent's lock alive: flock belongs to the
    open file, so a worker orphaned by a killed parent would otherwise lock the lab out until it dies.
    Closing the child's copy leaves the parent's lock in place."""
    for fd in list(_held_fds):
        with suppress(OSError):
            os.close(fd)
    _held_fds.clear()
    _held.__dict__.clear()


os.register_at_fork(after_in_child=_close_held_locks_in_child)


@contextmanager
def _lock(root: Path, wait_s: float | None = None, make_folder: bool = False) -> Iterator[bool]:
    """Hold the writer lock of the lab at `root` (flock of `root/.lock`); yield whether this call
    created the lock file (False when this thread already holds it). With `make_folder`, the lab
    folder is made (`make_dirs`) if missing, also when a failed creation removed it while we waited.

    A failed creation removes the lock file it made (`_unmake`) while it holds the lock, so a writer
    waiting on that file may be granted a lock on a file that is no longer at the path, which a later
    writer, opening the path afresh, would not see. So a lock is taken as held only once the file it
    is on is still the one at the path (same device and inode); otherwise the path is opened again.
    Nobody else removes the file, and only while holding its lock, so once that check passes the file
    stays at the path for as long as we hold it."""
    roots: set[Path] = _held.__dict__.setdefault("roots", set())
    if root in roots:  # this thread already holds it (inside `Lab.exclusive`)
        yield False
        return
    wait_s = lock_wait_s() if wait_s is None else wait_s
    deadline = time.monotonic() + wait_s
    while True:
        if make_folder:
            try:
                make_dirs(root)
            except OSError as e:
                raise LabError(f"{root}: cannot create the lab folder ({os_reason(e)})") from None
        fd, made = _open_lock_file(root)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LabLockedError(
                            f"{root}: another trajlab process is writing to this lab (waited {wait_s:g} s "
                            f"for {LOCK_NAME}; set {LOCK_WAIT_ENV} to wait longer)"
                        ) from None
                    time.sleep(0.05)
            if _is_at(fd, root / LOCK_NAME):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed by a failed creation while we waited: take the one at the path now
    try:
        roots.add(root)
        _held_fds.add(fd)
        try:
            yield made
        finally:
            roots.discard(root)
            _held_fds.discard(fd)
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _open_lock_file(root: Path) -> tuple[int, bool]:
    """An fd of `root/.lock` (created if missing) and whether this call created it."""
    path = root / LOCK_NAME
    try:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644), True
        except FileExistsError:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644), False
    except OSError as e:
        raise LabError(f"{path}: cannot take the writer lock ({os_reason(e)})") from None


def _is_at(fd: int, path: Path) -> bool:
    """Whether the file open as `fd` is the one at `path` now."""
    try:
        at = os.stat(path)
    except OSError:
        return False
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (at.st_dev, at.st_ino)


def _unmake(root: Path, made_lock: bool, made_manifest: bool) -> bool:
    """Undo a lab creation that failed: remove the manifest of generation 0 this process wrote, the
    empty staging and generation folders, and the lock file if this process created it; True if so
    (the lab folder then holds what it held before the creation, nothing if it is new).

    Called holding the lock, and only when everything in the folder is this creation's (or a lock
    file that was there before, which stays): a lab that has a commit, or any file we did not make,
    is left alone. Safe for other processes: none can have written to the lab (we held the lock from
    before its manifest existed), a reader that opened it at generation 0 read no part, and a writer
    waiting on the lock file we remove takes the lock at the path instead (see `_lock`). lab.json
    goes first, so from then on the folder is not a lab to anyone."""
    try:
        if made_manifest:
            m = read_manifest(root)
            if m.generation != 0 or m.tables:
                return False
        elif (root / MANIFEST_NAME).exists():
            return False
        names = os.listdir(root)
    except (OSError, LabError):
        return False
    for name in names:
        if name == LOCK_NAME or (name == MANIFEST_NAME and made_manifest) or _publish.is_manifest_tmp(name):
            continue
        if name in (STAGING, _publish.GEN) and _only_folders(root / name):
            continue
        return False
    try:
        if made_manifest:
            (root / MANIFEST_NAME).unlink()
        for name in names:
            if _publish.is_manifest_tmp(name):
                (root / name).unlink(missing_ok=True)
            elif name in (STAGING, _publish.GEN):
                shutil.rmtree(root / name)
        if made_lock:
            (root / LOCK_NAME).unlink()
    except OSError:
        return False
    return True


def _only_folders(top: Path) -> bool:
    """`top` is a folder (not a symlink) holding nothing but folders."""
    if top.is_symlink() or not top.is_dir():
        return False
    for dirpath, dirs, files in os.walk(top):
        if files or any(os.path.islink(os.path.join(dirpath, d)) for d in dirs):
            return False
    return True


def _raise_not_created(root: Path, e: BaseException) -> None:
    """Say a creation that ran out of space (and was undone) did not create the lab; other errors go on
    as they are."""
    cause = e if isinstance(e, OSError) else e.__cause__ if isinstance(e, LabError) else None
    if not isinstance(cause, OSError) or cause.errno not in WHOLE_DISK_ERRNOS:
        return
    where = ""
    if cause.filename:
        f = Path(os.fsdecode(cause.filename))
        with suppress(ValueError):
            f = f.relative_to(root)
        where = f" (writing {f})"
    elif isinstance(e, LabError) and MANIFEST_NAME in str(e):
        where = f" (writing {MANIFEST_NAME})"
    raise LabError(
        f"{root}: {os_reason(cause)}{where}; the lab was not created (nothing of it is left); "
        "free some space and run the command again"
    ) from cause


def _no_space(lab: Lab, operation: str, txn: Transaction | None, e: OSError) -> LabError:
    """The one-line error for a write that ran out of disk space: which lab and file, and what the
    lab holds now (the failed transaction was rolled back unless its manifest was already in place)."""
    where = ""
    if e.filename:
        f = Path(os.fsdecode(e.filename))
        with suppress(ValueError):
            f = f.relative_to(lab.root)
        where = f" (writing {f})"
    if txn is not None and lab.manifest.generation == txn.generation:
        state = f"the {operation!r} write was committed as generation {lab.generation}"
    else:
        state = f"the {operation!r} write was rolled back (the lab is as before it, at generation {lab.generation})"
    return LabError(
        f"{lab.root}: {os.strerror(e.errno or errno.ENOSPC)}{where}; {state}; "
        "free some space and run the command again"
    )


def _creatable(path: str | os.PathLike[str]) -> Path:
    """The absolute root for a lab at `path`: a lab, a missing or empty folder, or one holding only what
    a creation that died before writing lab.json leaves (its lock file, a temporary manifest)."""
    root = Path(path).expanduser().absolute()
    if root.exists() and not root.is_dir():
        raise LabError(f"{root}: is a file, not a lab folder")
    if root.exists() and not (root / MANIFEST_NAME).exists() and not _unfinished_lab(root):
        raise LabError(f"{root}: folder exists and is not empty; refusing to turn it into a lab")
    return root


def _unfinished_lab(root: Path) -> bool:
    """A folder holding only what a creation that died or failed before writing lab.json leaves: its
    lock file and a temporary manifest (an empty folder too)."""
    return all(n == LOCK_NAME or _publish.is_manifest_tmp(n) for n in os.listdir(root))


def _unreadable(root: Path, table: str, e: BaseException) -> LabError:
    return LabError(f"{root}: cannot read table {table!r}: {e}")


def _check_unlisted_tables(root: Path, manifest: Manifest) -> None:
    """A table folder on disk that the manifest does not list means a damaged manifest: reading would
    show the table as empty and the next write to it would delete its parts, so refuse to open."""
    for table in TABLES:
        link = root / table
        if table not in manifest.tables and (link.is_symlink() or link.is_dir()):
            raise LabError(
                f"{root / MANIFEST_NAME}: has no entry for table {table!r}, but {root / table} holds its "
                f"parts; the manifest is damaged (restore lab.json from a backup)"
            )


def _missing_part(e: BaseException) -> bool:
    return isinstance(e, FileNotFoundError) or "No such file" in str(e) or "not found" in str(e).lower()
