"""Running SQL analyses over a lab: connections (with the analysis views), parameters, and lab facts."""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import duckdb
import pyarrow as pa

from ..errors import ConfigError, LabError, QueryError
from ..store import Lab, check_readonly, connect, fetch_arrow, run_readonly
from ._catalog import (
    COUNT_SOURCES,
    AnalysisInfo,
    expand,
    get_analysis,
    normalize_by,
    parse_header,
    view_sql,
)
from ._result import AnalysisResult
from ._usage import current_usage_files, current_usage_keys, usage_view_sql

LabLike = Union[Lab, str, "os.PathLike[str]"]

LABEL_TABLES: dict[str, str] = {
    "judge": "judge_labels",
    "human": "human_labels",
    "gold": "gold_labels",
    "predicted": "predicted_labels",
}

_CACHE_SIZE = 4
_cache: OrderedDict[tuple[str, int, frozenset[str]], tuple[duckdb.DuckDBPyConnection, dict[str, Any]]] = (
    OrderedDict()
)
_cache_lock = threading.Lock()


def open_lab(lab: LabLike) -> Lab:
    return lab if isinstance(lab, Lab) else Lab.open(lab)


def _base(lab: Lab) -> tuple[duckdb.DuckDBPyConnection, dict[str, Any]]:
    key = (str(lab.root), lab.generation, lab.hidden)  # a view hiding tables must not share a connection
    materialized = current_usage_files(lab)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[1].get("tool_usage") == materialized:
            _cache.move_to_end(key)
            return hit
        # New, or tool_usage counts were (re)built since (here or by another process): a fresh
        # connection whose `tool_usage` view reads the newest files. The old one is left to its open
        # cursors (the files it reads are kept STALE_GRACE_S after they are superseded).
        views = {**view_sql(), "tool_usage": usage_view_sql(materialized)}
        con = connect(lab, extra_views=views)
        memo: dict[str, Any] = {"facts": hit[1]["facts"]} if hit is not None and "facts" in hit[1] else {}
        memo["tool_usage"] = materialized
        entry = (con, memo)
        _cache[key] = entry
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)[1][0].close()
        return entry


def connection(lab: LabLike) -> duckdb.DuckDBPyConnection:
    """A read-only DuckDB cursor over the lab: one view per table, `tool_calls`, `tool_usage` and the
    analysis views.

    Connections are cached per lab folder and generation, so repeated analyses reuse DuckDB's Parquet
    metadata; each call returns its own cursor (safe to use from another thread).
    """
    return _base(open_lab(lab))[0].cursor()


@dataclass
class LabFacts:
    """What a lab holds, so that an analysis can say what is missing instead of dividing by zero."""

    n_trajectories: int = 0
    n_success: int = 0
    n_failure: int = 0
    n_with_tokens: int = 0
    n_tool_calls: int = 0
    n_tool_errors: int = 0
    n_media_calls: int = 0
    labels: dict[str, int] = field(default_factory=dict)

    @property
    def n_unknown(self) -> int:
        return self.n_trajectories - self.n_success - self.n_failure

    def missing_basics(self, need_calls: bool = True) -> list[str]:
        if self.n_trajectories == 0:
            return ["no trajectories"]
        if need_calls and self.n_tool_calls == 0:
            return ["no tool calls"]
        return []

    def missing_outcomes(self) -> list[str]:
        """`no outcomes`, or which of the two outcome classes is absent."""
        if self.n_success == 0 and self.n_failure == 0:
            return ["no outcomes"]
        out = []
        if self.n_success == 0:
            out.append("no successful trajectories")
        if self.n_failure == 0:
            out.append("no failed trajectories")
        return out


def lab_facts(lab: LabLike) -> LabFacts:
    lab = open_lab(lab)
    con, memo = _base(lab)
    if "facts" not in memo:
        cur = con.cursor()
        try:
            row = _facts_row(cur)
        except duckdb.Error as e:  # a part whose pages are damaged behind an intact footer
            raise LabError(f"{lab.root}: DuckDB could not read the lab's steps or trajectories: {e}") from e
        assert row is not None
        labels = {src: lab.rows(table) for src, table in LABEL_TABLES.items()}
        n, ok, failed, tokens, calls, errors, media = (int(v or 0) for v in row)  # _facts_row's 7 columns
        memo["facts"] = LabFacts(n, ok, failed, tokens, calls, errors, media, labels=labels)
    return memo["facts"]


def _facts_row(cur: duckdb.DuckDBPyConnection) -> tuple[Any, ...] | None:
    return cur.execute(
        """
            SELECT
                (SELECT count(*) FROM trajectories),
                (SELECT count(*) FROM trajectories WHERE outcome = 'success'),
                (SELECT count(*) FROM trajectories WHERE outcome = 'failure'),
                (SELECT count(*) FROM trajectories
                 WHERE coalesce(total_tokens, input_tokens, output_tokens) IS NOT NULL),
                count(*) FILTER (WHERE kind = 'tool_call'),
                count(*) FILTER (WHERE kind = 'tool_call' AND (is_error OR timed_out)),
                count(*) FILTER (WHERE kind = 'tool_call' AND modality IN ('audio', 'video', 'image'))
            FROM steps
            """
    ).fetchone()


def resolve(sql_or_name: str) -> tuple[str, AnalysisInfo | None]:
    """(SQL text, catalog info) for a shipped analysis name, a path to a `.sql` file, or SQL text."""
    s = sql_or_name.strip()
    if re.fullmatch(r"[A-Za-z_][\w-]*", s):
        info = get_analysis(s)
        return info.text, info
    if s.endswith(".sql") and "\n" not in s:
        p = Path(s).expanduser()
        if not p.is_file():
            raise QueryError(f"{p}: no such SQL file")
        text = p.read_text(encoding="utf-8")
        return text, parse_header(p.stem, p, text)
    return sql_or_name, None


