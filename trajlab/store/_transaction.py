"""A write transaction: parts staged under `LAB/_staging/<txn>`, row deletions, and the commit that
publishes them with one manifest rename (see `_publish`)."""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import __version__
from ..errors import LabError
from ..fsutil import naming_the_file
from ..schema import SCHEMA_VERSION, TABLES, arrow_schema, default_row
from . import _publish
from ._manifest import HISTORY_LIMIT, Manifest, PartEntry, TableEntry, read_manifest, utcnow, write_manifest
from ._parts import PartWriter, conform, new_part_name, parquet_options

if TYPE_CHECKING:
    from ._lab import Lab

STAGING = _publish.STAGING
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})  # a full disk, or the user's quota used up


def table_schema(name: str) -> pa.Schema:
    return arrow_schema(TABLES[name]) if name in TABLES else _unknown_table(name)


def _unknown_table(name: str) -> pa.Schema:
    raise LabError(f"unknown table {name!r}; known tables: {', '.join(TABLES)}")


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
