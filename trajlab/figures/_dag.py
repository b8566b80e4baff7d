"""The exemplar failure DAG: one failed trajectory's step DAG with the decisive step marked."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import pyarrow as pa

from ..dag import load_dag, resolve_trajectory_id
from ..store import query
from ._result import FigureResult, LabLike, open_lab, skipped
from ._style import MODALITY_COLORS, STATUS_COLORS, category_label, font_px, safe_text, styled

PICK_SQL = """\
-- the exemplar: a failed trajectory with a labeled decisive step (gold, then human, then judge),
-- preferring DAGs of 6-30 nodes with the most modality branches, then the smallest
WITH decisive AS (
    SELECT trajectory_id, decisive_step_index AS step, category, 'gold' AS source, 0 AS rank
    FROM gold_labels WHERE decisive_step_index IS NOT NULL
    UNION ALL
    SELECT trajectory_id, decisive_step_index, category, 'human:' || annotator, 1
    FROM human_labels WHERE decisive_step_index IS NOT NULL
    UNION ALL
    SELECT trajectory_id, decisive_step_index, category, 'judge:' || judge, 2
    FROM judge_labels WHERE status = 'labeled' AND decisive_step_index IS NOT NULL
),
best AS (
    SELECT * FROM decisive
    QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY rank, source, step) = 1
)
SELECT t.trajectory_id, b.step, b.category, b.source,
    coalesce(m.n_nodes, t.n_steps) AS n_nodes, coalesce(m.n_branches, 0) AS n_branches
FROM trajectories t
LEFT JOIN dag_metrics m USING (trajectory_id)
LEFT JOIN best b USING (trajectory_id)
WHERE t.outcome = 'failure' AND ($trajectory_id = '' OR t.trajectory_id = $trajectory_id)
ORDER BY b.step IS NULL, b.rank, coalesce(m.n_nodes, t.n_steps) BETWEEN 6 AND 30 DESC,
    n_branches DESC, n_nodes, t.trajectory_id
