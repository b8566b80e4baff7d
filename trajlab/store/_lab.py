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
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:  # imported where used: pyarrow.dataset imports pandas (0.4 s of every CLI command)
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow.dataset as ds

from .. import __version__
from ..errors import LabError
from ..fsutil import os_reason, removing_new_dirs_on_error
from ..schema import SCHEMA_VERSION, TABLES
from . import _publish
from ._creation import _creatable, _raise_not_created, _unmake
from ._locking import _lock
from ._manifest import MANIFEST_NAME, Manifest, read_manifest, utcnow, write_manifest
from ._migrations import apply_migrations, pending_migrations
from ._parts import conform
from ._select import rows_where
from ._transaction import NO_SPACE, STAGING, Transaction, _no_space, table_schema

__all__ = ["STAGING", "Lab", "Transaction", "table_schema"]

T = TypeVar("T")


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
        import pyarrow.dataset as ds

        schema = table_schema(table)
        files = [str(f) for f in self.files(table)]
        return ds.dataset(files, schema=schema, format="parquet")

    def _retrying(self, fn: Callable[[], T], table: str) -> T:
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
        """Stream a table in record batches (bounded memory), part by part; a part written before a
        column existed reads it as nulls, as a dataset scan with the lab's schema does (read with
        pyarrow.parquet: a `dataset` would import pandas, about 0.4 s of a quick command)."""
        schema = table_schema(table)
        cols = list(columns) if columns else list(schema.names)
        for c in cols:
            if c not in schema.names:
                raise pa.ArrowInvalid(f"No match for FieldRef.Name({c}) in {schema}")
        out = pa.schema([schema.field(c) for c in cols])
        for f in self.files(table):
            try:
                with pq.ParquetFile(f) as pf:
                    read = [c for c in cols if c in pf.schema_arrow.names]
                    batches = pf.iter_batches(batch_size=batch_size, columns=read)
                    for b in batches:
                        yield from conform(pa.Table.from_batches([b]), out, missing_as_null=True).to_batches()
            except (OSError, pa.ArrowInvalid) as e:  # a missing or damaged part: name it and the table
                raise _unreadable(self.root, table, f"{f}: {e}") from e

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

    def to_polars(self, table: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        import polars as pl

        return cast("pl.DataFrame", pl.from_arrow(self.read(table, columns)))  # a Table gives a DataFrame

    def to_pandas(self, table: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        return self.read(table, columns).to_pandas()

    def connect(self) -> duckdb.DuckDBPyConnection:
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


def _unreadable(root: Path, table: str, e: BaseException | str) -> LabError:
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
