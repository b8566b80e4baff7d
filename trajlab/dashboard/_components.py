"""Small Dash building blocks shared by the pages: tables, cards, code blocks, messages.

Every value shown goes in as a string child or a DataTable cell (both rendered as text by React);
nothing here takes HTML or Markdown from data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from dash import html
from dash.dash_table.DataTable import DataTable

from ._text import clean_block, clean_line, fmt_num

if TYPE_CHECKING:
    from ..review import AnnotationStore, Problem

TableRow = dict[str | float | int, Any]
"""A row of a DataTable's `data`, typed with the key type dash declares (ours are column names)."""

TABLE_STYLE: dict[str, Any] = {
    "style_table": {"overflowX": "auto"},
    "style_cell": {
        "fontFamily": "inherit",
        "fontSize": "13px",
        "padding": "4px 8px",
        "textAlign": "left",
        "maxWidth": "420px",
        "overflow": "hidden",
        "textOverflow": "ellipsis",
        "whiteSpace": "nowrap",
    },
    "style_header": {"fontWeight": "600", "backgroundColor": "#f3f4f6"},
    "css": [{"selector": ".dash-spreadsheet td div", "rule": "line-height: 18px; max-height: 36px;"}],
}


def cell(v: Any, secrets: bool = True, limit: int = 200) -> Any:
    """A value as a DataTable cell: numbers stay numbers, everything else becomes one clean line."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        # 4 significant digits: 2226.8205 -> 2227, 0.123456 -> 0.1235, a p-value 1.2345e-05 -> 1.234e-05
        return round(v, max(0, 3 - math.floor(math.log10(abs(v))))) if v else 0.0
    if isinstance(v, (datetime, date)):
        return v.isoformat(sep=" ", timespec="seconds") if isinstance(v, datetime) else v.isoformat()
    if isinstance(v, (list, tuple)):
        return clean_line(", ".join("" if x is None else str(x) for x in v), limit, secrets)
    if isinstance(v, dict):
        return clean_line(str(v), limit, secrets)
    return clean_line(v, limit, secrets)


def rows_of(
    table: pa.Table | Sequence[Mapping[str, Any]], limit: int | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    if isinstance(table, pa.Table):
        t = table.slice(0, limit) if limit is not None else table
        return list(table.column_names), t.to_pylist()
    rows = list(table)[:limit] if limit is not None else list(table)
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(str(k))
    return cols, [dict(r) for r in rows]


def data_table(
    table: pa.Table | Sequence[Mapping[str, Any]],
    id: Any = None,
    page_size: int = 20,
    secrets: bool = True,
    max_rows: int = 5000,
    clickable: bool = False,
    **kwargs: Any,
) -> DataTable:
    """A sortable, paged table of query results (the first `max_rows` rows, cells as text)."""
    cols, rows = rows_of(table, max_rows)
    data: list[TableRow] = [{c: cell(r.get(c), secrets) for c in cols} for r in rows]
    if "trajectory_id" in cols:
        for d in data:
            d["id"] = d.get("trajectory_id")
    extra = {"id": id} if id is not None else {}
    style = dict(TABLE_STYLE)
    if clickable:
        style["style_data"] = {"cursor": "pointer"}
        style["style_data_conditional"] = [
            {"if": {"column_id": "trajectory_id"}, "color": "#0B5CAD", "textDecoration": "underline"}
        ]
    return DataTable(
        columns=[{"name": c, "id": c} for c in cols],
        data=data,
        page_size=page_size,
        page_action="native",
        sort_action="native",
        tooltip_delay=300,
        tooltip_duration=None,
        **extra,
        **style,
        **kwargs,
    )


def card(label: str, value: Any, tone: str = "") -> html.Div:
    return html.Div(
        [
            html.Div(fmt_num(value) if not isinstance(value, str) else value, className="card-value"),
            html.Div(label, className="card-label"),
        ],
        className=f"card {tone}".strip(),
    )


def pre(text: Any, className: str = "block", secrets: bool = True, **kwargs: Any) -> html.Pre:
    return html.Pre(clean_block(text, secrets=secrets), className=className, **kwargs)


def message(text: str, kind: str = "info") -> html.Div:
    return html.Div(text, className=f"msg msg-{kind}")


MAX_PROBLEMS_SHOWN = 8


def problems_message(
    problems: Sequence[Problem], store: AnnotationStore, secrets: bool = True
) -> html.Div | None:
    """A warning listing the problems of an annotation store's files (`path:line: severity: message`),
    or None when there are none."""
    if not problems:
        return None
    errors = sum(1 for p in problems if p.severity == "error")
    root, dataset = clean_line(str(store.root), 200, secrets), clean_line(store.dataset, 64, secrets)
    head = (
        f"{len(problems)} problem(s) in the annotation files of {root}/{dataset}"
        + (f" ({errors} error(s): those lines are not used)" if errors else "")
        + "; nothing was rewritten: fix the lines by hand "
        + f"(`trajlab annotations validate --annotations {root} --dataset {dataset}` lists them all)"
    )
    lines = [clean_line(str(p), 400, secrets) for p in problems[:MAX_PROBLEMS_SHOWN]]
    if len(problems) > MAX_PROBLEMS_SHOWN:
        lines.append(f"... and {len(problems) - MAX_PROBLEMS_SHOWN} more")
    return html.Div(
        [html.Div(head), html.Ul([html.Li(x) for x in lines])],
        className="msg msg-warn annotation-problems",
    )


def details(summary: str, children: Any, open: bool = False) -> html.Details:
    return html.Details([html.Summary(summary), children], open=open)


def kv(pairs: Iterable[tuple[str, Any]], secrets: bool = True) -> html.Table:
    """A two-column key/value table; empty values are left out."""
    rows = []
    for k, v in pairs:
        if v is None or v == "" or v == []:
            continue
        shown = v if isinstance(v, str) else fmt_num(v) if isinstance(v, (int, float)) else str(v)
        rows.append(html.Tr([html.Th(k), html.Td(clean_line(shown, 300, secrets))]))
    return html.Table(html.Tbody(rows), className="kv")
