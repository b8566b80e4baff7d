"""The trajectory page: header, step DAG (or timeline), step inspector, and the labels panel."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dash import ClientsideFunction, Input, Output, State, dash_table, dcc, html, no_update
from dash.exceptions import PreventUpdate

from ..dag import StepDag, load_dag
from ..errors import LabError
from ._components import TABLE_STYLE, kv, message, pre
from ._graph import (
    AGENT_FILL,
    AUTO_COLLAPSE_NODES,
    DEFAULT_MIN_RUN,
    EDGE_COLORS,
    MARKS,
    GraphView,
    Highlights,
    build_view,
)
from ._labels import labels_layout
from ._review import trajectory_labels
from ._text import clean_line, fmt_seconds, pretty_json

if TYPE_CHECKING:
    from ._app import DashContext

TIMELINE_PAGE = 50


@dataclass
class TrajectoryData:
    row: dict[str, Any]
    dag: StepDag
    steps: dict[int, dict[str, Any]]


class TrajectoryCache:
    """The few trajectories being looked at, per lab generation (steps with outputs can be big)."""

    def __init__(self, size: int = 6):
        self.size = size
        self._d: OrderedDict[tuple[int, str], TrajectoryData] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, ctx: DashContext, tid: str) -> TrajectoryData:
        snap = ctx.source.snapshot()
        key = (snap.generation, tid)
        with self._lock:
            if key in self._d:
                self._d.move_to_end(key)
                return self._d[key]
        lab = ctx.source.lab
        rows = snap.cursor().execute("SELECT * FROM trajectories WHERE trajectory_id = ?", [tid])
        names = [d[0] for d in rows.description]
        found = rows.fetchall()
        if not found:
            raise LabError(f"no trajectory {tid!r} in this lab")
        row = dict(zip(names, found[0]))
        dag = load_dag(lab, tid)
        steps = {r["step_index"]: r for r in lab.read_trajectory_steps(tid).to_pylist()}
        data = TrajectoryData(row, dag, steps)
        with self._lock:
            self._d[key] = data
            while len(self._d) > self.size:
                self._d.popitem(last=False)
        return data


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
                    **{"aria-label": f"step DAG of {len(d.dag.nodes)} steps"},
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


def _timeline(ctx: DashContext, d: TrajectoryData) -> html.Div:
    status = {n["node_id"]: n["status"] for n in d.dag.nodes}
    start = d.row.get("started_at")
    rows = []
    for i, s in sorted(d.steps.items()):
        ts = s.get("timestamp")
        offset = (
            (ts - start).total_seconds() if isinstance(ts, datetime) and isinstance(start, datetime) else None
        )
        what = s.get("command") or s.get("text") or s.get("output") or s.get("arguments")
        tokens = (s.get("input_tokens") or 0) + (s.get("output_tokens") or 0)
        rows.append(
            {
                "id": i,
                "step": i,
                "t": fmt_seconds(offset) if offset is not None else "",
                "agent": clean_line(s.get("agent_id"), 24, ctx.secrets),
                "kind": s["kind"],
                "tool": clean_line(s.get("tool") or s.get("tool_name"), 30, ctx.secrets),
                "what": clean_line(what, 140, ctx.secrets),
                "status": status.get(i, ""),
                "exit": s.get("exit_code"),
                "duration": fmt_seconds(s.get("duration_s")),
                "tokens": tokens or None,
            }
        )
    cols = ["step", "t", "agent", "kind", "tool", "what", "status", "exit", "duration", "tokens"]
    return html.Div(
        [
            dash_table.DataTable(
                id="timeline",
                columns=[{"name": c, "id": c} for c in cols],
                data=rows,
                page_size=TIMELINE_PAGE,
                page_action="native",
                filter_action="native",
                # no placeholder: "filter data..." is cut to "fil" in narrow columns; the hint says it
                filter_options={"case": "insensitive", "placeholder_text": ""},
                sort_action="native",
                style_data={"cursor": "pointer"},
                # a narrower "what" keeps status, exit code, duration and tokens in view
                style_cell_conditional=[{"if": {"column_id": "what"}, "maxWidth": "260px"}],
                style_data_conditional=[
                    {"if": {"filter_query": '{status} = "error"'}, "backgroundColor": "#FBE9E0"},
                    {"if": {"filter_query": '{status} = "timeout"'}, "backgroundColor": "#F6E6F0"},
                ],
                **TABLE_STYLE,
            ),
            html.Div(
                "Filter a column by typing in the row under its header (e.g. `ffmpeg`, `error`).",
                className="hint",
            ),
        ],
        className="timeline",
    )


# -- the inspector ----------------------------------------------------------------------------------


def inspector(ctx: DashContext, d: TrajectoryData, step: int) -> list[Any]:
    s = d.steps.get(step)
    node = d.dag.node(step)
    if s is None:
        return [message(f"step {step} is not in this trajectory", "error")]
    sec = ctx.secrets
    tokens = [
        ("input tokens", s.get("input_tokens")),
        ("output tokens", s.get("output_tokens")),
        ("reasoning tokens", s.get("reasoning_tokens")),
        ("cached tokens", s.get("cached_tokens")),
    ]
    head = [
        ("agent", s.get("agent_id")),
        ("depth", s.get("depth") or None),
        ("kind", s.get("kind")),
        ("runner tool", s.get("tool_name")),
        ("tool", s.get("tool")),
        ("programs", ", ".join(s.get("programs") or [])),
        ("modality", s.get("modality")),
        ("status", node["status"] if node else None),
        ("exit code", s.get("exit_code")),
        ("error flag", "yes" if s.get("is_error") else None),
        ("timed out", "yes" if s.get("timed_out") else None),
        ("duration", fmt_seconds(s.get("duration_s"))),
        *tokens,
        ("timestamp", s["timestamp"].isoformat(sep=" ") if s.get("timestamp") else None),
        ("call id", s.get("call_id")),
        ("model", s.get("model")),
        ("source line", s.get("source_line")),
    ]
    out: list[Any] = [
        html.H4(
            [
                f"Step {step} · {s['kind']}",
                f" · {clean_line(s.get('tool') or s.get('tool_name'), 40, sec)}"
                if s.get("tool") or s.get("tool_name")
                else "",
            ],
            id="inspector-title",
        ),
        kv(head, sec),
    ]
    for title, value, cls in (
        ("Command", s.get("command"), "block command"),
        ("Message", s.get("text"), "block text"),
    ):
        if value:
            out += [html.H5(title), pre(value, cls, secrets=sec)]
    if s.get("arguments"):
        out += [
            html.H5("Arguments"),
            html.Pre(pretty_json(s["arguments"], secrets=sec), className="block args"),
        ]
    if s.get("output") is not None:
        out += [
            html.H5("Output (stdout)" if s.get("stderr") is not None else "Output"),
            pre(s["output"], "block output", secrets=sec, id="inspector-output"),
        ]
    if s.get("stderr"):
        out += [html.H5("stderr"), pre(s["stderr"], "block stderr", secrets=sec)]
    if node is not None:
        ins = [e for e in d.dag.edges if e["dst"] == step]
        outs = [e for e in d.dag.edges if e["src"] == step]

        def edge_list(es: list[dict[str, Any]], other: str) -> str:
            return ", ".join(
                f"{e[other]} ({e['type']}{': ' + clean_line(e['artifact'], 40, sec) if e.get('artifact') else ''})"
                for e in es[:30]
            ) + (f" … and {len(es) - 30} more" if len(es) > 30 else "")

        out += [
            html.H5("In the DAG"),
            kv(
                [
                    ("node kind", node["kind"]),
                    ("layer", node["layer"]),
                    ("branch", node.get("branch")),
                    ("on answer path", "yes" if node.get("on_answer_path") else "no"),
                    ("dead end", "yes" if node.get("is_dead_end") else None),
                    ("retries step", node.get("retry_of")),
                    ("produces", ", ".join(node.get("produces") or [])),
                    ("consumes", ", ".join(node.get("consumes") or [])),
                    ("from", edge_list(ins, "src")),
                    ("to", edge_list(outs, "dst")),
                ],
                sec,
            ),
        ]
    return out


# -- callbacks --------------------------------------------------------------------------------------


def _highlights(ctx: DashContext, d: TrajectoryData) -> Highlights:
    labels = trajectory_labels(ctx.source, d.row["trajectory_id"])
    judge = None if ctx.blind else labels.under_review
    human = labels.human[0] if labels.human else None
    gold = labels.gold[0] if labels.gold else None
    ref = gold or judge
    return Highlights(
        decisive=(ref or {}).get("decisive_step_index"),
        evidence=list((ref or {}).get("evidence_steps") or []),
        human_decisive=(human or {}).get("decisive_step_index"),
        candidates=[c["step_index"] for c in d.dag.candidates[:3] if c.get("step_index") is not None],
    )


def dag_view(
    ctx: DashContext,
    tid: str,
    collapse: Any,
    min_run: Any,
    agents: list[str] | None,
    expanded: list[str] | None,
) -> GraphView:
    """The folded, highlighted view of a trajectory's DAG, cached per lab generation and options."""
    d = ctx.trajectories.get(ctx, tid)
    hl = _highlights(ctx, d)
    min_run = max(2, int(min_run or DEFAULT_MIN_RUN))
    key = ("dag-view", tid, bool(collapse), min_run, tuple(agents or ()), tuple(expanded or ()), repr(hl))
    return ctx.source.snapshot().cached(
        key,
        lambda: build_view(
            d.dag,
            hl,
            collapse_runs=bool(collapse),
            min_run=min_run,
            collapsed_agents=agents or [],
            expanded_groups=expanded or [],
            secrets=ctx.secrets,
        ),
        size=32,
    )


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
    def _draw(tid, collapse, min_run, agents, expanded, _v, opts):  # type: ignore[no-untyped-def]
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
    def _tap(node, expanded, agents):  # type: ignore[no-untyped-def]
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
    def _timeline_tab(tab, tid):  # type: ignore[no-untyped-def]
        if tab != "timeline" or not tid:
            raise PreventUpdate
        return _timeline(ctx, ctx.trajectories.get(ctx, tid))

    @app.callback(
        Output("selected-step", "data", allow_duplicate=True),
        Input("timeline", "active_cell"),
        prevent_initial_call=True,
    )
    def _row(active):  # type: ignore[no-untyped-def]
        if not active or active.get("row_id") is None:
            raise PreventUpdate
        return int(active["row_id"])

    @app.callback(
        Output("inspector", "children"),
        Input("selected-step", "data"),
        State("traj-id", "data"),
        prevent_initial_call=True,  # the page renders the inspector of its `step=N`
    )
    def _inspect(step, tid):  # type: ignore[no-untyped-def]
        if step is None or not tid:
            raise PreventUpdate
        return inspector(ctx, ctx.trajectories.get(ctx, tid), int(step))


