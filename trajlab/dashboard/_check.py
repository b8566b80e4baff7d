"""Render every page on the server, without a browser: what `trajlab dash --check` and the demo run.

YAML validation catches what can be known from the file (unknown figure, a statement that is not a
SELECT...); this catches what only the lab can tell: a query naming a missing column, a figure whose
function fails on this lab, a trajectory whose DAG cannot be drawn. Each panel is computed by the same
function the page's callback calls, with the page's default filter values and figure controls.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import TrajlabError
from ._page_trajectory import trajectory_layout
from ._panels import (
    _choice_value,
    agreement_body,
    analysis_body,
    figure_body,
    page_layout,
    queue_body,
    sql_body,
)
from ._runs import RunsQuery, fetch_page
from ._spec import (
    AgreementPanel,
    AnalysisPanel,
    FigurePanel,
    MarkdownPanel,
    PageSpec,
    QueuePanel,
    RunsPanel,
    SqlPanel,
)

if TYPE_CHECKING:
    from ._app import DashContext


@dataclass
class PanelCheck:
    """One rendered panel (`panel` -1: the page itself; `kind` "trajectory" for a trajectory page)."""

    page: str
    path: str
    panel: int
    kind: str
    ok: bool
    note: str
    seconds: float

    def line(self) -> str:
        where = f"{self.path} panel {self.panel} ({self.kind})" if self.panel >= 0 else f"{self.path}"
        status = "ok" if self.ok else "ERROR"
        return f"{status:<5} {where}: {self.note} [{self.seconds * 1000:.0f} ms]"


def _messages(tree: Any, kind: str) -> list[str]:
    """Texts of the `message(..., kind)` boxes in a component tree."""
    out: list[str] = []
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
            continue
        cls = getattr(x, "className", None)
        if isinstance(cls, str) and f"msg-{kind}" in cls.split():
            out.append(str(getattr(x, "children", "")))
        children = getattr(x, "children", None)
        if children is not None and not isinstance(children, str):
            stack.append(children)
    return out


def _find(tree: Any, cid: str) -> Any:
    """The `data` of the component with id `cid` in a component tree (None if absent)."""
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
            continue
        if getattr(x, "id", None) == cid:
            return getattr(x, "data", None)
        children = getattr(x, "children", None)
        if children is not None and not isinstance(children, str):
            stack.append(children)
    return None


def _panel(ctx: DashContext, page: PageSpec, i: int, panel: Any) -> tuple[str, Any]:
    values = {f.id: f.default for f in page.filters}
    if isinstance(panel, SqlPanel):
        return f"SQL ({panel.display})", sql_body(ctx, page, i, panel, values)
    if isinstance(panel, FigurePanel):
        controls = {k: _choice_value(panel.options.get(k, c[0])) for k, c in panel.controls.items()}
        return f"figure {panel.figure}", figure_body(ctx, panel, controls)
    if isinstance(panel, AnalysisPanel):
        return f"analysis {panel.analysis}", analysis_body(ctx, panel)
    if isinstance(panel, AgreementPanel):
        return "agreement", agreement_body(ctx, panel)
    if isinstance(panel, QueuePanel):
        return "queue", queue_body(ctx, page, i, panel, (ctx.annotator or "").strip())
    if isinstance(panel, RunsPanel):
        q = RunsQuery(
            filters=dict(panel.preset),
            sort=panel.sort,
            descending=panel.descending,
            page_size=panel.page_size,
            columns=list(dict.fromkeys(["trajectory_id", *panel.columns])),
        )
        res = fetch_page(ctx.source.snapshot().cursor(), q)
        return f"{res.total:,} runs", None
    if isinstance(panel, MarkdownPanel):
        return "text", None
    return type(panel).__name__, None


def check_pages(ctx: DashContext, trajectories: int = 1) -> list[PanelCheck]:
    """Render every panel of every page, then the trajectory page of up to `trajectories` runs with a
    DAG (failures first). Errors are collected, not raised."""
    out: list[PanelCheck] = []
    for page in ctx.spec.pages:
        t0 = time.perf_counter()
        try:
            errors = _messages(page_layout(ctx, page), "error")
            out.append(
                PanelCheck(
                    page.id,
                    page.path,
                    -1,
                    "page",
                    not errors,
                    "; ".join(errors) or f"{len(page.panels)} panels",
                    time.perf_counter() - t0,
                )
            )
        except TrajlabError as e:
            out.append(PanelCheck(page.id, page.path, -1, "page", False, str(e), time.perf_counter() - t0))
            continue
        for i, panel in enumerate(page.panels):
            t0 = time.perf_counter()
            kind = getattr(panel, "kind", "?")
            try:
                what, body = _panel(ctx, page, i, panel)
                errors = _messages(body, "error")
                notes = _messages(body, "warn")
                note = "; ".join(errors) or what + (f" ({'; '.join(notes)})" if notes else "")
                out.append(
                    PanelCheck(page.id, page.path, i, kind, not errors, note, time.perf_counter() - t0)
                )
            except TrajlabError as e:
                out.append(PanelCheck(page.id, page.path, i, kind, False, str(e), time.perf_counter() - t0))
    if trajectories > 0:
        out += _check_trajectories(ctx, trajectories)
    return out


def _check_trajectories(ctx: DashContext, n: int) -> list[PanelCheck]:
    snap = ctx.source.snapshot()
    rows = (
        snap.cursor()
        .execute(
            "SELECT r.trajectory_id FROM runs r SEMI JOIN dag_metrics m USING (trajectory_id) "
            "ORDER BY r.outcome = 'failure' DESC, r.n_steps DESC, r.trajectory_id LIMIT ?",
            [int(n)],
        )
        .fetchall()
    )
    out = []
    for (tid,) in rows:
        t0 = time.perf_counter()
        path = f"/trajectory/{tid}"
        try:
            layout = trajectory_layout(ctx, tid)
            errors = _messages(layout, "error")
            found = _find(layout, "dag-chunks")
            payload = json.loads(found) if isinstance(found, str) else found  # sent as one JSON string
            note = "; ".join(errors) or (
                f"step DAG of {payload['n_nodes']:,} steps, {payload['n_visible']:,} nodes shown "
                f"in {len(payload['chunks'])} chunk(s)"
                if payload
                else "no DAG"
            )
            out.append(PanelCheck(tid, path, -1, "trajectory", not errors, note, time.perf_counter() - t0))
        except TrajlabError as e:
            out.append(PanelCheck(tid, path, -1, "trajectory", False, str(e), time.perf_counter() - t0))
    return out
