"""Turning row dicts into Arrow tables and streaming them into Parquet part files."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import SchemaError
from ..fsutil import naming_the_file
from ..textsafe import utf8_text

CONVERT_ROWS = 4096  # rows are converted to Arrow in chunks of this many
ROW_GROUP_ROWS = 131_072
ROW_GROUP_BYTES = 64 << 20  # uncompressed Arrow bytes per row group
PART_MAX_ROWS = 4_000_000
PART_MAX_BYTES = 1 << 30
# Free-text columns: no dictionary encoding (nearly unique values) and no min/max statistics.
TEXT_COLUMNS = frozenset(
    [
        "text",
        "output",
        "stderr",
        "arguments",
        "command",
        "metadata",
        "raw",
        "task",
        "final_answer",
        "expected_answer",
        "reason",
        "error",
        "rationale",
        "evidence",
        "body",
        "content",
        "note",
        "notes",
    ]
)


def parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """Writer options: LZ4 (LZ4_RAW; about 2x faster to write than zstd(1) for 1.4x the size, and
    read by DuckDB, polars, Spark 3.3+ and Ray), dictionaries and statistics only where they pay off."""
    small = [f.name for f in schema if f.name not in TEXT_COLUMNS and not pa.types.is_large_binary(f.type)]
    return {"compression": "lz4", "use_dictionary": small, "write_statistics": small}


def _required_error(name: str, values: list[Any]) -> SchemaError:
    i = next(i for i, v in enumerate(values) if v is None)
    return SchemaError(f"column {name!r} is required but row {i} has no value")


def _column_error(name: str, values: list[Any], typ: pa.DataType, e: Exception) -> SchemaError:
    for i, v in enumerate(values):
        try:
            pa.array([v], type=typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            return SchemaError(f"column {name!r}: row {i} has {type(v).__name__} {str(v)[:80]!r}: {e}")
    return SchemaError(f"column {name!r}: {e}")


@lru_cache(maxsize=64)
def _loose_struct(schema: pa.Schema) -> pa.StructType:
    return pa.struct([f.with_nullable(True) for f in schema])


def rows_to_table(
    rows: Sequence[Mapping[str, Any]], schema: pa.Schema, defaults: Mapping[str, Any]
) -> pa.Table:
    """Columnar conversion of sparse row dicts; missing or None values of non-nullable columns get defaults.

    The dicts are read row by row in C++ (one struct conversion), several times faster than building
    one Python list per column. Keys starting with `_` are private scratch fields of the producer and
    are ignored; any other key that is not a column is an error (checked on the first rows, where a
    typo shows up).
    """
    if rows:
        names = set(schema.names)
        extra = {k for r in rows[:64] for k in r if k not in names and not k.startswith("_")}
        if extra:
            raise SchemaError(f"unknown columns {sorted(extra)}; known: {schema.names}")
    try:
        arr = pa.array(rows, type=_loose_struct(schema))
    except UnicodeEncodeError:  # text that is not UTF-8 (a file name's bad bytes): stored escaped
        rows = [_utf8_row(r) for r in rows]
        try:
            arr = pa.array(rows, type=_loose_struct(schema))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            return _rows_to_table_by_column(rows, schema, defaults)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return _rows_to_table_by_column(rows, schema, defaults)  # slow path, names the bad column
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    cols: list[Any] = [pa.chunked_array([c.field(i) for c in chunks], f.type) for i, f in enumerate(schema)]
    for i, f in enumerate(schema):
        col = cols[i]
        if not f.nullable and col.null_count:
            d = defaults.get(f.name)
            if d is None:
                raise _required_error(f.name, [r.get(f.name) for r in rows])
            cols[i] = pc.fill_null(col, pa.scalar(d, type=f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _utf8_value(v: Any) -> Any:
    if type(v) is str:
        return utf8_text(v)
    if type(v) is list:
        return [_utf8_value(x) for x in v]
    return v


def _utf8_row(r: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _utf8_value(v) for k, v in r.items()}


def _rows_to_table_by_column(
    rows: Sequence[Mapping[str, Any]], schema: pa.Schema, defaults: Mapping[str, Any]
) -> pa.Table:
    cols = []
    for f in schema:
        name = f.name
        values = [r.get(name) for r in rows]
        try:
            arr = pa.array(values, type=f.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
            raise _column_error(name, values, f.type, e) from e
        if not f.nullable and arr.null_count:
            d = defaults.get(name)
            if d is None:
                raise _required_error(name, values)
            arr = pc.fill_null(arr, pa.scalar(d, type=f.type))
        cols.append(arr)
    return pa.Table.from_arrays(cols, schema=schema)


def conform(table: pa.Table, schema: pa.Schema, missing_as_null: bool = False) -> pa.Table:
    """Reorder/cast an Arrow table to the schema, adding missing nullable columns as nulls (every
    missing column with `missing_as_null`: a read of a part that predates a column, as a dataset
    scan with the lab's schema reads it)."""
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
        elif f.nullable or missing_as_null:
            cols.append(pa.nulls(table.num_rows, f.type))
        else:
            raise SchemaError(f"missing required column {f.name!r}")
    extra = set(table.column_names) - set(schema.names)
    if extra:
        raise SchemaError(f"unknown columns {sorted(extra)}; known: {schema.names}")
    return pa.Table.from_arrays(cols, schema=schema)


def new_part_name(generation: int) -> str:
    return f"part-g{generation:06d}-{uuid.uuid4().hex[:12]}.parquet"


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        with naming_the_file(path):
            os.fsync(fd)
    finally:
        os.close(fd)


class PartWriter:
    """Buffers rows or Arrow tables and writes them as row groups of Parquet part files in one folder.

    Memory stays bounded: rows are converted to Arrow every CONVERT_ROWS rows, a row group is written
    once ROW_GROUP_ROWS rows or ROW_GROUP_BYTES are buffered, and a part file is closed and a new one
    started past PART_MAX_ROWS / PART_MAX_BYTES.
    """

    def __init__(self, folder: Path, schema: pa.Schema, defaults: Mapping[str, Any], generation: int = 0):
        self.folder = folder
        self.schema = schema
        self.defaults = defaults
        self.generation = generation
        self.options = parquet_options(schema)
        self._rows: list[Mapping[str, Any]] = []
        self._tables: list[pa.Table] = []
        self._buffered_rows = 0
        self._buffered_bytes = 0
        self._writer: pq.ParquetWriter | None = None
        self._path: Path | None = None
        self._part_rows = 0
        self._part_bytes = 0
        self.parts: list[tuple[Path, int]] = []  # (path, rows) of closed parts
        self.rows_written = 0

    def add(self, row: Mapping[str, Any], size_hint: int = 0) -> None:
        self._rows.append(row)
        if len(self._rows) >= CONVERT_ROWS:
            self._convert()

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """`add` for each row (converted in the same chunks of CONVERT_ROWS), without a call per row."""
        buf = self._rows
        buf.extend(rows)
        if len(buf) < CONVERT_ROWS:
            return
        k = 0
        while len(buf) - k >= CONVERT_ROWS:
            self._rows = buf[k : k + CONVERT_ROWS]
            self._convert()
            k += CONVERT_ROWS
        self._rows = buf[k:]

    def write_table(self, table: pa.Table) -> None:
        """Buffer an Arrow table (conformed to the schema)."""
        self._convert()
        if table.schema != self.schema:
            table = conform(table, self.schema)
        self._buffer(table)

    def _convert(self) -> None:
        if self._rows:
            rows, self._rows = self._rows, []
            self._buffer(rows_to_table(rows, self.schema, self.defaults))

    def _buffer(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        self._tables.append(table)
        self._buffered_rows += table.num_rows
        self._buffered_bytes += table.nbytes
        if self._buffered_rows >= ROW_GROUP_ROWS or self._buffered_bytes >= ROW_GROUP_BYTES:
            self._write_group()

    def flush(self) -> None:
        self._convert()
        self._write_group()

    def _write_group(self) -> None:
        if not self._tables:
            return
        table = pa.concat_tables(self._tables) if len(self._tables) > 1 else self._tables[0]
        nbytes = self._buffered_bytes
        self._tables, self._buffered_rows, self._buffered_bytes = [], 0, 0
        if self._writer is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._path = self.folder / new_part_name(self.generation)
            with naming_the_file(self._path):
                self._writer = pq.ParquetWriter(self._path, self.schema, **self.options)
            self._part_rows = 0
            self._part_bytes = 0
        with naming_the_file(self._path):
            self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self._part_rows += table.num_rows
        self._part_bytes += nbytes
        self.rows_written += table.num_rows
        if self._part_rows >= PART_MAX_ROWS or self._part_bytes >= PART_MAX_BYTES:
            self._close_part()

    def _close_part(self) -> None:
        if self._writer is not None:
            assert self._path is not None
            with naming_the_file(self._path):
                self._writer.close()
            self.parts.append((self._path, self._part_rows))
            self._writer = None
            self._path = None

    def close(self) -> list[tuple[Path, int]]:
        self.flush()
        self._close_part()
        return self.parts

    def abort(self) -> None:
        """Drop everything written so far. Never raises for the file being written: closing it writes
        its footer, which fails again on a full disk, and the abort must still remove the files."""
        self._rows, self._tables = [], []
        if self._writer is not None:
            with suppress(OSError, pa.ArrowException):
                self._writer.close()
            self._writer = None
        for p, _ in self.parts:
            p.unlink(missing_ok=True)
        if self._path is not None:
            self._path.unlink(missing_ok=True)
