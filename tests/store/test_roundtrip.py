"""Round trips through the store: any rows a table's schema admits come back unchanged.

Rows are generated from each table's Arrow schema (every nullable column sometimes null; any Unicode
text, NUL included; full int64 range; infinities; microsecond UTC timestamps), appended in two
transactions, then read back by `Lab.read`, `Lab.iter_batches`, the DuckDB views and a plain Parquet
reader of the table folder; a delete by key removes exactly the matching rows.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlab.schema import TABLES
from trajlab.store import Lab, fetch_arrow, query, table_schema

_TEXT = st.text(max_size=40) | st.sampled_from(
    ["", "\x00", "a\x00b", "é🙂", "'; DROP VIEW steps; --", "<b>x</b>"]
)
_TS = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(timezone.utc)
)


def _value(t: pa.DataType) -> st.SearchStrategy[Any]:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _TEXT
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return st.binary(max_size=40) | st.just(b"\xff\xfe\x00 not utf-8")
    if pa.types.is_int64(t):
        return st.integers(-(2**63), 2**63 - 1)
    if pa.types.is_integer(t):
        info = (2 ** (t.bit_width - 1)) if pa.types.is_signed_integer(t) else 0
        return st.integers(-info, (2 ** (t.bit_width - 1) - 1) if info else 2**t.bit_width - 1)
    if pa.types.is_floating(t):
        return st.floats(allow_nan=False, width=t.bit_width)
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_timestamp(t):
        return _TS
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return st.lists(_value(t.value_type), max_size=4)
    raise NotImplementedError(f"no strategy for {t}")


def rows_of(schema: pa.Schema, n: int) -> st.SearchStrategy[list[dict[str, Any]]]:
    row = st.fixed_dictionaries(
        {f.name: (st.none() | _value(f.type)) if f.nullable else _value(f.type) for f in schema}
    )
    return st.lists(row, min_size=0, max_size=n)


def _key(schema: pa.Schema) -> str:
    return next(f.name for f in schema if pa.types.is_string(f.type) and not f.nullable)


def _canon(v: Any) -> Any:
    """A value whose repr does not depend on which tzinfo object a reader attached."""
    if isinstance(v, datetime):
        return ("ts", v.isoformat())
    if isinstance(v, list):
        return [_canon(x) for x in v]
    return v


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: repr(sorted((k, _canon(v)) for k, v in r.items())))


SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.mark.parametrize("table", sorted(TABLES))
def test_rows_come_back_unchanged(table: str) -> None:
    schema = table_schema(table)

    @SETTINGS
    @given(first=rows_of(schema, 6), second=rows_of(schema, 6))
    def check(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> None:
        with tempfile.TemporaryDirectory() as d:
            lab = Lab.open(Path(d) / "lab", create=True)
            lab.append(table, first)
            lab.append(table, second)
            want = _sorted(first + second)
            assert _sorted(lab.read(table).to_pylist()) == want
            assert _sorted([r for b in lab.iter_batches(table) for r in b.to_pylist()]) == want
            if want:
                got = query(lab, f"select * from {table}", as_="arrow").to_pylist()
                assert _sorted(got) == want
                con = duckdb.connect()
                plain = con.execute(f"select * from read_parquet('{lab.root}/{table}/*.parquet')")
                assert _sorted(fetch_arrow(plain).to_pylist()) == want
                con.close()
            # a delete by key removes exactly the rows with those keys, whichever part holds them
            key = _key(schema)
            gone = {r[key] for r in first[:2]}
            with lab.write("delete") as txn:
                txn.delete(table, key, sorted(gone))
            assert _sorted(lab.read(table).to_pylist()) == [r for r in want if r[key] not in gone]

    check()