def bind(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    info: AnalysisInfo | None,
    params: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The values of the `$name` parameters the statement uses: given ones over the file's defaults."""
    check_readonly(con, sql)
    statements = con.extract_statements(sql)
    if len(statements) != 1:
        raise QueryError(f"an analysis must be one statement (got {len(statements)})")
    used = set(getattr(statements[0], "named_parameters", ()) or ())
    defaults = dict(info.params) if info else {}
    given = dict(params or {})
    unknown = sorted(set(given) - used)
    if unknown:
        takes = ", ".join(f"${p}" for p in sorted(used)) or "no parameters"
        raise ConfigError(f"unknown parameter(s) {', '.join(unknown)}; this query takes {takes}")
    values: dict[str, Any] = {}
    for name in sorted(used):
        if name in given:
            values[name] = given[name]
        elif name in defaults:
            values[name] = defaults[name]
        else:
            raise ConfigError(f"parameter ${name} has no value; pass it with params={{{name!r}: ...}}")
    return values


def counts_source(lab: Lab, key: str | None, counts: str = "auto") -> str:
    """`tool_usage` or `steps`: where `{{tool_counts}}` / `{{tool_use}}` read from for this lab, key and
    choice."""
    if counts not in COUNT_SOURCES:
        raise ConfigError(f"counts must be one of {', '.join(COUNT_SOURCES)}, not {counts!r}")
    if counts == "steps":
        return "steps"
    if (key or "tool") in current_usage_keys(lab):
        return "tool_usage"
    if counts == "tool_usage":
        raise ConfigError(
            f"tool_usage is not materialized for key {key or 'tool'!r} and the current steps; "
            "build it with trajlab.analysis.refresh_tool_usage(lab) or use counts='auto'"
        )
    return "steps"


def execute(
    lab: LabLike,
    sql_or_name: str,
    params: Mapping[str, Any] | None = None,
    by: str | Iterable[str] | None = None,
    key: str | None = None,
    counts: str = "auto",
) -> tuple[pa.Table, str, dict[str, Any], AnalysisInfo | None]:
    """Run one query read-only: (Arrow table, expanded SQL, bound params, catalog info)."""
    lab = open_lab(lab)
    text, info = resolve(sql_or_name)
    cols = normalize_by(by) if by is not None else (info.default_by if info else ())
    uses_counts = re.search(r"\{\{\s*tool_(counts|use)\s*\}\}", text) is not None
    source = counts_source(lab, key, counts if uses_counts else "steps")
    if counts not in COUNT_SOURCES:
        raise ConfigError(f"counts must be one of {', '.join(COUNT_SOURCES)}, not {counts!r}")
    sql = expand(text, cols, key, source)
    con = connection(lab)
    values = bind(con, sql, info, params)
    table = fetch_arrow(run_readonly(con, sql, values or None))
    shown = dict(values)
    if info and info.groupable:
        shown["by"] = list(cols)
    counted = info is not None and bool({"tool_counts", "tool_use"} & set(info.placeholders))
    if info and ("key" in info.placeholders or counted):
        shown["key"] = key or "tool"
    if counted:
        shown["counts"] = source
    return table, sql, shown, info


def run_sql(
    lab: LabLike,
    sql_or_name: str,
    params: Mapping[str, Any] | None = None,
    as_: str = "arrow",
    by: str | Iterable[str] | None = None,
    key: str | None = None,
    counts: str = "auto",
) -> Any:
    """Run a shipped analysis by name, a `.sql` file, or SQL text, read-only over the lab.

    `params` fills DuckDB `$name` parameters (a file's `@param` lines give defaults); `by` fills the
    `{{by}}` / `{{partition_by}}` placeholders (default: the file's `@by` line) and `key` the
    `{{key}}` / `{{tool_counts}}` / `{{tool_use}}` placeholders (`tool`, `tool_modality` or `program`;
    see TOOL_KEYS). `counts` says where `{{tool_counts}}` / `{{tool_use}}` read: `auto` (the
    materialized tool_usage table when it is current, else steps; run_sql never writes), `steps`, or
    `tool_usage` (ConfigError when it is not materialized). Returns an Arrow table, or a polars / pandas frame with `as_="polars"` /
    `"pandas"`. A SQL error raises QueryError with DuckDB's message and the names of the views available.
    """
    if as_ not in ("arrow", "polars", "pandas"):
        raise ConfigError(f"as_ must be arrow, polars or pandas, not {as_!r}")
    table = execute(lab, sql_or_name, params, by, key, counts)[0]
    if as_ == "polars":
        import polars as pl

        return pl.from_arrow(table)
    if as_ == "pandas":
        return table.to_pandas()
    return table


def run_analysis(
    lab: LabLike,
    sql_or_name: str,
    params: Mapping[str, Any] | None = None,
    by: str | Iterable[str] | None = None,
    key: str | None = None,
    counts: str = "auto",
) -> AnalysisResult:
    """Like `run_sql`, wrapped as an AnalysisResult (no statistics, no missing-data checks)."""
    table, sql, values, info = execute(lab, sql_or_name, params, by, key, counts)
    name = info.name if info else "sql"
    notes = [] if table.num_rows else ["the query returned no rows"]
    return AnalysisResult(name=name, table=table, sql=sql, params=values, notes=notes)