def payload_json(view: GraphView, chunked: bool = True) -> str:
    """`chunk_payload` as one JSON string, made once per view (the view is cached per lab generation).

    A string because Dash would otherwise walk every element of every column on the way out (plotly's
    JSON cleaning took ~55 of the ~80 ms of a 2,000-step DAG's page response, more than building the page) and
    the renderer would carry the nested lists through its props; assets/dag.js parses it in a few ms.
    """
    if chunked not in view.payloads:
        payload = chunk_payload(view, chunked=chunked)
        # ASCII: a lone surrogate in trajectory text (seen in broken JSON logs) stays a valid \u escape
        view.payloads[chunked] = json.dumps(payload, ensure_ascii=True, separators=(",", ":"))
    return view.payloads[chunked]


NODE_COLUMNS = ("id", "label", "kind", "node_kind", "first", "last", "count", "agent", "modality", "status")
EDGE_COLUMNS = ("source", "target", "type", "count")


def _columns(chunk: list[dict[str, Any]]) -> dict[str, dict[str, list[Any]]]:
    nodes = [el for el in chunk if "source" not in el["data"]]
    edges = [el["data"] for el in chunk if "source" in el["data"]]
    n: dict[str, list[Any]] = {c: [el["data"][c] for el in nodes] for c in NODE_COLUMNS}
    n["x"] = [round(el["position"]["x"], 1) for el in nodes]
    n["y"] = [round(el["position"]["y"], 1) for el in nodes]
    n["classes"] = [el["classes"] for el in nodes]
    return {"n": n, "e": {c: [e[c] for e in edges] for c in EDGE_COLUMNS}}


