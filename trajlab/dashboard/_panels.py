"""Pages defined in dashboards/*.yaml: their filters and the SQL, figure, analysis, agreement, queue
and Markdown panels.

Panel bodies are computed by one pattern-matching callback per kind of input (page filters, figure
controls, reviewer), lazily when the page is shown, and memoized per lab generation.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.express as px
import pyarrow as pa
from dash import ALL, MATCH, Input, Output, State, dcc, html
from dash import ctx as dash_ctx
from dash.exceptions import PreventUpdate

from ..errors import TrajlabError
from ..review import ReviewQueue
from ..store import fetch_arrow, run_readonly
from ._components import data_table, details, message, problems_message
from ._page_runs import runs_layout
from ._review import annotation_problems, live_agreement
from ._source import BLIND_NOTE, BLIND_TABLES
from ._spec import (
    PARAM,
    AgreementPanel,
    AnalysisPanel,
    FigurePanel,
    FilterSpec,
    MarkdownPanel,
    PageSpec,
    QueuePanel,
    RunsPanel,
    SqlPanel,
)

if TYPE_CHECKING:
    from ._app import DashContext


def _key(page: PageSpec, i: int) -> dict[str, Any]:
    return {"type": "panel-body", "page": page.id, "idx": i}


def _filter_options(ctx: DashContext, f: FilterSpec) -> list[dict[str, str]]:
    snap = ctx.source.snapshot()
    if f.options is not None:
        values = [str(v) for v in f.options]
    elif f.options_from is not None:
        values = [v for v, _ in snap.facets.get(f.options_from, []) if v != "(none)"]
    else:
        t = snap.cached(
            ("options", f.options_sql), lambda: fetch_arrow(run_readonly(snap.cursor(), f.options_sql or ""))
        )
        values = ["" if v is None else str(v) for v in (t.column(0).to_pylist() if t.num_columns else [])]
    return [{"label": v, "value": v} for v in values[:5000]]


def page_layout(ctx: DashContext, page: PageSpec) -> html.Div:
    filters = []
    for f in page.filters:
        try:
            options = _filter_options(ctx, f)
        except TrajlabError as e:
            filters.append(message(f"filter {f.id}: {e}", "error"))
            continue
        filters.append(
            html.Div(
                [
                    html.Label(f.label or f.id),
                    dcc.Dropdown(
                        id={"type": "page-filter", "page": page.id, "filter": f.id},
                        options=options,
                        value=f.default if f.default is not None else ([] if f.multi else None),
                        multi=f.multi,
                        placeholder="any",
                        persistence=True,
                        persistence_type="session",
                    ),
                ],
                className="filter",
            )
        )
    initial = {f.id: f.default for f in page.filters}
    panels: list[Any] = []
    for i, panel in enumerate(page.panels):
        if isinstance(panel, RunsPanel):
            panels.append(runs_layout(ctx, panel))
        elif isinstance(panel, MarkdownPanel):
            panels.append(
                html.Div(dcc.Markdown(panel.text, dangerously_allow_html=False), className="panel markdown")
            )
        else:
            panels.append(_lazy_panel(page, i, panel, ctx.blind))
    return html.Div(
        [
            html.H2(page.title),
            dcc.Markdown(page.description, className="page-description") if page.description else None,
            html.Div(filters, className="filters") if filters else None,
            dcc.Store(id="page-filter-values", data=initial),
            *panels,
        ],
        className="page",
        id=f"page-{page.id}",
    )


def _blind_choices(opt: str, choices: list[Any]) -> list[Any]:
    """A blind reviewer is not offered label sources that are hidden (the judge's, the classifier's)."""
    from ..analysis import LABEL_TABLES

    if opt != "source":
        return choices
    kept = [c for c in choices if LABEL_TABLES.get(str(c)) not in BLIND_TABLES]
    return kept or choices


def _lazy_panel(page: PageSpec, i: int, panel: Any, blind: bool = False) -> html.Div:
    controls = []
    if isinstance(panel, FigurePanel):
        for opt, choices in panel.controls.items():
            if blind:
                choices = _blind_choices(opt, choices)
            default = panel.options.get(opt, choices[0])
            if blind and default not in choices:
                default = choices[0]
            controls.append(
                html.Div(
                    [
                        html.Label(opt),
                        dcc.Dropdown(
                            id={"type": "figure-control", "page": page.id, "idx": i, "option": opt},
                            options=[{"label": _choice_label(c), "value": _choice_value(c)} for c in choices],
                            value=_choice_value(default),
                            clearable=False,
                        ),
                    ],
                    className="filter",
                )
            )
    title = getattr(panel, "title", None)
    return html.Div(
        [
            html.H3(title) if title else None,
            html.Div(controls, className="filters") if controls else None,
            dcc.Loading(html.Div(id=_key(page, i), className="panel-body"), type="dot"),
        ],
        className=f"panel panel-{panel.kind}",
    )


def _choice_value(c: Any) -> Any:
    """Dropdown values must be scalars: a list choice (e.g. `by: [model, harness]`) travels as `a,b`."""
    return ",".join(str(x) for x in c) if isinstance(c, (list, tuple)) else c


def _choice_label(c: Any) -> str:
    return " × ".join(str(x) for x in c) if isinstance(c, (list, tuple)) else str(c)


def _option_value(c: Any, default: Any) -> Any:
    if isinstance(c, str) and isinstance(default, (list, tuple)):
        return tuple(x for x in c.split(",") if x)
    return c


# -- panel bodies -----------------------------------------------------------------------------------


def sql_body(ctx: DashContext, page: PageSpec, i: int, panel: SqlPanel, values: dict[str, Any]) -> Any:
    used = set(PARAM.findall(panel.sql))
    params = {k: _param(v) for k, v in values.items() if k in used}
    snap = ctx.source.snapshot()
    key = ("sql", panel.sql, tuple(sorted((k, str(v)) for k, v in params.items())))
    table: pa.Table = snap.cached(
        key, lambda: fetch_arrow(run_readonly(snap.cursor(), panel.sql, params or None))
    )
    out: list[Any] = []
    if panel.description:
        out.append(dcc.Markdown(panel.description, className="hint"))
    if panel.display == "number":
        v = table.column(0)[0].as_py() if table.num_rows and table.num_columns else None
        out.append(html.Div(str(v) if v is not None else "–", className="big-number"))
    elif panel.display == "table" or table.num_rows == 0:
        if table.num_rows == 0:
            out.append(message("The query returned no rows."))
        out.append(
            data_table(
                table,
                id={"type": "nav-table", "page": page.id, "idx": i},
                page_size=panel.page_size,
                secrets=ctx.secrets,
                clickable="trajectory_id" in table.column_names,
            )
        )
    else:
        out.append(_chart(ctx, panel, table))
        out.append(details("data", data_table(table, page_size=panel.page_size, secrets=ctx.secrets)))
    out.append(details("SQL", html.Pre(panel.sql.strip(), className="block sql")))
    return out


def _param(v: Any) -> Any:
    if isinstance(v, list):
        return [str(x) for x in v] if v else None
    return None if v in ("", None) else v


def _chart(ctx: DashContext, panel: SqlPanel, table: pa.Table) -> Any:
    from ..figures import paper_template, safe_text

    missing = [c for c in (panel.x, panel.y, panel.color) if c and c not in table.column_names]
    if missing:
        return message(
            f"columns {missing} are not in the query result ({', '.join(table.column_names)})", "error"
        )
    df = table.to_pandas()
    for c in df.columns:  # plotly renders a subset of HTML in labels: make text inert
        # pandas 3 reads Arrow strings as the `str` dtype, not `object`: test for both
        if df[c].dtype == object or pd.api.types.is_string_dtype(df[c].dtype):
            df[c] = df[c].map(lambda v: safe_text(v, 80) if isinstance(v, str) else v)
    fn = {"bar": px.bar, "line": px.line, "scatter": px.scatter}[panel.display]
    fig = fn(df, x=panel.x, y=panel.y, color=panel.color, template=paper_template("screen"))
    fig.update_layout(height=380, margin={"l": 50, "r": 20, "t": 20, "b": 60})
    return dcc.Graph(figure=fig, config={"displaylogo": False})


def figure_body(ctx: DashContext, panel: FigurePanel, controls: dict[str, Any]) -> Any:
    from ..figures import FIGURES

    options = dict(panel.options)
    for k, v in controls.items():
        options[k] = _option_value(v, options.get(k, panel.controls[k][0]))
    snap = ctx.source.snapshot()
    key = ("figure", panel.figure, repr(sorted(options.items())))
    res = snap.cached(key, lambda: FIGURES[panel.figure](snap.shown, width="screen", **options), size=64)
    out: list[Any] = []
    if res.skipped:
        out.append(message(f"not available: {res.skipped}", "warn"))
        if ctx.blind:
            out.append(html.Div(BLIND_NOTE, className="hint"))
    else:
        fig = res.figure
        fig.update_layout(autosize=True, height=max(380, int(fig.layout.height or 0)), width=None)
        out.append(dcc.Graph(figure=fig, config={"displaylogo": False}, className="figure"))
    if res.caption:
        out.append(html.P(res.caption, className="caption"))
    for n in res.notes:
        out.append(html.Div(n, className="hint"))
    if panel.show_data and res.data.num_rows:
        out.append(
            details(
                f"plotted numbers ({res.data.num_rows} rows)",
                data_table(res.data, page_size=15, secrets=ctx.secrets),
            )
        )
    src = (
        f"trajlab.figures.FIGURES[{panel.figure!r}] · analysis: {res.analysis or '-'} · params: {res.params}"
    )
    out.append(
        details(
            "where the numbers come from",
            html.Div([html.Div(src, className="hint"), html.Pre(res.sql or "", className="block sql")]),
        )
    )
    return out


def analysis_body(ctx: DashContext, panel: AnalysisPanel) -> Any:
    from .. import analysis

    fn = getattr(analysis, analysis.ANALYSES[panel.analysis])
    kwargs = dict(panel.options)
    if "progress" in inspect.signature(fn).parameters:
        kwargs["progress"] = False
    snap = ctx.source.snapshot()
    res = snap.cached(
        ("analysis", panel.analysis, repr(sorted(kwargs.items()))), lambda: fn(snap.shown, **kwargs)
    )
    out: list[Any] = []
    for m in res.missing:
        hint = analysis.missing_hint(m)
        out.append(message(f"{m}" + (f" — {hint}" if hint else ""), "warn"))
    for n in res.notes:
        out.append(html.Div(n, className="hint"))
    out.append(data_table(res.table, page_size=panel.page_size, secrets=ctx.secrets))
    out.append(details("SQL", html.Pre(res.sql, className="block sql")))
    return out


def _problems(ctx: DashContext) -> list[Any]:
    """The annotation files' problems as a warning (empty when there are none)."""
    warning = problems_message(annotation_problems(ctx.source), ctx.source.store, ctx.secrets)
    return [] if warning is None else [warning]


