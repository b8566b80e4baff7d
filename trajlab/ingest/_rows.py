"""Arrow conversion that costs a bad value, not the unit.

Adapters keep their rows to the column types (`trajlab.formats._typed`), but runner files are
untrusted: when a chunk of rows still does not convert, the rows that fail are found by bisection and
each one is repaired column by column. A value that does not fit its column is replaced by null (the
column's default when it is required) and the original row is quarantined with its file, line and the
reason, so the step stays in its trajectory (step numbering and counts unchanged) and nothing is lost.
A row that cannot be repaired (a required column without a default) is dropped and quarantined.
Unknown columns are a bug of the adapter, not of the data: they still fail the unit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from ..errors import SchemaError
from ..store import rows_to_table

MAX_REPORTED_VALUE = 120  # characters of an offending value quoted in the reason


@dataclass
class RowProblem:
    row: Mapping[str, Any]  # the original row
    reason: str
    dropped: bool  # True: the row is not in the table; False: stored with the bad values nulled


def _bad_columns(row: Mapping[str, Any], schema: pa.Schema) -> list[tuple[str, str]]:
    out = []
    for f in schema:
        v = row.get(f.name)
        if v is None:
            continue
        try:
            pa.array([v], type=f.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
            shown = repr(v)
            if len(shown) > MAX_REPORTED_VALUE:
                shown = shown[:MAX_REPORTED_VALUE] + "..."
            out.append((f.name, f"column {f.name!r} ({f.type}): {type(v).__name__} {shown}: {e}"))
    return out


def _repair(
    row: Mapping[str, Any], schema: pa.Schema, defaults: Mapping[str, Any], err: SchemaError
) -> tuple[pa.Table | None, RowProblem]:
    names = set(schema.names)
    if any(k not in names and not k.startswith("_") for k in row):
        raise err  # an adapter bug: every row would have it
    bad = _bad_columns(row, schema)
    fixed = dict(row)
    for name, _ in bad:
        fixed[name] = None
    reasons = "; ".join(r for _, r in bad) or str(err)
    try:
        table = rows_to_table([fixed], schema, defaults)
    except SchemaError as e2:
        return None, RowProblem(row, f"row does not fit the lab schema ({reasons}; {e2}); row dropped", True)
    return table, RowProblem(row, f"value does not fit the lab schema, stored as null: {reasons}", False)


def convert_rows(
    rows: Sequence[Mapping[str, Any]], schema: pa.Schema, defaults: Mapping[str, Any]
) -> tuple[pa.Table, list[RowProblem]]:
    """`rows_to_table`, except that rows that do not convert are repaired or dropped and reported."""
    try:
        return rows_to_table(rows, schema, defaults), []
    except SchemaError as e:
        if not rows:
            raise
        first_error = e
    tables: list[pa.Table] = []
    problems: list[RowProblem] = []

    def split(part: Sequence[Mapping[str, Any]], err: SchemaError) -> None:
        if len(part) == 1:
            table, problem = _repair(part[0], schema, defaults, err)
            if table is not None:
                tables.append(table)
            problems.append(problem)
            return
        mid = len(part) // 2
        for half in (part[:mid], part[mid:]):
            try:
                tables.append(rows_to_table(half, schema, defaults))
            except SchemaError as e2:
                split(half, e2)

    split(rows, first_error)
    table = pa.concat_tables(tables) if tables else schema.empty_table()
    return table, problems


def raw_row(row: Mapping[str, Any]) -> bytes:
    """The row as JSON for the quarantine table (values that are not JSON become text)."""
    data = {k: v for k, v in row.items() if not k.startswith("_")}
    try:
        return orjson.dumps(data, default=str, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # e.g. integers beyond 64 bits, which orjson refuses
        return json.dumps(data, default=str, ensure_ascii=False).encode("utf-8", "surrogatepass")
