"""A step DAG as drawable elements: layered top-to-bottom, collapsible, streamed in chunks.

Positions are computed here, so drawing costs the browser no layout work and the graph reads top to
bottom by `dag_nodes.layer`. The browser draws the elements on a canvas (`assets/dag.js`). Long runs of similar steps of one agent (same kind,
tool, modality and status) fold into one node, sub-agents can fold into one node each, and the
elements come in chunks, top layers first, so a 5,000-step run shows its start at once and fills in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..dag import StepDag
from ._text import clean_line

X_GAP = 240
Y_GAP = 64
CHUNK_FIRST = 400
CHUNK_NEXT = 1200
DEFAULT_MIN_RUN = 4
"""Consecutive similar steps of one agent fold into one node from this run length on."""
AUTO_COLLAPSE_NODES = 150
"""Above this many nodes, similar runs and sub-agents start folded."""

EDGE_COLORS: dict[str, str] = {
    "sequence": "#BBBBBB",
    "data": "#0072B2",
    "retry": "#E69F00",
    "spawn": "#CC79A7",
    "return": "#CC79A7",
    "summary": "#009E73",
    "answer": "#000000",
}
AGENT_FILL = "#EEEEEE"
"""Fill of a folded sub-agent node."""
MARKS: dict[str, dict[str, Any]] = {
    "candidate": {"color": "#56B4E9", "padding": 5, "opacity": 0.35},
    "evidence": {"color": "#F0E442", "padding": 7, "opacity": 0.9},
    "human_decisive": {"color": "#009E73", "padding": 9, "opacity": 0.6},
    "decisive": {"color": "#D55E00", "padding": 9, "opacity": 0.75},
    "selected": {"color": "#0072B2", "padding": 6, "opacity": 0.25},
}
"""Halos drawn around marked steps (colour, padding in graph units, opacity); the legend uses the same."""
STATUS_RANK = {"ok": 0, "no-output": 1, "timeout": 2, "error": 3}


def _colors() -> tuple[dict[str, str], dict[str, str]]:
    from ..figures import MODALITY_COLORS, STATUS_COLORS

    return MODALITY_COLORS, STATUS_COLORS


@dataclass
class Highlights:
    """Steps to mark: the label's decisive step and evidence, a reviewer's decisive step, DAG candidates."""

    decisive: int | None = None
    evidence: Sequence[int] = ()
    human_decisive: int | None = None
    candidates: Sequence[int] = ()
    selected: int | None = None

    def steps(self) -> set[int]:
        out = {*self.evidence, *self.candidates}
        for s in (self.decisive, self.human_decisive, self.selected):
            if s is not None:
                out.add(s)
        return out


@dataclass
class GraphView:
    """The drawable graph: elements in drawing order, split into chunks, plus what was folded."""

    elements: list[dict[str, Any]]
    chunks: list[list[dict[str, Any]]]
    n_nodes: int
    n_visible: int
    groups: dict[str, list[int]] = field(default_factory=dict)
    agents: dict[str, int] = field(default_factory=dict)
    collapsed_agents: list[str] = field(default_factory=list)
    trajectory_id: str = ""
    payloads: dict[bool, str] = field(default_factory=dict, repr=False, compare=False)
    """The browser's JSON of this view, chunked or not (filled by the trajectory page, kept with the view)."""


def _similar_key(n: dict[str, Any]) -> tuple[Any, ...]:
    return (n["agent_id"], n["kind"], n.get("tool"), n["modality"], n["status"])


def _group_label(members: list[dict[str, Any]], secrets: bool = True) -> str:
    n0 = members[0]
    what = clean_line(n0.get("tool") or n0["kind"], 40, secrets)
    return f"×{len(members)} {what} steps {members[0]['node_id']}–{members[-1]['node_id']}"