LIMIT 1
"""

KIND_SYMBOLS = {
    "action": "square",
    "input": "diamond",
    "text": "circle",
    "reasoning": "circle",
    "result": "triangle-up",
    "compaction": "hexagon",
}
KIND_TEXT = {
    "input": "task",
    "reasoning": "think",
    "text": "message",
    "result": "result",
    "compaction": "summary",
}
EDGE_STYLES: dict[str, dict[str, Any]] = {
    "data": {"color": "#404040", "width": 1.0, "dash": "solid"},
    "answer": {"color": "#000000", "width": 1.4, "dash": "solid"},
    "retry": {"color": "#D55E00", "width": 1.0, "dash": "dash"},
    "spawn": {"color": "#0072B2", "width": 1.0, "dash": "dot"},
    "return": {"color": "#0072B2", "width": 1.0, "dash": "dot"},
    "summary": {"color": "#009E73", "width": 1.0, "dash": "dot"},
}


def _lane_name(branch: str | None) -> str:
    if not branch:
        return "agent"
    base, _, num = branch.partition("#")
    return f"{base} {num}" if num and num != "1" else base


def _text_position(row: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """Labels alternate below/above along a lane, so that neighbouring labels do not collide."""
    lane = sorted(r["x"] for r in rows if r["y"] == row["y"])
    return "top center" if lane.index(row["x"]) % 2 else "bottom center"


def exemplar_dag(
    lab: LabLike,
    width: str = "single",
    trajectory_id: str | None = None,
    max_nodes: int = 40,
) -> FigureResult:
    """One failed trajectory's step DAG: a lane per modality branch, steps left to right by DAG layer,
    fill = modality, outline = status, typed edges, and the decisive step ringed.

    `trajectory_id` (or a unique prefix) picks the run; by default a failed run with a labeled decisive
    step (gold, then human, then judge label) and a readable DAG. Without a labeled decisive step the
    DAG's top-ranked candidate is marked instead. Above `max_nodes`, only actions, the task, the
    answer and the decisive step are drawn.
    """
    name, title = "exemplar_dag", "Exemplar failure DAG"
    lab = open_lab(lab)
    tid = resolve_trajectory_id(lab, trajectory_id) if trajectory_id else ""
    params: dict[str, Any] = {"trajectory_id": trajectory_id, "max_nodes": max_nodes}
    picked = query(lab, PICK_SQL, {"trajectory_id": tid}).to_pylist()
    sql = PICK_SQL
    if not picked:
        reason = (
            f"trajectory {tid} did not fail"
            if tid
            else ("no trajectories" if lab.rows("trajectories") == 0 else "no failed trajectories")
        )
        return skipped(name, title, reason, width, sql=sql, params=params, analysis="dag.load_dag")
    pick = picked[0]
    dag = load_dag(lab, pick["trajectory_id"])
    decisive, source, category = pick["step"], pick["source"], pick["category"]
    if decisive is None and dag.candidates and dag.candidates[0]["step_index"] is not None:
        decisive, source = dag.candidates[0]["step_index"], "dag candidate"
    params.update(trajectory_id=dag.trajectory_id, decisive_step=decisive, decisive_source=source)
    if not dag.nodes:
        return skipped(name, title, "the trajectory has no steps", width, sql=sql, params=params)
    nodes = dag.nodes
    answer = dag.answer_step
    if len(nodes) > max_nodes:
        keep_kinds = {"action", "input"}
        first_input = next((n["node_id"] for n in nodes if n["kind"] == "input"), None)
        nodes = [
            n
            for n in nodes
            if (n["kind"] in keep_kinds and (n["kind"] != "input" or n["node_id"] == first_input))
            or n["node_id"] in (answer, decisive)
        ]
    shown = {n["node_id"] for n in nodes}
    lanes: list[str] = ["agent"]
    for n in nodes:
        lane = _lane_name(n["branch"])
        if lane not in lanes:
            lanes.append(lane)
    layers = sorted({n["layer"] for n in nodes})
    xpos = {lv: i for i, lv in enumerate(layers)}
    rows = []
    for n in nodes:
        lane = _lane_name(n["branch"])
        rows.append(
            {
                "node_id": n["node_id"],
                "step_index": n["step_index"],
                "kind": n["kind"],
                "tool": n["tool"],
                "modality": n["modality"],
                "status": n["status"],
                "layer": n["layer"],
                "lane": lane,
                "x": xpos[n["layer"]],
                "y": lanes.index(lane),
                "on_answer_path": bool(n["on_answer_path"]),
                "is_dead_end": bool(n["is_dead_end"]),
                "decisive": n["node_id"] == decisive,
                "text": safe_text(n["tool"], 14) if n["tool"] else KIND_TEXT.get(n["kind"], n["kind"]),
                "label": safe_text(n["label"], 70),
            }
        )
    if answer in shown:
        for r in rows:
            if r["node_id"] == answer:
                r["text"] = "answer"
    kinds = dict(
        zip(
            *lab.read_trajectory_steps(dag.trajectory_id, ["step_index", "kind"])
            .select(["step_index", "kind"])
            .to_pydict()
            .values()
        )
    )
    for r in rows:
        if r["kind"] == "input":
            r["text"] = "system" if kinds.get(r["step_index"]) == "system" else "task"
    pos = {r["node_id"]: (r["x"], r["y"]) for r in rows}
    edges = [e for e in dag.edges if e["src"] in shown and e["dst"] in shown]
    edge_rows = [
        {"src": e["src"], "dst": e["dst"], "type": e["type"], "artifact": safe_text(e["artifact"], 60)}
        for e in edges
    ]
    data = pa.Table.from_pylist(rows)
    fig = go.Figure()
    typed = {(e["src"], e["dst"]) for e in edges if e["type"] != "sequence"}
    seq = [e for e in edges if e["type"] == "sequence" and (e["src"], e["dst"]) not in typed]
    xs: list[float | None] = []
    ys: list[float | None] = []
    for e in seq:
        (x0, y0), (x1, y1) = pos[e["src"]], pos[e["dst"]]
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    if seq:
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name="sequence",
                line={"color": "#C8C8C8", "width": 0.8},
                hoverinfo="skip",
            )
        )
    for etype, style in EDGE_STYLES.items():
        es = [e for e in edges if e["type"] == etype]
        if not es:
            continue
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=etype, line=style, hoverinfo="skip"))
        for e in es:
            (x0, y0), (x1, y1) = pos[e["src"]], pos[e["dst"]]
            fig.add_annotation(
                x=x1,
                y=y1,
                ax=x0,
                ay=y0,
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                showarrow=True,
                arrowhead=2,
                arrowsize=0.9,
                arrowwidth=style["width"],
                arrowcolor=style["color"],
                standoff=7,
                startstandoff=7,
                text="",
            )
    fig.add_trace(
        go.Scatter(
            x=[r["x"] for r in rows],
            y=[r["y"] for r in rows],
            mode="markers+text",
            text=[r["text"] for r in rows],
            textposition=[_text_position(r, rows) for r in rows],
            textfont={"size": font_px(width) - 1},
            marker={
                "symbol": [KIND_SYMBOLS.get(r["kind"], "circle") for r in rows],
                "color": [MODALITY_COLORS.get(r["modality"], "#FFFFFF") for r in rows],
                "size": 10,
                "line": {
                    "color": [STATUS_COLORS.get(r["status"], "#404040") for r in rows],
                    "width": [0.8 if r["status"] == "ok" else 2.2 for r in rows],
                },
            },
            customdata=[[r["step_index"], r["status"], r["label"]] for r in rows],
            hovertemplate="step %{customdata[0]} (%{customdata[1]})<br>%{customdata[2]}<extra></extra>",
            showlegend=False,
        )
    )
    for modality in [m for m in MODALITY_COLORS if any(r["modality"] == m for r in rows)]:
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=modality,
                marker={
                    "color": MODALITY_COLORS[modality],
                    "size": 8,
                    "line": {"color": "#404040", "width": 0.8},
                },
            )
        )
    for status in [s for s in STATUS_COLORS if s != "ok" and any(r["status"] == s for r in rows)]:
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=status,
                marker={
                    "color": "#FFFFFF",
                    "size": 8,
                    "line": {"color": STATUS_COLORS[status], "width": 2.2},
                },
            )
        )
    mark = next((r for r in rows if r["decisive"]), None)
    if mark is not None:
        what = f"decisive step ({decisive}" + (f", {category_label(category)})" if category else ")")
        fig.add_trace(
            go.Scatter(
                x=[mark["x"]],
                y=[mark["y"]],
                mode="markers",
                name=what,
                marker={"symbol": "circle-open", "size": 20, "color": "#D55E00", "line": {"width": 2}},
                hoverinfo="skip",
            )
        )
    styled(fig, width, height_in=0.75 + 0.42 * len(lanes))
    fig.update_xaxes(visible=False, range=[-0.6, len(layers) - 0.4])
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(len(lanes))),
        ticktext=lanes,
        range=[len(lanes) - 0.5, -0.62],
        showgrid=False,
        showline=False,
        ticks="",
    )
    fig.update_layout(
        legend={
            "orientation": "h",
            "yanchor": "top",
            "y": -0.02,
            "xanchor": "left",
            "x": 0.0,
            "itemsizing": "trace",
            "entrywidth": 0.25 if width == "single" else 0.14,
            "entrywidthmode": "fraction",
        },
    )
    notes = [] if decisive is not None else ["no decisive step is labeled or ranked for this run"]
    if len(nodes) < len(dag.nodes):
        notes.append(f"{len(dag.nodes) - len(nodes)} message/reasoning nodes hidden (max_nodes {max_nodes})")
    return FigureResult(
        name,
        title,
        fig,
        data,
        sql + f"\n-- then: trajlab.dag.load_dag(lab, {dag.trajectory_id!r})",
        params,
        "dag.load_dag",
        notes=notes,
        caption=f"Step DAG of failed trajectory {dag.trajectory_id}: one lane per modality branch, fill = "
        "modality, outline = status; arrows are data/answer edges; the ring marks the decisive step"
        + (f" ({source} label)." if source else "."),
        width=width,
        extras={"edges": pa.Table.from_pylist(edge_rows) if edge_rows else pa.table({})},
    )
