"""Read-only DuckDB over a lab: one view per table, file access confined to the lab folder.

User SQL goes through `run_readonly`, which accepts only SELECT-like statements (DuckDB's own parser
classifies them), and the connection can read nothing outside the lab and write nothing at all.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import LabError, QueryError
from ..schema import TABLES, arrow_schema

if TYPE_CHECKING:
    from ._lab import Lab

_ALLOWED_STATEMENTS = {"SELECT", "EXPLAIN"}
# EXPLAIN [ANALYZE|ANALYSE] [(options)] <statement>, after leading comments and whitespace
_GAP = r"(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*"  # whitespace and comments, which may sit between the words
_EXPLAIN_RE = re.compile(
    rf"\A{_GAP}EXPLAIN\b{_GAP}(?:ANALY[SZ]E\b)?{_GAP}(?:\([^()]*\))?(.*)\Z",
    re.IGNORECASE | re.DOTALL,
)

# Convenience views every analysis can rely on, defined over the base tables.
# In `tool_calls`, `model` is the trajectory's model; the step's own (rarely set) model is `step_model`.
DERIVED_VIEWS: dict[str, str] = {
    "tool_calls": """
        SELECT s.* EXCLUDE (model), s.model AS step_model,
               t.runner, t.model, t.harness, t.benchmark, t.reasoning_effort, t.outcome, t.domain,
               t.difficulty, t.condition, t.split
        FROM steps s JOIN trajectories t USING (trajectory_id)
        WHERE s.kind = 'tool_call'
    """,
}


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _duck_type(arrow_type: Any) -> str:
    import pyarrow as pa

    if pa.types.is_list(arrow_type):
        return _duck_type(arrow_type.value_type) + "[]"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "VARCHAR"
    if pa.types.is_int64(arrow_type):
        return "BIGINT"
    if pa.types.is_integer(arrow_type):
        return "INTEGER"
    if pa.types.is_floating(arrow_type):
        return "DOUBLE"
    if pa.types.is_boolean(arrow_type):
        return "BOOLEAN"
    if pa.types.is_timestamp(arrow_type):
        return "TIMESTAMPTZ"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "BLOB"
    raise TypeError(f"no DuckDB type for {arrow_type}")


def _empty_select(table: str) -> str:
    cols = ", ".join(f"CAST(NULL AS {_duck_type(f.type)}) AS {f.name}" for f in arrow_schema(TABLES[table]))
    return f"SELECT {cols} WHERE false"


def _kind(t: Any) -> str:
    """Coarse type family: a part whose column differs from the schema in family is damaged."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    for name, test in (
        ("null", pa.types.is_null),
        ("integer", pa.types.is_integer),
        ("float", pa.types.is_floating),
        ("boolean", pa.types.is_boolean),
        ("string", lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)),
        ("binary", lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x)),
        ("timestamp", pa.types.is_timestamp),
        ("list", lambda x: pa.types.is_list(x) or pa.types.is_large_list(x)),
    ):
        if test(t):
            return name
    return str(t)


