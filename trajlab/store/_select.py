"""Read the rows of one key (a trajectory's) from a table's parts with memory that follows those rows,
not the table.

`Lab.read(table, columns, filter)` goes through a pyarrow dataset scan: it skips the row groups whose
statistics exclude the key, but decodes each remaining row group whole, in parallel and with
read-ahead, before filtering. A steps row group of 32,768 rows holds about 65 MB of text and output,
so `trajlab dag show` of one 158-step trajectory peaked at about 390 MB. Here each part's row groups
are chosen by the key column's min/max statistics (the lab writes statistics for every column that is
not free text) and then read a thousand rows at a time, page by page (a buffered stream rather
than whole column chunks), on this thread, keeping only the matching rows of each batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._parts import conform

BATCH_ROWS = 1_024
"""Rows decoded at a time (a batch of steps with their outputs is about 2 MB). Larger batches are
hardly faster and cost memory: at 8,192 rows `dag show` peaked 60 MB higher."""
READ_BUFFER = 1 << 20
"""Bytes a column is read ahead by (pyarrow's buffered stream): pages, not whole column chunks."""


def rows_where(
    files: Sequence[Path], schema: pa.Schema, column: str, value: Any, columns: Sequence[str] | None = None
) -> pa.Table:
    """The rows of the parts `files` whose `column` equals `value`, as `columns` (default: all) of
    `schema`, in part and row order. Parts written before a column existed read it as nulls."""
    cols = list(columns) if columns else list(schema.names)
    for c in [*cols, column]:
        if c not in schema.names:
            raise pa.ArrowInvalid(f"No match for FieldRef.Name({c}) in {schema}")
    out_schema = pa.schema([schema.field(c) for c in cols])
    pieces: list[pa.Table] = []
    key = pa.scalar(value, schema.field(column).type)
    for f in files:
        try:
            pieces += _part_rows(f, cols, column, key, out_schema)
        except pa.ArrowInvalid as e:  # a damaged part: say which (the caller names the table)
            raise pa.ArrowInvalid(f"{f}: {e}") from e
    if not pieces:
        return out_schema.empty_table()
    return pa.concat_tables(pieces)


def _part_rows(f: Path, cols: list[str], column: str, key: pa.Scalar, schema: pa.Schema) -> list[pa.Table]:
    with pq.ParquetFile(f, pre_buffer=False, buffer_size=READ_BUFFER) as pf:
        present = set(pf.schema_arrow.names)
        if column not in present:  # all nulls: equal to nothing
            return []
        groups = _row_groups(pf.metadata, column, key.as_py())
        if not groups:
            return []
        read = [c for c in dict.fromkeys([*cols, column]) if c in present]
        keep = [c for c in read if c in cols]  # the key column is read for the mask only
        out = []
        for batch in pf.iter_batches(
            batch_size=BATCH_ROWS, row_groups=groups, columns=read, use_threads=False
        ):
            mask = pc.equal(batch.column(column), key)
            if pc.any(mask).as_py():
                out.append(
                    conform(
                        pa.Table.from_batches([batch.filter(mask)]).select(keep), schema, missing_as_null=True
                    )
                )
        return out


def _row_groups(md: pq.FileMetaData, column: str, value: Any) -> list[int]:
    """The row groups whose statistics of `column` do not exclude `value` (all, without statistics)."""
    leaf = next((i for i in range(md.num_columns) if md.schema.column(i).path == column), None)
    groups = []
    for rg in range(md.num_row_groups):
        st = md.row_group(rg).column(leaf).statistics if leaf is not None else None
        if st is not None and st.has_min_max:
            v = value.encode() if isinstance(st.min, bytes) and isinstance(value, str) else value
            try:
                if not (st.min <= v <= st.max):
                    continue
            except TypeError:  # statistics of a type we cannot compare with: read the group
                pass
        groups.append(rg)
    return groups
