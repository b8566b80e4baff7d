"""The trajectory page: header, step DAG (or timeline), step inspector, and the labels panel.

The parts live in their own modules: `_trajectory_data` (the cached trajectory and its DAG view),
`_inspector` (step inspector and timeline table) and `_dag_payload` (what the browser draws the DAG
from); their names that other code imports from here are re-exported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update
from dash.exceptions import PreventUpdate

from ..errors import LabError
from ._components import message, pre
from ._dag_payload import EDGE_COLUMNS, NODE_COLUMNS, chunk_payload, payload_json
from ._graph import AUTO_COLLAPSE_NODES, DEFAULT_MIN_RUN, EDGE_COLORS, MARKS
from ._inspector import TIMELINE_PAGE, _timeline, inspector
from ._labels import labels_layout
from ._text import clean_line, fmt_seconds
from ._trajectory_data import TrajectoryCache, TrajectoryData, dag_view

if TYPE_CHECKING:
    from ._app import DashContext

__all__ = [
    "EDGE_COLUMNS",
    "NODE_COLUMNS",
    "TIMELINE_PAGE",
    "TrajectoryCache",
    "TrajectoryData",
    "chunk_payload",
    "dag_view",
    "inspector",
    "payload_json",
    "register_trajectory",
    "trajectory_layout",
]


# -- layout -----------------------------------------------------------------------------------------


def _header(ctx: DashContext, d: TrajectoryData) -> html.Div:
    r = d.row
    s = ctx.secrets
    chips = [
        html.Span(r["outcome"], className=f"chip outcome-{r['outcome']}"),
        *[
            html.Span(clean_line(f"{k}: {r[k]}", 60, s), className="chip")
            for k in ("runner", "model", "harness", "benchmark", "domain", "difficulty", "condition", "split")
            if r.get(k) is not None
        ],
        html.Span(
            f"{r['n_steps']} steps · {r['n_tool_calls']} tool calls · {r['n_errors']} errors",
            className="chip",
        ),
    ]
    if r.get("total_tokens") is not None:
        chips.append(html.Span(f"{r['total_tokens']:,} tokens", className="chip"))
    if r.get("duration_s") is not None:
        chips.append(html.Span(fmt_seconds(r["duration_s"]), className="chip"))
    blocks = [
        html.Div([html.H4("Task"), pre(r.get("task") or "(no task recorded)", "block task", secrets=s)])
    ]
    answers = [
        ("Final answer", r.get("final_answer")),
        ("Expected answer", r.get("expected_answer")),
        ("Runner error", r.get("error")),
    ]
    blocks += [html.Div([html.H4(k), pre(v, "block short", secrets=s)]) for k, v in answers if v]
    return html.Div(
        [
            html.Div(
                [
                    dcc.Link("← runs", href="/", className="back"),
                    html.H2(["Trajectory ", html.Code(r["trajectory_id"], id="traj-title-id")]),
                ],
                className="title-row",
            ),
            html.Div(chips, className="chips"),
            html.Div(blocks, className="task-blocks"),
        ],
        className="traj-header",
    )


def _legend() -> html.Div:
    from ..figures import MODALITY_COLORS, STATUS_COLORS

    def swatch(color: str, border: str = "#404040", shape: str = "box") -> html.Span:
        return html.Span(className=f"swatch {shape}", style={"background": color, "borderColor": border})

    return html.Div(
        [
            html.Span("fill = modality:", className="legend-title"),
            *[html.Span([swatch(c), m], className="legend-item") for m, c in MODALITY_COLORS.items()],
            html.Span("outline = status:", className="legend-title"),
            *[html.Span([swatch("#fff", c), s], className="legend-item") for s, c in STATUS_COLORS.items()],
            html.Span("edges:", className="legend-title"),
            *[
                html.Span(
                    [html.Span(className="edge-swatch", style={"background": c}), t], className="legend-item"
                )
                for t, c in EDGE_COLORS.items()
            ],
            html.Span("marks:", className="legend-title"),
            html.Span(
                [swatch(MARKS["decisive"]["color"], "#000"), "decisive (label)"], className="legend-item"
            ),
            html.Span([swatch(MARKS["evidence"]["color"]), "evidence"], className="legend-item"),
            html.Span(
                [swatch(MARKS["human_decisive"]["color"]), "your/human decisive"], className="legend-item"
            ),
            html.Span([swatch(MARKS["candidate"]["color"]), "DAG candidate"], className="legend-item"),
            html.Span(
                "★ answer step, ⬢ sub-agent, ⊟ folded run (double outline), retry edges dashed",
                className="legend-item",
            ),
        ],
        className="legend",
    )


def _query(search: str | None) -> dict[str, str]:
    from urllib.parse import parse_qs

    return {k: v[-1] for k, v in parse_qs((search or "").lstrip("?")).items()}


def trajectory_layout(ctx: DashContext, tid: str, search: str | None = None) -> html.Div:
    """The page of one trajectory. URL options: `fold=0|1` (runs of similar steps), `agents=none|all`
    (folded sub-agents), `step=N` (open the inspector on step N), `chunked=0` (draw in one go)."""
    q = _query(search)
    try:
        d = ctx.trajectories.get(ctx, tid)
    except LabError as e:
        return html.Div(
            [message(str(e), "error"), dcc.Link("← back to the runs", href="/")], className="page"
        )
    agents = {n["agent_id"] for n in d.dag.nodes} - {"main"}
    big = len(d.dag.nodes) > AUTO_COLLAPSE_NODES
    fold = q.get("fold", "1" if big else "0") != "0"
    folded_agents = {"all": sorted(agents), "none": []}.get(
        q.get("agents", ""), sorted(agents) if big else []
    )
    step = int(q["step"]) if q.get("step", "").isdigit() else None
    # The DAG comes with the page (no callback round trip before drawing starts); the callback redraws
    # only when the folding options or the labels change.
    view = ctx.timed("dag-view", lambda: dag_view(ctx, tid, fold, DEFAULT_MIN_RUN, folded_agents, []))
    chunked = q.get("chunked") != "0"
    first_inspector: list[Any] = [message("Click a node (or a timeline row) to inspect its step.")]
    if step is not None:
        first_inspector = inspector(ctx, d, step)
    canvas_aria: dict[str, Any] = {"aria-label": f"step DAG of {len(d.dag.nodes)} steps"}  # not a Python name
    dag_tab = html.Div(
        [
            html.Div(
                [
                    dcc.Checklist(
                        id="dag-collapse",
                        options=[{"label": " fold runs of similar steps", "value": "on"}],
                        value=["on"] if fold else [],
                        inline=True,
                    ),
                    html.Label("from", htmlFor="dag-min-run"),
                    dcc.Input(
                        id="dag-min-run",
                        type="number",
                        min=2,
                        max=100,
                        step=1,
                        value=DEFAULT_MIN_RUN,
                        debounce=True,
                        style={"width": "4em"},
                    ),
                    html.Label("folded sub-agents", htmlFor="dag-agents"),
                    dcc.Dropdown(
                        id="dag-agents",
                        options=[
                            {"label": clean_line(a, 40, ctx.secrets), "value": a} for a in sorted(agents)
                        ],
                        value=folded_agents,
                        multi=True,
                        placeholder="none" if agents else "no sub-agents",
                        disabled=not agents,
                        style={"minWidth": "220px"},
                    ),
                    html.Button("fit", id="dag-fit", className="small"),
                    html.Span(id="dag-info", className="hint"),
                ],
                className="dag-controls",
            ),
            # drawn by assets/dag.js (pan: drag, zoom: wheel or +/-, 0 = fit; click a node to inspect it)
            html.Div(
                html.Canvas(
                    id="dag-canvas",
                    tabIndex="0",
                    role="img",
                    **canvas_aria,
                ),
                id="dag",
                className="dag-box",
            ),
            _legend(),
            dcc.Store(id="dag-chunks", data=payload_json(view, chunked=chunked)),
            dcc.Store(id="dag-opts", data={"chunked": chunked}),
            dcc.Store(id="dag-expanded", data=[]),
            dcc.Store(id="dag-tap"),  # set by assets/dag.js when a node is clicked
        ]
    )
    return html.Div(
        [
            dcc.Store(id="traj-id", data=d.row["trajectory_id"]),
            dcc.Store(id="selected-step", data=step),
            dcc.Store(id="labels-version", data=0),
            _header(ctx, d),
            html.Div(
                [
                    html.Div(
                        dcc.Tabs(
                            id="traj-tabs",
                            value="dag",
                            children=[
                                dcc.Tab(
                                    label=f"Step DAG ({len(d.dag.nodes)} nodes)",
                                    value="dag",
                                    children=dag_tab,
                                ),
                                # built when opened: a long run's table is not paid for by the DAG view
                                dcc.Tab(
                                    label="Timeline", value="timeline", children=html.Div(id="timeline-box")
                                ),
                            ],
                        ),
                        className="traj-main",
                    ),
                    html.Div(
                        [
                            html.Div(
                                [
                                    html.H3("Step inspector"),
                                    html.Div(first_inspector, id="inspector"),
                                ],
                                className="panel inspector",
                            ),
                            labels_layout(ctx, d),
                        ],
                        className="traj-side",
                    ),
                ],
                className="traj-body",
            ),
        ],
        className="page trajectory-page",
    )


# -- callbacks --------------------------------------------------------------------------------------


def register_trajectory(app: Any, ctx: DashContext) -> None:
    @app.callback(
        Output("dag-chunks", "data"),
        Input("traj-id", "data"),
        Input("dag-collapse", "value"),
        Input("dag-min-run", "value"),
        Input("dag-agents", "value"),
        Input("dag-expanded", "data"),
        Input("labels-version", "data"),
        State("dag-opts", "data"),
        prevent_initial_call=True,  # the page brings its first drawing
    )
    def _draw(
        tid: str | None,
        collapse: Any,
        min_run: Any,
        agents: list[str] | None,
        expanded: list[str] | None,
        _v: int | None,
        opts: dict[str, Any] | None,
    ) -> str:
        if not tid:
            raise PreventUpdate
        view = ctx.timed("dag-view", lambda: dag_view(ctx, tid, collapse, min_run, agents, expanded))
        return payload_json(view, chunked=(opts or {}).get("chunked", True))

    # Drawn in the browser on a canvas: the first chunk, then the others within a time budget per frame
    # (assets/dag.js).
    app.clientside_callback(
        ClientsideFunction(namespace="trajlab", function_name="drawDag"),
        Output("dag-info", "children"),
        Input("dag-chunks", "data"),
    )

    app.clientside_callback(
        ClientsideFunction(namespace="trajlab", function_name="fitDag"),
        Output("dag-fit", "title"),
        Input("dag-fit", "n_clicks"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output("selected-step", "data"),
        Output("dag-expanded", "data", allow_duplicate=True),
        Output("dag-agents", "value", allow_duplicate=True),
        Input("dag-tap", "data"),
        State("dag-expanded", "data"),
        State("dag-agents", "value"),
        prevent_initial_call=True,
    )
    def _tap(
        node: dict[str, Any] | None, expanded: list[str] | None, agents: list[str] | None
    ) -> tuple[Any, Any, Any]:
        if not node:
            raise PreventUpdate
        if node.get("kind") == "group":
            return no_update, [*(expanded or []), node["id"]], no_update
        if node.get("kind") == "agent":
            return no_update, no_update, [a for a in agents or [] if a != node.get("agent")]
        return node.get("step"), no_update, no_update

    @app.callback(
        Output("timeline-box", "children"),
        Input("traj-tabs", "value"),
        State("traj-id", "data"),
        prevent_initial_call=True,
    )
    def _timeline_tab(tab: str | None, tid: str | None) -> html.Div:
        if tab != "timeline" or not tid:
            raise PreventUpdate
        return _timeline(ctx, ctx.trajectories.get(ctx, tid))

    @app.callback(
        Output("selected-step", "data", allow_duplicate=True),
        Input("timeline", "active_cell"),
        prevent_initial_call=True,
    )
    def _row(active: dict[str, Any] | None) -> int:
        if not active or active.get("row_id") is None:
            raise PreventUpdate
        return int(active["row_id"])

    @app.callback(
        Output("inspector", "children"),
        Input("selected-step", "data"),
        State("traj-id", "data"),
        prevent_initial_call=True,  # the page renders the inspector of its `step=N`
    )
    def _inspect(step: int | None, tid: str | None) -> list[Any]:
        if step is None or not tid:
            raise PreventUpdate
        return inspector(ctx, ctx.trajectories.get(ctx, tid), int(step))