def chunk_payload(view: GraphView, chunked: bool = True) -> dict[str, Any]:
    """What the browser needs to draw a view progressively (see assets/dag.js): the chunks in column
    form (`n`: node columns with positions and classes, `e`: edge columns; ids of edges, colours and
    the other derived fields are rebuilt in the browser), the running node counts and the colour maps.
    `chunked=False` sends one chunk (everything drawn at once, for comparison)."""
    from ..figures import MODALITY_COLORS, STATUS_COLORS

    chunks = view.chunks if chunked else [view.elements]
    counts, n = [], 0
    for ch in chunks:
        n += sum(1 for el in ch if "source" not in el["data"])
        counts.append(n)
    tail = ""
    if view.groups:
        folded = sum(len(g) for g in view.groups.values())
        tail += f" · {len(view.groups)} folded runs hold {folded:,} steps (click one to unfold)"
    if view.collapsed_agents:
        tail += f" · {len(view.collapsed_agents)} folded sub-agents (click one to unfold)"
    return {
        "chunks": [_columns(ch) for ch in chunks],
        "counts": counts,
        "n_visible": view.n_visible,
        "n_nodes": view.n_nodes,
        "trajectory_id": view.trajectory_id,
        "tail": tail,
        "fit": view.n_visible <= 60,
        "modality_colors": MODALITY_COLORS,
        "status_colors": STATUS_COLORS,
        "edge_colors": EDGE_COLORS,
        "agent_fill": AGENT_FILL,
        "marks": MARKS,
    }
