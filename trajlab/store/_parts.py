"""Turning row dicts into Arrow batches and streaming them into Parquet part files."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import SchemaError

PARQUET_OPTIONS: dict[str, Any] = {"compression": "zstd", "compression_level": 1, "write_statistics": True}
FLUSH_ROWS = 20_000
FLUSH_BYTES = 48 << 20
PART_MAX_ROWS = 2_000_000
PART_MAX_BYTES = 512 << 20


def rows_to_table(rows: list[Mapping[str, Any]], schema: pa.Schema, defaults: Mapping[str, Any]) -> pa.Table:
    """Columnar conversion of sparse row dicts; missing or None values of non-nullable columns get defaults."""
    cols = []
    for f in schema:
        name = f.name
        if f.nullable:
            values = [r.get(name) for r in rows]
        else:
            d = defaults.get(name)
            values = [v if (v := r.get(name)) is not None else d for r in rows]
            if d is None and any(v is None for v in values):
                i = next(i for i, v in enumerate(values) if v is None)
                raise SchemaError(f"column {name!r} is required but row {i} has no value")
        try:
            cols.append(pa.array(values, type=f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
            raise SchemaError(f"column {name!r}: {e}") from e
    extra = set().union(*(r.keys() for r in rows[:50])) - set(schema.names) if rows else set()
    if extra:
        raise SchemaError(f"unknown columns {sorted(extra)}; known: {schema.names}")
    return pa.Table.from_arrays(cols, schema=schema)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Reorder/cast an Arrow table to the schema, adding missing nullable columns as nulls."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            if col.type != f.type:
                try:
                    col = col.cast(f.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise SchemaError(f"column {f.name!r}: cannot cast {col.type} to {f.type}: {e}") from e
            cols.append(col)
        elif f.nullable:
            cols.append(pa.nulls(table.num_rows, f.type))
        else:
            raise SchemaError(f"missing required column {f.name!r}")
    extra = set(table.column_names) - set(schema.names)
    if extra:
        raise SchemaError(f"unknown columns {sorted(extra)}; known: {schema.names}")
    return pa.Table.from_arrays(cols, schema=schema)


def new_part_name(generation: int) -> str:
    return f"part-g{generation:06d}-{uuid.uuid4().hex[:12]}.parquet"


class PartWriter:
    """Buffers rows and writes them as row groups of Parquet part files in one folder.

    Memory stays bounded: the buffer is flushed every FLUSH_ROWS rows or FLUSH_BYTES of (estimated) text,
    and a part file is closed and a new one started past PART_MAX_ROWS / PART_MAX_BYTES.
    """

    def __init__(self, folder: Path, schema: pa.Schema, defaults: Mapping[str, Any], generation: int = 0):
        self.folder = folder
        self.schema = schema
        self.defaults = defaults
        self.generation = generation
        self._rows: list[Mapping[str, Any]] = []
        self._bytes = 0
        self._writer: pq.ParquetWriter | None = None
        self._path: Path | None = None
        self._part_rows = 0
        self._part_bytes = 0
        self.parts: list[tuple[Path, int]] = []  # (path, rows) of closed parts
        self.rows_written = 0

    def add(self, row: Mapping[str, Any], size_hint: int = 0) -> None:
        self._rows.append(row)
        self._bytes += size_hint
        if len(self._rows) >= FLUSH_ROWS or self._bytes >= FLUSH_BYTES:
            self.flush()

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for r in rows:
            self.add(r)

    def write_table(self, table: pa.Table) -> None:
        self.flush()
        self._write(conform(table, self.schema), table.nbytes)

    def flush(self) -> None:
        if not self._rows:
            return
        table = rows_to_table(self._rows, self.schema, self.defaults)
        self._rows = []
        nbytes = self._bytes
        self._bytes = 0
        self._write(table, nbytes)

    def _write(self, table: pa.Table, nbytes: int) -> None:
        if table.num_rows == 0:
            return
        if self._writer is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._path = self.folder / new_part_name(self.generation)
            self._writer = pq.ParquetWriter(self._path, self.schema, **PARQUET_OPTIONS)
            self._part_rows = 0
            self._part_bytes = 0
        self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self._part_rows += table.num_rows
        self._part_bytes += nbytes or table.nbytes
        self.rows_written += table.num_rows
        if self._part_rows >= PART_MAX_ROWS or self._part_bytes >= PART_MAX_BYTES:
            self._close_part()

    def _close_part(self) -> None:
        if self._writer is not None:
            self._writer.close()
            assert self._path is not None
            self.parts.append((self._path, self._part_rows))
            self._writer = None
            self._path = None

    def close(self) -> list[tuple[Path, int]]:
        self.flush()
        self._close_part()
        return self.parts

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for p, _ in self.parts:
            p.unlink(missing_ok=True)
        if self._path is not None:
            self._path.unlink(missing_ok=True)