def agreement_body(ctx: DashContext, panel: AgreementPanel) -> Any:
    rep = live_agreement(ctx.source, panel.k)
    if not rep.raters:
        return [
            *_problems(ctx),
            message("No labels to compare yet: judge the failures and review some of them."),
        ]

    def f(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    out: list[Any] = [
        html.Div(
            [
                html.Div(
                    f"{rep.n_items} trajectories · raters: "
                    + ", ".join(f"{r} ({k})" for r, k in rep.raters.items())
                ),
                html.Div(
                    f"humans across reviewers ({rep.n_multi_rated} trajectories with 2+ human labels): "
                    f"Fleiss' kappa {f(rep.fleiss_kappa)}, Krippendorff's alpha {f(rep.krippendorff_alpha)}",
                    id="agreement-summary",
                ),
                html.Div(f"{rep.n_unsure} `unsure` labels left out of the category statistics")
                if rep.n_unsure
                else None,
                html.Div(
                    f"human labels read live from {ctx.source.store.folder}; judge and gold labels from the lab",
                    className="hint",
                ),
            ],
            className="agreement-head",
        ),
        *_problems(ctx),
    ]
    titles = {
        "pairs": "Rater pairs (Cohen's kappa, decisive-step agreement)",
        "per_category": "Per category (specific agreement)",
        "decisive": f"Decisive steps (exact and within ±{panel.k})",
    }
    for name, t in rep.tables().items():
        if t.num_rows == 0:
            continue
        title = titles.get(name, f"{name} (rows: gold, columns: judge)")
        out += [html.H4(title), data_table(t, page_size=20, secrets=ctx.secrets)]
    return out


def queue_body(ctx: DashContext, page: PageSpec, i: int, panel: QueuePanel, annotator: str | None) -> Any:
    if not annotator:
        return [message("Enter your name as reviewer (top right) to see your queue.")]
    q = ReviewQueue(
        ctx.source.lab,
        ctx.source.taxonomy,
        annotator,
        mode="blind" if ctx.blind else "normal",
        reviewers_per_item=ctx.reviewers,
        store=ctx.source.store,
    )
    items = q.items()[: panel.limit]
    rows = [
        {
            "trajectory_id": it.trajectory_id,
            "priority": it.priority,
            "judge category": it.judge.category if it.judge else None,
            "confidence": it.judge.confidence if it.judge else None,
            "why": "; ".join(it.reasons),
            "reviews": it.n_reviews,
            "domain": it.domain,
            "steps": it.n_steps,
            "task": it.task,
        }
        for it in items
    ]
    if not rows:
        return [*_problems(ctx), message(f"Nothing left to review for {annotator}.")]
    return [
        *_problems(ctx),
        html.Div(
            f"{len(rows)} trajectories waiting for {annotator}, highest priority first. Click one to review it.",
            className="hint",
        ),
        data_table(
            rows,
            id={"type": "nav-table", "page": page.id, "idx": i},
            page_size=25,
            secrets=ctx.secrets,
            clickable=True,
        ),
    ]


# -- callbacks --------------------------------------------------------------------------------------


def register_panels(app: Any, ctx: DashContext) -> None:
    @app.callback(
        Output("page-filter-values", "data"),
        Input({"type": "page-filter", "page": ALL, "filter": ALL}, "value"),
        State({"type": "page-filter", "page": ALL, "filter": ALL}, "id"),
        prevent_initial_call=True,
    )
    def _values(values: list[Any], ids: list[dict[str, Any]]) -> dict[str, Any]:
        return {i["filter"]: v for i, v in zip(ids, values)}

    @app.callback(
        Output({"type": "panel-body", "page": MATCH, "idx": MATCH}, "children"),
        Input({"type": "panel-body", "page": MATCH, "idx": MATCH}, "id"),
        Input("page-filter-values", "data"),
        Input({"type": "figure-control", "page": MATCH, "idx": MATCH, "option": ALL}, "value"),
        Input("annotator", "value"),
        State({"type": "figure-control", "page": MATCH, "idx": MATCH, "option": ALL}, "id"),
    )
    def _body(
        pid: dict[str, Any],
        values: dict[str, Any] | None,
        control_values: list[Any],
        annotator: str | None,
        control_ids: list[dict[str, Any]],
    ) -> Any:
        try:
            page = ctx.spec.page(pid["page"])
            panel = page.panels[pid["idx"]]
        except (KeyError, IndexError):
            raise PreventUpdate from None
        if dash_ctx.triggered_id == "annotator" and not isinstance(panel, QueuePanel):
            raise PreventUpdate  # only the queue depends on who is reviewing
        try:
            if isinstance(panel, SqlPanel):
                return ctx.timed("sql-panel", lambda: sql_body(ctx, page, pid["idx"], panel, values or {}))
            if isinstance(panel, FigurePanel):
                controls = {c["option"]: v for c, v in zip(control_ids, control_values)}
                return ctx.timed("figure-panel", lambda: figure_body(ctx, panel, controls))
            if isinstance(panel, AnalysisPanel):
                return analysis_body(ctx, panel)
            if isinstance(panel, AgreementPanel):
                return agreement_body(ctx, panel)
            if isinstance(panel, QueuePanel):
                return queue_body(ctx, page, pid["idx"], panel, (annotator or "").strip())
        except TrajlabError as e:
            return [message(f"{page.source}: panels[{pid['idx']}]: {e}", "error")]
        raise PreventUpdate

    @app.callback(
        Output("url", "pathname", allow_duplicate=True),
        Input({"type": "nav-table", "page": ALL, "idx": ALL}, "active_cell"),
        prevent_initial_call=True,
    )
    def _open(cells: list[dict[str, Any] | None] | None) -> str:
        trig = dash_ctx.triggered_id
        if not isinstance(trig, dict):
            raise PreventUpdate
        for item, c in zip(dash_ctx.inputs_list[0], cells or []):
            if item.get("id") == trig and c and c.get("row_id"):
                return f"/trajectory/{c['row_id']}"
        raise PreventUpdate