def fold(
    dag: StepDag,
    collapse_runs: bool = True,
    min_run: int = DEFAULT_MIN_RUN,
    collapsed_agents: Iterable[str] = (),
    expanded_groups: Iterable[str] = (),
    keep: Iterable[int] = (),
) -> tuple[dict[int, str], dict[str, list[dict[str, Any]]]]:
    """node id -> visible element id, and visible element id -> member nodes.

    A node stays its own element (`n<id>`) unless it is in a collapsed sub-agent (`a:<agent>`) or in a
    run of >= `min_run` similar consecutive steps of its agent (`g:<first>-<last>`) that is not
    expanded. Steps in `keep` (decisive, evidence, selected) are never folded into a run.
    """
    keep_set = set(keep)
    collapsed = set(collapsed_agents) - {"main"}
    expanded = set(expanded_groups)
    rep: dict[int, str] = {}
    members: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for n in dag.nodes:
        if n["agent_id"] in collapsed:
            rep[n["node_id"]] = f"a:{n['agent_id']}"
            members[f"a:{n['agent_id']}"].append(n)
        else:
            by_agent[n["agent_id"]].append(n)

    def flush(run: list[dict[str, Any]]) -> None:
        gid = f"g:{run[0]['node_id']}-{run[-1]['node_id']}" if run else ""
        if collapse_runs and len(run) >= min_run and gid not in expanded:
            for n in run:
                rep[n["node_id"]] = gid
                members[gid].append(n)
        else:
            for n in run:
                rep[n["node_id"]] = f"n{n['node_id']}"
                members[f"n{n['node_id']}"].append(n)

    for nodes in by_agent.values():
        run: list[dict[str, Any]] = []
        for n in nodes:
            if n["node_id"] in keep_set:
                flush(run)
                flush([n])
                run = []
            elif run and _similar_key(run[-1]) == _similar_key(n):
                run.append(n)
            else:
                flush(run)
                run = [n]
        flush(run)
    return rep, dict(members)


