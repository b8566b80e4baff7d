"""The DAG payload sent to the browser: a view's chunks in column form, as one JSON string."""

from __future__ import annotations

import json
from typing import Any

from ._graph import AGENT_FILL, EDGE_COLORS, MARKS, GraphView


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
