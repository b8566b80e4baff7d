"""The lab store: versioned Parquet tables, atomic writes, and read-only DuckDB views."""

from ._duckdb import (
    DERIVED_VIEWS,
    check_readonly,
    connect,
    fetch_arrow,
    query,
    run_readonly,
    statement_name,
    view_names,
)
from ._lab import Lab, Transaction, table_schema
from ._manifest import Manifest, atomic_write_text, utcnow
from ._parts import PartWriter, conform, fsync_file, rows_to_table

__all__ = [
    "DERIVED_VIEWS",
    "Lab",
    "Manifest",
    "PartWriter",
    "Transaction",
    "atomic_write_text",
    "check_readonly",
    "conform",
    "connect",
    "fetch_arrow",
    "fsync_file",
    "query",
    "rows_to_table",
    "run_readonly",
    "statement_name",
    "table_schema",
    "utcnow",
    "view_names",
]
