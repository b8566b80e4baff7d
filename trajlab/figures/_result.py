"""The value every figure function returns, and the plumbing figure functions share."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Union

import plotly.graph_objects as go
import pyarrow as pa

from ..store import Lab
from ._style import safe_text, styled

LabLike = Union[Lab, str, "os.PathLike[str]"]


@dataclass
class FigureResult:
    """One figure: the plotly figure, the numbers it plots, and where they came from.

    `data` is exactly what is plotted (one row per bar, point, cell or node); `sql` and `params` are the
    analysis's SQL and parameters (or the exact query the figure ran); `analysis` names the trajlab
    analysis or API behind it. `skipped` is a one-line reason when the lab lacks the data (the figure
    is then an empty placeholder saying so); `notes` carries caveats that do not stop the figure.
    """

    name: str
    title: str
    figure: go.Figure
    data: pa.Table
    sql: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    analysis: str | None = None
    skipped: str | None = None
    notes: list[str] = field(default_factory=list)
    caption: str = ""
    width: str = "single"
    extras: dict[str, pa.Table] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.skipped is None

    def provenance(self) -> dict[str, Any]:
        """The figure's provenance and data as plain JSON-able values (the sidecar's body)."""
        return {
            "name": self.name,
            "title": self.title,
            "caption": self.caption,
            "width": self.width,
            "skipped": self.skipped,
            "notes": list(self.notes),
            "analysis": self.analysis,
            "params": jsonable(self.params),
            "sql": self.sql,
            "columns": [{"name": f.name, "type": str(f.type)} for f in self.data.schema],
            "data": jsonable(self.data.to_pylist()),
            "extras": {k: jsonable(t.to_pylist()) for k, t in self.extras.items()},
        }

    def __repr__(self) -> str:
        state = f"skipped: {self.skipped}" if self.skipped else f"{self.data.num_rows} rows"
        return f"FigureResult({self.name!r}, {state})"


def jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [jsonable(x) for x in v]
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def open_lab(lab: LabLike) -> Lab:
    return lab if isinstance(lab, Lab) else Lab.open(lab)


def skipped(
    name: str,
    title: str,
    reason: str,
    width: str,
    data: pa.Table | None = None,
    sql: str | None = None,
    params: dict[str, Any] | None = None,
    analysis: str | None = None,
) -> FigureResult:
    """A placeholder result: an empty figure that says why, no data."""
    fig = go.Figure()
    fig.add_annotation(
        text=f"not available: {reason}",
        x=0.5,
        y=0.5,
        xref="paper",
        yref="paper",
        showarrow=False,
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    styled(fig, width, aspect=0.4)
    return FigureResult(
        name,
        title,
        fig,
        data if data is not None else pa.table({}),
        sql,
        params or {},
        analysis,
        skipped=reason,
        width=width,
    )


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion (95% by default); (None, None) when n is 0."""
    if n <= 0:
        return None, None
    p = successes / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


def group_label(row: dict[str, Any], cols: list[str], middle: bool = False) -> str:
    """`a · b` from the grouping columns of a row (NULL shown as `(none)`)."""
    return (
        " · ".join("(none)" if row.get(c) is None else safe_text(row[c], 40, middle) for c in cols) or "all"
    )


def distinct_labels(keys: Sequence[Hashable], label: Callable[[Any, bool], str]) -> list[str]:
    """`label(key, middle)` for each key, one label per distinct key.

    Labels are shortened, so two long values that share a prefix (`mcp__playwright__browser_navigate`
    and `..._navigate_back`, two model ids that differ in a suffix) would get one label, and plotly
    would draw both on one axis category (and a table would merge their rows). Such keys are labelled
    again cut in the middle, and any label still shared gets ` (1)`, ` (2)`... in key order."""
    uniq = list(dict.fromkeys(keys))
    out = {k: label(k, False) for k in uniq}
    for middle in (True, None):
        by: dict[str, list[Any]] = {}
        for k in uniq:
            by.setdefault(out[k], []).append(k)
        for lab, ks in by.items():
            if len(ks) < 2:
                continue
            for n, k in enumerate(sorted(ks, key=repr), 1):
                out[k] = label(k, True) if middle else f"{lab} ({n})"
    return [out[k] for k in keys]


def group_labels(rows: Sequence[dict[str, Any]], cols: list[str]) -> list[str]:
    """`group_label` of each row, distinct for rows whose grouping values differ (see distinct_labels)."""
    keys = [tuple(r.get(c) for c in cols) for r in rows]
    return distinct_labels(keys, lambda k, mid: group_label(dict(zip(cols, k)), cols, mid))
