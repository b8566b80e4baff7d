"""The runs table: filters, sorting and server-side pagination as parameterized DuckDB SQL.

The SQL text is built only from the fixed vocabularies below (filter names, column names, sort
direction); every value a user picks or types travels as a query parameter. The queries read the
`runs` view of a `Snapshot` (one row per trajectory with its labels, tools and modalities).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ..errors import ConfigError

NONE_VALUE = "(none)"
"""Filter option that matches a missing value (no model recorded, no label...)."""

# filter name -> (runs column, kind): "value" compares the column, "list" tests a list column.
RUN_FILTERS: dict[str, tuple[str, str]] = {
    "runner": ("runner", "value"),
    "model": ("model", "value"),
    "harness": ("harness", "value"),
    "benchmark": ("benchmark", "value"),
    "outcome": ("outcome", "value"),
    "category": ("category", "value"),
    "label_source": ("label_source", "value"),
    "tool": ("tools", "list"),
    "modality": ("modalities", "list"),
    "domain": ("domain", "value"),
    "difficulty": ("difficulty", "value"),
    "split": ("split", "value"),
    "condition": ("condition", "value"),
    "reasoning_effort": ("reasoning_effort", "value"),
}
"""Every filter a runs panel may offer, by name."""

FILTER_LABELS: dict[str, str] = {
    "label_source": "label source",
    "tool": "tool used",
    "reasoning_effort": "reasoning effort",
}

# column name -> header shown
RUN_COLUMNS: dict[str, str] = {
    "trajectory_id": "trajectory",
    "runner": "runner",
    "model": "model",
    "harness": "harness",
    "benchmark": "benchmark",
    "task_id": "task id",
    "task": "task",
    "domain": "domain",
    "difficulty": "difficulty",
    "split": "split",
    "condition": "condition",
    "reasoning_effort": "effort",
    "outcome": "outcome",
    "reward": "reward",
    "category": "category",
    "label_source": "label source",
    "judge_category": "judge category",
    "judge_confidence": "judge confidence",
    "human_category": "human category",
    "n_steps": "steps",
    "n_tool_calls": "tool calls",
    "n_errors": "errors",
    "n_subagents": "sub-agents",
    "total_tokens": "tokens",
    "cost_usd": "cost $",
    "duration_s": "duration s",
    "started_at": "started",
    "tools": "tools",
    "modalities": "modalities",
}
"""Every column a runs panel may show (and sort by), with its header."""

DEFAULT_COLUMNS: tuple[str, ...] = (
    "trajectory_id",
    "runner",
    "model",
    "benchmark",
    "outcome",
    "category",
    "label_source",
    "n_steps",
    "n_tool_calls",
    "total_tokens",
    "duration_s",
    "task",
)
DEFAULT_FILTERS: tuple[str, ...] = (
    "runner",
    "model",
    "harness",
    "benchmark",
    "outcome",
    "category",
    "label_source",
    "tool",
    "modality",
)
MAX_PAGE_SIZE = 500
TASK_CHARS = 160
"""The task column is cut to this many characters in SQL (a page never ships whole task texts)."""


@dataclass
class RunsQuery:
    """One request for a page of runs."""

    filters: Mapping[str, Sequence[str]] = field(default_factory=dict)
    search: str | None = None
    sort: str = "started_at"
    descending: bool = True
    page: int = 0
    page_size: int = 25
    columns: Sequence[str] = DEFAULT_COLUMNS

    def check(self) -> RunsQuery:
        unknown = [f for f in self.filters if f not in RUN_FILTERS]
        if unknown:
            raise ConfigError(f"unknown runs filter(s) {unknown}; known: {', '.join(RUN_FILTERS)}")
        bad = [c for c in [*self.columns, self.sort] if c not in RUN_COLUMNS]
        if bad:
            raise ConfigError(f"unknown runs column(s) {bad}; known: {', '.join(RUN_COLUMNS)}")
        if not 1 <= int(self.page_size) <= MAX_PAGE_SIZE:
            raise ConfigError(f"page_size must be 1..{MAX_PAGE_SIZE}")
        if int(self.page) < 0:
            raise ConfigError("page must be >= 0")
        return self


def where_clause(q: RunsQuery) -> tuple[str, list[Any]]:
    """`WHERE ...` for the query's filters and search, and its parameters (in order)."""
    parts: list[str] = []
    params: list[Any] = []
    for name, values in q.filters.items():
        values = [str(v) for v in (values or [])]
        if not values:
            continue
        column, kind = RUN_FILTERS[name]
        real = [v for v in values if v != NONE_VALUE]
        want_none = len(real) < len(values)
        alts = []
        if real:
            if kind == "list":
                alts.append(f"list_has_any({column}, ?::VARCHAR[])")
            else:
                alts.append(f"list_contains(?::VARCHAR[], {column})")
            params.append(real)
        if want_none:
            alts.append(f"({column} IS NULL OR len({column}) = 0)" if kind == "list" else f"{column} IS NULL")
        parts.append("(" + " OR ".join(alts) + ")")
    if q.search and q.search.strip():
        parts.append(
            "(contains(lower(task), ?) OR starts_with(trajectory_id, ?) OR contains(lower(task_id), ?))"
        )
        s = q.search.strip().lower()
        params += [s, q.search.strip(), s]
    return ("WHERE " + " AND ".join(parts)) if parts else "", params


