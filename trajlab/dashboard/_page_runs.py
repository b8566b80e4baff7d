"""The runs panel: summary counts, filter dropdowns and the server-side paged trajectory table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dash import ALL, Input, Output, State, dcc, html, no_update
from dash.dash_table.DataTable import DataTable
from dash.exceptions import PreventUpdate

from ..errors import TrajlabError
from ._components import TABLE_STYLE, card, cell, message
from ._runs import FILTER_LABELS, RUN_COLUMNS, RUN_FILTERS, RunsQuery, fetch_page
from ._spec import RunsPanel

if TYPE_CHECKING:
    from ._app import DashContext

TRAJ_LINK_STYLE = {"if": {"column_id": "trajectory_id"}, "color": "#0B5CAD", "textDecoration": "underline"}


def runs_layout(ctx: DashContext, panel: RunsPanel) -> html.Div:
    snap = ctx.source.snapshot()
    filters = []
    for name in panel.filters:
        options = [{"label": f"{v} ({n:,})", "value": v} for v, n in snap.facets.get(name, [])]
        filters.append(
            html.Div(
                [
                    html.Label(FILTER_LABELS.get(name, name), htmlFor=f"runs-filter-{name}"),
                    dcc.Dropdown(
                        id={"type": "runs-filter", "name": name},
                        options=options,
                        value=list(panel.preset.get(name, [])),
                        multi=True,
                        placeholder="any",
                        persistence=f"{name}:{','.join(panel.preset.get(name, []))}",
                        persistence_type="session",
                    ),
                ],
                className="filter",
                id=f"runs-filter-box-{name}",
            )
        )
    # The search input always exists (the callback reads it); hidden when the page turns search off.
    filters.append(
        html.Div(
            [
                html.Label("search task / id", htmlFor="runs-search"),
                dcc.Input(
                    id="runs-search",
                    type="search",
                    debounce=True,
                    placeholder="text in task, id prefix",
                    persistence=True,
                    persistence_type="session",
                ),
            ],
            className="filter",
            style=None if panel.search else {"display": "none"},
        )
    )
    cols = list(dict.fromkeys(["trajectory_id", *panel.columns]))
    table = DataTable(
        id="runs-table",
        columns=[{"name": RUN_COLUMNS[c], "id": c} for c in cols],
        data=[],
        page_action="custom",
        page_current=0,
        page_size=panel.page_size,
        sort_action="custom",
        sort_mode="single",
        sort_by=[{"column_id": panel.sort, "direction": "desc" if panel.descending else "asc"}],
        style_data={"cursor": "pointer"},
        style_data_conditional=[
            TRAJ_LINK_STYLE,
            {
                "if": {"filter_query": '{outcome} = "failure"', "column_id": "outcome"},
                "color": "#B23A00",
                "fontWeight": "600",
            },
            {"if": {"filter_query": '{outcome} = "success"', "column_id": "outcome"}, "color": "#0B5CAD"},
        ],
        tooltip_delay=300,
        tooltip_duration=None,
        **TABLE_STYLE,
    )
    config = {
        "filters": list(panel.filters),
        "columns": cols,
        # Preset values of filters the panel does not show are fixed constraints of the page.
        "fixed": {k: v for k, v in panel.preset.items() if k not in panel.filters},
    }
    return html.Div(
        [
            html.H3(panel.title) if panel.title else None,
            html.Div(id="runs-summary", className="cards"),
            html.Div(filters, className="filters"),
            html.Div(id="runs-error"),
            table,
            html.Div(
                "Click a row to open the trajectory. Paged and sorted server-side in DuckDB.",
                className="hint",
            ),
            dcc.Store(id="runs-config", data=config),
        ],
        className="panel runs-panel",
    )


def _summary_cards(s: dict[str, Any]) -> list[Any]:
    acc = s.get("accuracy")
    return [
        card("runs", s.get("runs") or 0),
        card("successes", s.get("successes") or 0, "tone-success"),
        card("failures", s.get("failures") or 0, "tone-failure"),
        card("accuracy", "–" if acc is None else f"{acc:.1%}"),
        card("failures labeled", s.get("labeled_failures") or 0),
        card("human-reviewed", s.get("human_reviewed") or 0),
        card("models", s.get("models") or 0),
        card("mean steps", "–" if s.get("mean_steps") is None else f"{s['mean_steps']:.1f}"),
        card("mean tokens", "–" if s.get("mean_tokens") is None else f"{s['mean_tokens']:,.0f}"),
    ]


def register_runs(app: Any, ctx: DashContext) -> None:
    @app.callback(
        Output("runs-table", "page_current"),
        Input({"type": "runs-filter", "name": ALL}, "value"),
        Input("runs-search", "value"),
        prevent_initial_call=True,
    )
    def _first_page(_values: Any, _search: Any) -> int:
        return 0

    @app.callback(
        Output("runs-table", "data"),
        Output("runs-table", "page_count"),
        Output("runs-table", "tooltip_data"),
        Output("runs-summary", "children"),
        Output("runs-error", "children"),
        Input({"type": "runs-filter", "name": ALL}, "value"),
        Input("runs-search", "value"),
        Input("runs-table", "page_current"),
        Input("runs-table", "page_size"),
        Input("runs-table", "sort_by"),
        State({"type": "runs-filter", "name": ALL}, "id"),
        State("runs-config", "data"),
    )
    def _page(
        values: list[list[str] | None],
        search: str | None,
        page: int | None,
        page_size: int | None,
        sort_by: list[dict[str, str]] | None,
        ids: list[dict[str, str]],
        config: dict[str, Any] | None,
    ) -> tuple[list[dict[str, Any]], int, list[dict[str, Any]], Any, html.Div | None]:
        filters = {i["name"]: v or [] for i, v in zip(ids, values) if i["name"] in RUN_FILTERS}
        for name, fixed in ((config or {}).get("fixed") or {}).items():
            filters[name] = list(fixed)
        sort = config and sort_by and sort_by[0].get("column_id")
        q = RunsQuery(
            filters=filters,
            search=search,
            sort=sort if sort in RUN_COLUMNS else "started_at",
            descending=not sort_by or sort_by[0].get("direction") != "asc",
            page=int(page or 0),
            page_size=int(page_size or 25),
            columns=config["columns"] if config else ["trajectory_id"],
        )
        try:
            res = ctx.timed("runs-page", lambda: fetch_page(ctx.source.snapshot().cursor(), q))
        except TrajlabError as e:
            return [], 0, [], no_update, message(str(e), "error")
        data = []
        tips = []
        for r in res.rows:
            row = {c: cell(r.get(c), ctx.secrets) for c in r}
            row["id"] = r["trajectory_id"]
            data.append(row)
            tips.append({"task": {"value": str(row.get("task") or ""), "type": "text"}})
        pages = max(1, -(-res.total // q.page_size))
        return data, pages, tips, _summary_cards(res.summary), None

    @app.callback(
        Output("url", "pathname", allow_duplicate=True),
        Input("runs-table", "active_cell"),
        prevent_initial_call=True,
    )
    def _open(active: dict[str, Any] | None) -> str:
        if not active or not active.get("row_id"):
            raise PreventUpdate
        return f"/trajectory/{active['row_id']}"