def _part_columns(table: str, path: Any) -> frozenset[str]:
    """Column names of one part of `table`, checked against the schema; LabError if it is damaged."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise LabError(f"{path}: part of table {table!r} listed in lab.json is missing") from None
    except OSError as e:
        raise LabError(f"{path}: part of table {table!r} is unreadable ({e.strerror or e})") from None
    return _checked_columns(table, str(path), size)


@lru_cache(maxsize=4096)
def _checked_columns(table: str, path: str, size: int) -> frozenset[str]:
    """(Parts are immutable; the size guards against a reused name.)"""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as e:
        raise LabError(f"{path}: part of table {table!r} is unreadable ({e})") from None
    for f in arrow_schema(TABLES[table]):
        i = schema.get_field_index(f.name)
        if i < 0:
            continue
        got = schema.field(i).type
        if _kind(got) not in (_kind(f.type), "null"):
            raise LabError(
                f"{path}: part of table {table!r} has column {f.name!r} of type {got}; the schema says {f.type}"
            )
    return frozenset(schema.names)


def view_sql(lab: Lab, table: str) -> str:
    files = lab.files(table)
    if not files:
        return _empty_select(table)
    present: set[str] = set()
    for f in files:
        present |= _part_columns(table, f)
    cols = ", ".join(
        f.name if f.name in present else f"CAST(NULL AS {_duck_type(f.type)}) AS {f.name}"
        for f in arrow_schema(TABLES[table])
    )
    file_list = "[" + ", ".join(_sql_str(str(f)) for f in files) + "]"
    # union_by_name: parts written by an older schema (fewer columns) read as nulls; a column that no
    # part has yet is a typed NULL.
    return f"SELECT {cols} FROM read_parquet({file_list}, union_by_name=true)"


def connect(
    lab: Lab, threads: int | None = None, extra_views: dict[str, str] | None = None
) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    if threads:
        con.execute(f"SET threads={int(threads)}")
    con.execute(f"SET allowed_directories=[{_sql_str(str(lab.root) + '/')}]")
    try:
        views = {table: view_sql(lab, table) for table in TABLES}
    except LabError:
        # a writer may have committed (and removed parts) since the manifest was read: reload once
        generation = lab.generation
        if lab.refresh().generation == generation:
            raise
        views = {table: view_sql(lab, table) for table in TABLES}
    for table, sql in views.items():
        con.execute(f"CREATE VIEW {table} AS {sql}")
    for name, sql in {**DERIVED_VIEWS, **(extra_views or {})}.items():
        con.execute(f"CREATE VIEW {name} AS {sql}")
    con.execute("SET enable_external_access=false")
    con.execute("SET lock_configuration=true")
    return con


def view_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        r[0]
        for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()
    ]


def statement_name(kind: str) -> str:
    """'a SELECT statement', 'an ATTACH statement'."""
    return f"{'an' if kind[:1] in 'AEIOU' else 'a'} {kind} statement"


def check_readonly(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """Raise QueryError unless every statement of `sql` only reads; the number of statements."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(f"{e}\nviews available: {', '.join(view_names(con))}") from e
    if not statements:
        raise QueryError("empty query")
    for st in statements:
        kind = str(st.type).rsplit(".", 1)[-1]
        if kind not in _ALLOWED_STATEMENTS:
            hint = ""
            if (kind == "MULTI" or not st.query.strip()) and "pivot" in sql.lower():
                # DuckDB first creates an ENUM of the values a PIVOT without `IN (...)` finds: DuckDB 2 as
                # one MULTI statement, DuckDB 1.x (the newest on Python 3.10) as a CREATE and a SELECT
                # with no query text of their own
                hint = "; a PIVOT must name its values here: PIVOT ... ON col IN ('a', 'b') USING ..."
            raise QueryError(f"only read-only queries are allowed (got {statement_name(kind)}){hint}")
        if kind == "EXPLAIN":
            # EXPLAIN ANALYZE runs the statement it explains (`EXPLAIN ANALYZE COPY ... TO` writes a file):
            # the explained statement must be read-only too
            m = _EXPLAIN_RE.match(st.query)
            if m is None or not m.group(1).strip():
                raise QueryError("only read-only queries are allowed (EXPLAIN of an unrecognized statement)")
            check_readonly(con, m.group(1))
    return len(statements)


def run_readonly(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | dict[str, Any] | None = None
) -> duckdb.DuckDBPyRelation | duckdb.DuckDBPyConnection:
    """Execute user SQL read-only; DuckDB's error message plus the view names on failure. One statement
    only: of several, DuckDB returns the last one's rows and the others' would be silently lost."""
    n = check_readonly(con, sql)
    if n > 1:
        raise QueryError(f"run one statement at a time (got {n}): only the last one's rows would be shown")
    try:
        rel = con.sql(sql, params=params) if params is not None else con.sql(sql)
        return rel if rel is not None else con.execute("SELECT NULL WHERE false")
    except duckdb.Error as e:
        raise QueryError(f"{e}\nviews available: {', '.join(view_names(con))}") from e


def fetch_arrow(result: Any) -> pa.Table:
    """A DuckDB relation or cursor result as an Arrow table, across DuckDB versions."""
    import warnings

    for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        fn = getattr(result, name, None)
        if fn is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                try:
                    out = fn()
                except duckdb.Error as e:
                    raise QueryError(str(e)) from e
            return out.read_all() if hasattr(out, "read_all") else out
    raise AttributeError("this DuckDB has no Arrow fetch method")


def query(lab: Lab, sql: str, params: list[Any] | dict[str, Any] | None = None, as_: str = "arrow") -> Any:
    """Run read-only SQL over a lab and return an Arrow table, or a polars/pandas frame (`as_`)."""
    con = connect(lab)
    t = fetch_arrow(run_readonly(con, sql, params))
    if as_ == "polars":
        import polars as pl

        return pl.from_arrow(t)
    if as_ == "pandas":
        return t.to_pandas()
    return t