def build_view(
    dag: StepDag,
    highlights: Highlights | None = None,
    collapse_runs: bool | None = None,
    min_run: int = DEFAULT_MIN_RUN,
    collapsed_agents: Iterable[str] | None = None,
    expanded_groups: Iterable[str] = (),
    secrets: bool = True,
) -> GraphView:
    """Elements of the DAG after folding, with preset positions, highlight classes and chunks.

    `collapse_runs` and `collapsed_agents` default to folding only big graphs
    (more than `AUTO_COLLAPSE_NODES` nodes).
    """
    modality_colors, status_colors = _colors()
    hl = highlights or Highlights()
    big = len(dag.nodes) > AUTO_COLLAPSE_NODES
    agents: dict[str, int] = defaultdict(int)
    for n in dag.nodes:
        agents[n["agent_id"]] += 1
    if collapse_runs is None:
        collapse_runs = big
    if collapsed_agents is None:
        collapsed_agents = [a for a in agents if a != "main"] if big else []
    collapsed_agents = [a for a in collapsed_agents if a in agents and a != "main"]
    rep, members = fold(dag, collapse_runs, min_run, collapsed_agents, expanded_groups, hl.steps())

    # One visible element per member group; its layer is the smallest of its members'.
    visible = sorted(members, key=lambda v: min(n["node_id"] for n in members[v]))
    layer_of = {v: min(n["layer"] for n in members[v]) for v in visible}
    ranks = {layer: i for i, layer in enumerate(sorted(set(layer_of.values())))}
    per_rank: dict[int, list[str]] = defaultdict(list)
    for v in visible:
        per_rank[ranks[layer_of[v]]].append(v)
    pos: dict[str, tuple[float, float]] = {}
    for r, vs in per_rank.items():
        for i, v in enumerate(vs):
            pos[v] = ((i - (len(vs) - 1) / 2) * X_GAP, r * Y_GAP)

    decisive_cls = {hl.decisive: "decisive"} if hl.decisive is not None else {}
    answer = dag.metrics.get("answer_step") if dag.metrics else None
    node_elems: dict[str, dict[str, Any]] = {}
    for v in visible:
        ms = members[v]
        n0 = ms[0]
        worst = max(ms, key=lambda n: STATUS_RANK.get(n["status"], 0))["status"]
        classes = []
        if v.startswith("n"):
            sid = n0["node_id"]
            label = f"{sid} · {clean_line(n0.get('label') or n0.get('tool') or n0['kind'], 40, secrets)}"
            kind = "step"
            if sid in decisive_cls:
                classes.append("decisive")
            if sid == hl.human_decisive:
                classes.append("human-decisive")
            if sid in set(hl.evidence):
                classes.append("evidence")
            if sid in set(hl.candidates):
                classes.append("candidate")
            if sid == hl.selected:
                classes.append("selected-step")
            if sid == answer:
                classes.append("answer")
            if n0.get("on_answer_path"):
                classes.append("answer-path")
        elif v.startswith("g:"):
            label = _group_label(ms, secrets)
            kind = "group"
            classes.append("group")
        else:
            label = f"sub-agent {clean_line(n0['agent_id'], 24, secrets)} ({len(ms)} steps)"
            kind = "agent"
            classes.append("agent")
        if worst in ("error", "timeout"):
            classes.append("failed")
        x, y = pos[v]
        if n0["depth"] and kind != "agent":
            x += 24 * n0["depth"]
        data: dict[str, Any] = {
            "id": v,
            "label": label,
            "kind": kind,
            "node_kind": n0["kind"],
            "step": n0["node_id"] if kind == "step" else None,
            "first": n0["node_id"],
            "last": ms[-1]["node_id"],
            "count": len(ms),
            "agent": n0["agent_id"],
            "modality": n0["modality"],
            "status": worst,
            "fill": modality_colors.get(n0["modality"], "#FFFFFF") if kind != "agent" else AGENT_FILL,
            "border": status_colors.get(worst, "#404040"),
        }
        node_elems[v] = {"data": data, "position": {"x": x, "y": y}, "classes": " ".join(classes)}

    # Edges between visible elements, one per (src, dst, type), counting the folded ones.
    edge_count: dict[tuple[str, str, str], int] = defaultdict(int)
    for e in dag.edges:
        a, b = rep.get(e["src"]), rep.get(e["dst"])
        if a is None or b is None or a == b:
            continue
        edge_count[(a, b, e["type"])] += 1
    order = {v: i for i, v in enumerate(visible)}
    edges_by_chunk_key: list[tuple[int, dict[str, Any]]] = []
    for (a, b, t), c in edge_count.items():
        edges_by_chunk_key.append(
            (
                max(order[a], order[b]),
                {
                    "data": {
                        "id": f"e:{a}>{b}:{t}",
                        "source": a,
                        "target": b,
                        "type": t,
                        "color": EDGE_COLORS.get(t, "#999999"),
                        "count": c,
                    },
                    "classes": f"edge-{t}",
                },
            )
        )
    edges_by_chunk_key.sort(key=lambda x: x[0])

    chunks: list[list[dict[str, Any]]] = []
    bounds: list[int] = []
    start = 0
    size = CHUNK_FIRST
    while start < len(visible):
        end = min(start + size, len(visible))
        bounds.append(end)
        chunks.append([node_elems[v] for v in visible[start:end]])
        start, size = end, CHUNK_NEXT
    ci = 0
    for key, edge in edges_by_chunk_key:
        while key >= bounds[ci]:
            ci += 1
        chunks[ci].append(edge)
    elements = [el for ch in chunks for el in ch]
    return GraphView(
        elements=elements,
        chunks=chunks,
        n_nodes=len(dag.nodes),
        n_visible=len(visible),
        groups={v: [n["node_id"] for n in ms] for v, ms in members.items() if v.startswith("g:")},
        agents=dict(agents),
        collapsed_agents=list(collapsed_agents),
        trajectory_id=dag.trajectory_id,
    )