def _select_list(columns: Sequence[str]) -> str:
    cols = list(dict.fromkeys(["trajectory_id", *columns]))
    return ", ".join(
        f"CASE WHEN length(task) > {TASK_CHARS} THEN left(task, {TASK_CHARS - 1}) || '…' ELSE task END AS task"
        if c == "task"
        else c
        for c in cols
    )


def page_sql(q: RunsQuery) -> tuple[str, list[Any]]:
    """The SQL and parameters of one page (ordered by the sort column, then trajectory id)."""
    q.check()
    where, params = where_clause(q)
    direction = "DESC" if q.descending else "ASC"
    sql = (
        f"SELECT {_select_list(q.columns)} FROM runs {where} "
        f"ORDER BY {q.sort} {direction} NULLS LAST, trajectory_id LIMIT ? OFFSET ?"
    )
    return sql, [*params, int(q.page_size), int(q.page) * int(q.page_size)]


SUMMARY_SQL = """
SELECT count(*) AS runs,
       count(*) FILTER (WHERE outcome = 'success') AS successes,
       count(*) FILTER (WHERE outcome = 'failure') AS failures,
       count(*) FILTER (WHERE outcome = 'unknown') AS unknown,
       count(*) FILTER (WHERE outcome = 'failure' AND category IS NOT NULL) AS labeled_failures,
       count(*) FILTER (WHERE human_category IS NOT NULL) AS human_reviewed,
       count(DISTINCT model) AS models,
       count(DISTINCT runner) AS runners,
       sum(n_steps) AS steps,
       avg(n_steps) AS mean_steps,
       avg(total_tokens) AS mean_tokens
FROM runs {where}
"""


@dataclass
class RunsPage:
    rows: list[dict[str, Any]]
    total: int
    summary: dict[str, Any]
    sql: str
    params: list[Any]

    @property
    def page_count(self) -> int:
        return 0 if not self.rows and not self.total else -(-self.total // max(len(self.rows), 1))


def fetch_summary(con: duckdb.DuckDBPyConnection, q: RunsQuery) -> dict[str, Any]:
    where, params = where_clause(q.check())
    cur = con.execute(SUMMARY_SQL.format(where=where), params)
    names = [d[0] for d in cur.description]
    row = cur.fetchone() or ()
    out = dict(zip(names, row))
    n = (out.get("successes") or 0) + (out.get("failures") or 0)
    out["accuracy"] = (out["successes"] / n) if n else None
    return out


def fetch_page(con: duckdb.DuckDBPyConnection, q: RunsQuery) -> RunsPage:
    """One page of runs plus the summary counts of everything the filters match."""
    sql, params = page_sql(q)
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    summary = fetch_summary(con, q)
    return RunsPage(rows, int(summary["runs"] or 0), summary, sql, params)


FACET_SQL = {
    "value": "SELECT {col} AS v, count(*) AS n FROM runs GROUP BY 1 ORDER BY n DESC, v NULLS LAST LIMIT 2000",
    "list": "SELECT v, count(*) AS n FROM (SELECT unnest({col}) AS v FROM runs) GROUP BY 1 ORDER BY n DESC, v LIMIT 2000",
}


def facet_values(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, int]]:
    """Values of one filter with their run counts, most common first (null as `(none)`)."""
    column, kind = RUN_FILTERS[name]
    rows = con.execute(FACET_SQL[kind].format(col=column)).fetchall()
    return [(NONE_VALUE if v is None else str(v), int(n)) for v, n in rows]
