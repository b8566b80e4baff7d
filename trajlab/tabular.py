"""Render or write result tables (Arrow) as a terminal table, Markdown, CSV, JSON or Parquet."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import ConfigError
from .fsutil import atomic_write_text, atomic_write_with
from .textsafe import show_controls

FORMATS = ("table", "markdown", "csv", "json", "jsonl", "parquet")


_INT64 = 1 << 63


def _plain(v: Any) -> Any:
    """Values json and csv cannot show as they are: DECIMAL (`SELECT 3.14`; DuckDB's HUGEINT arrives as
    one) becomes a number, an integer beyond 64 bits a string, TIME and INTERVAL strings."""
    if isinstance(v, Decimal):
        if not v.is_finite():
            return None
        if v == v.to_integral_value():
            n = int(v)
            return n if -_INT64 <= n < _INT64 else str(n)
        return float(v)
    if isinstance(v, time):
        return v.isoformat()
    if isinstance(v, timedelta):
        return str(v)
    if isinstance(v, pa.MonthDayNano):
        return f"{v.months} months {v.days} days {v.nanoseconds} ns"
    return v


def unique_names(names: list[str]) -> list[str]:
    """Column names made unique the way DuckDB does it (`a, a` -> `a, a_1`), so that rows shown as
    objects keep every column."""
    used: set[str] = set()
    out = []
    for name in names:
        while name in used:
            name += "_1"
        used.add(name)
        out.append(name)
    return out


def _md_cell(text: str) -> str:
    """A Markdown table cell: `|` escaped, and `<`, `>`, `&` as entities, so that text from the logs
    is never HTML to a Markdown viewer (it shows the same characters)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def _cell(v: Any, width: int | None = None) -> str:
    if v is None:
        return ""
    v = _plain(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        s = f"{v:.4g}" if abs(v) < 1e6 else f"{v:.3e}"
    elif isinstance(v, (list, dict)):
        s = json.dumps(v, default=str, ensure_ascii=False)
    elif isinstance(v, bytes):
        s = f"<{len(v)} bytes>"
    else:
        s = str(v)
    s = show_controls(s)  # trajectory text is data: no terminal escapes, no bidi overrides; one line
    if width and len(s) > width:
        s = s[: width - 1] + "…"
    return s


def _jsonable(v: Any) -> Any:
    v = _plain(v)
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, (list, tuple)):  # tuples: the (key, value) entries of a MAP
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    return v


def to_arrow(obj: Any) -> pa.Table:
    if isinstance(obj, pa.Table):
        return obj
    if hasattr(obj, "to_arrow"):  # polars, duckdb relation
        return obj.to_arrow() if not hasattr(obj, "fetch_arrow_table") else obj.fetch_arrow_table()
    if hasattr(obj, "to_dict") and hasattr(obj, "columns"):  # pandas
        return pa.Table.from_pandas(obj, preserve_index=False)
    if isinstance(obj, list):
        return pa.Table.from_pylist(obj)
    raise TypeError(f"cannot convert {type(obj).__name__} to an Arrow table")


def render(table: Any, fmt: str = "table", max_width: int = 60, max_rows: int | None = None) -> str:
    t = to_arrow(table)
    cols = unique_names(t.column_names)  # rows by position: a repeated name keeps its own values
    shown = t.slice(0, max_rows) if max_rows is not None and fmt in ("table", "markdown") else t
    rows = list(zip(*[c.to_pylist() for c in shown.columns])) if cols else [()] * shown.num_rows
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")  # as DuckDB and pandas write CSV; \r\n broke `| cut`
        # QUOTE_MINIMAL quotes what holds the lineterminator (\n) but not a bare \r, which readers
        # take as a line end (Python's csv: "new-line character seen in unquoted field"): such rows
        # are written with every field quoted
        quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
        w.writerow(cols)
        for r in rows:
            fields = [
                ""
                if v is None
                else (json.dumps(_jsonable(v)) if isinstance(v, (list, dict)) else _jsonable(v))
                for v in r
            ]
            (quoted if any(isinstance(f, str) and "\r" in f for f in fields) else w).writerow(fields)
        return buf.getvalue()
    if fmt in ("json", "jsonl"):
        objs = [{c: _jsonable(v) for c, v in zip(cols, r)} for r in rows]
        if fmt == "json":
            return json.dumps(objs, indent=2, ensure_ascii=False)
        return "\n".join(json.dumps(o, ensure_ascii=False) for o in objs) + ("\n" if objs else "")
    cells = [[_cell(v, max_width) for v in r] for r in rows]
    if fmt == "markdown":
        esc = [[_md_cell(c) for c in row] for row in cells]
        head = [_md_cell(_cell(c)) for c in cols]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in cols) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in esc]
        if max_rows is not None and t.num_rows > max_rows:
            lines += ["", f"_... {t.num_rows - max_rows} more rows_"]
        return "\n".join(lines)
    if fmt == "table":
        cols = [_cell(c) for c in cols]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
        sep = "  "
        lines = [sep.join(c.ljust(w) for c, w in zip(cols, widths)), sep.join("-" * w for w in widths)]
        lines += [sep.join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
        if max_rows is not None and t.num_rows > max_rows:
            lines.append(f"... {t.num_rows - max_rows} more rows")
        return "\n".join(lines)
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


SUFFIX_FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl", ".parquet": "parquet", ".md": "markdown"}


def write(table: Any, path: str | Path, fmt: str | None = None) -> Path:
    """Write a result to a file; the format comes from `fmt` or the suffix (.csv .json .jsonl .parquet .md)."""
    p = Path(path)
    if fmt is None:
        fmt = SUFFIX_FORMATS.get(p.suffix.lower())
        if fmt is None:
            raise ConfigError(
                f"{p}: cannot tell the format from the suffix {p.suffix or '(none)'!r}: name the file "
                f"{', '.join(SUFFIX_FORMATS)}, or give the format (--format)"
            )
    t = to_arrow(table)
    p.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        atomic_write_with(p, lambda tmp: pq.write_table(t, tmp))
    else:
        atomic_write_text(p, render(t, fmt, max_width=10**9))
    return p
