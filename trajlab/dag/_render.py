"""Show a DAG as an indented text tree, and write it as JSON, GraphML or Graphviz DOT.

Trajectory text is data: control characters are removed (no terminal escapes), nothing is rendered
as markup, and secrets are redacted before text is printed or written out.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import orjson

from ..errors import ConfigError
from ..redact import bidi_visible, redact
from ._graphml import graphml
from ._model import StepDag
from ._nodes import CONTROL_CHARS, clean_label

EXPORT_FORMATS = ("json", "graphml", "dot")
_STATUS = {"ok": "ok", "error": "ERROR", "timeout": "TIMEOUT", "no-output": "no-output"}


# The word an ellipsis cut (`Bearer sk-proj-A1b2…`): it may be the start of a secret too short for the
# redactor to recognize, so it is not shown. Stored labels are cut when the DAG is built.
_CUT_WORD = re.compile(r"[A-Za-z0-9_./+~%-]+…")


def _uncut(text: str) -> str:
    return _CUT_WORD.sub("…", text) if "…" in text else text


def _safe(text: str | None, width: int) -> str:
    """One line of trajectory text: controls removed, redacted before it is cut to `width`."""
    if not text:
        return ""
    line = redact(_uncut(clean_label(text, width * 3) or ""))
    if len(line) > width:
        line = _uncut(line[: width - 1] + "…")
    return bidi_visible(line)


def render_text(dag: StepDag, steps: list[dict[str, Any]] | None = None, max_output: int = 120) -> str:
    """The DAG as an indented tree: one line per step (status, kind, modality, tool, label), nested
    by sub-agent depth, with its data inputs, retries, branch, answer path and decisive-candidate
    marks; plus the first line of each action's output when `steps` are given (`max_output` chars,
    0 for none)."""
    m = dag.metrics
    rank = {c["step_index"]: (k + 1, c) for k, c in enumerate(dag.candidates) if c["step_index"] is not None}
    preds: dict[int, list[str]] = {}
    for e in dag.edges:
        if e["type"] in ("data", "answer", "summary", "spawn", "return"):
            tag = "" if e["type"] == "data" else f"{e['type']}:"
            preds.setdefault(e["dst"], []).append(f"{tag}{e['src']}")
    outputs = {
        s["step_index"]: s.get("output") for s in steps or () if s.get("kind") in ("tool_call", "tool_result")
    }
    lines = [
        f"trajectory {_safe(dag.trajectory_id, 80)}: {m.get('n_nodes', len(dag.nodes))} steps, {m.get('n_edges', len(dag.edges))} edges, "
        f"depth {m.get('depth')}, width {m.get('width')}, answer at step {m.get('answer_step')}",
        f"branches: {', '.join(m.get('branches') or []) or 'none'}; fed the answer: {', '.join(m.get('answer_branches') or []) or 'none'}; "
        f"merges at: {', '.join(map(str, m.get('merge_nodes') or [])) or 'none'}",
        f"errors {m.get('n_errors', 0)} (unrecovered {m.get('n_unrecovered_errors', 0)}), retries {m.get('n_retries', 0)}, "
        f"dead ends {m.get('n_dead_ends', 0)}, answer-path share {_pct(m.get('answer_path_share'))}",
    ]
    if m.get("required_modalities"):
        lines.append(f"task needs: {', '.join(m['required_modalities'])}")
    if dag.candidates:
        lines.append("decisive-step candidates:")
        for k, c in enumerate(dag.candidates, 1):
            where = f"step {c['step_index']}" if c["step_index"] is not None else "(missing step)"
            lines.append(f"  #{k} {where} {c['signal']} {c['score']:.2f}: {_safe(c['reason'], 160)}")
    for a in m.get("anomalies") or []:
        lines.append(f"anomaly: {_safe(a, 160)}")
    lines.append("")
    prev_batch = None
    # steps of other agents (sub-agents, and peers of a group conversation) are tagged with the agent
    root = min(dag.nodes, key=lambda n: int(n.get("depth") or 0))["agent_id"] if dag.nodes else "main"
    root = root or "main"
    for n in dag.nodes:
        i = n["node_id"]
        indent = "    " * int(n.get("depth") or 0)
        batch = n.get("parallel_batch")
        bar = "‖ " if batch is not None else "  "
        if batch is not None and batch != prev_batch:
            lines.append(f"{indent}  ┌ parallel calls")
        prev_batch = batch
        flags = []
        if i in rank:
            k, c = rank[i]
            flags.append(f"<< decisive #{k} {c['signal']}")
        if i == m.get("answer_step"):
            flags.append("ANSWER")
        elif n.get("on_answer_path"):
            flags.append("answer-path")
        if n.get("retry_of") is not None:
            flags.append(f"retry of {n['retry_of']}")
        if n.get("is_dead_end"):
            flags.append("dead end")
        if n.get("branch"):
            flags.append(n["branch"])
        if i in preds:
            flags.append("<- " + ",".join(preds[i][:8]) + ("…" if len(preds[i]) > 8 else ""))
        who = "" if (n.get("agent_id") or "main") == root else f"[{_safe(n['agent_id'], 20)}] "
        tool = f" {_safe(n['tool'], 40)}" if n.get("tool") else ""
        lines.append(
            f"{indent}{bar}{i:>4} {_STATUS.get(n['status'], n['status']):<9} {n['kind']:<10} {n['modality']:<8}{tool} "
            f"{who}{_safe(n.get('label'), 90)}" + (f"   {' | '.join(flags)}" if flags else "")
        )
        if max_output > 0 and n["kind"] in ("action", "result"):
            out = outputs.get(i)
            if out and out.strip():
                lines.append(f"{indent}{bar}       => {_safe(out, max_output)}")
    return "\n".join(lines) + "\n"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0%}"


def _plain(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.isoformat()
    return v


def _redacted_nodes(dag: StepDag) -> list[dict[str, Any]]:
    return [
        {
            **n,
            "label": redact(_uncut(n["label"])) if n.get("label") else n.get("label"),
            "produces": [redact(x) for x in n.get("produces") or ()],
            "consumes": [redact(x) for x in n.get("consumes") or ()],
        }
        for n in dag.nodes
    ]


def _redacted_candidates(dag: StepDag) -> list[dict[str, Any]]:
    return [{**c, "reason": redact(_uncut(c["reason"]))} for c in dag.candidates]


def _redacted_metrics(dag: StepDag) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in dag.metrics.items():
        if k == "decisive_candidates":
            v = orjson.dumps(_redacted_candidates(dag)).decode()
        elif k == "anomalies":
            v = [redact(a) for a in v or []]
        out[k] = _plain(v)
    return out


def _redacted_edges(dag: StepDag) -> list[dict[str, Any]]:
    return [
        {**e, "artifact": redact(e["artifact"]) if e.get("artifact") else e.get("artifact")}
        for e in dag.edges
    ]


def export(dag: StepDag, fmt: str = "json") -> str:
    """The DAG as a `json` document, `graphml` (networkx reads it) or Graphviz `dot` text (secrets redacted)."""
    if fmt == "json":
        metrics = {k: v for k, v in _redacted_metrics(dag).items() if k != "decisive_candidates"}
        doc = {
            "trajectory_id": dag.trajectory_id,
            "metrics": metrics,
            "candidates": _redacted_candidates(dag),
            "nodes": _redacted_nodes(dag),
            "edges": _redacted_edges(dag),
        }
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    if fmt == "graphml":
        return _graphml(dag)
    if fmt == "dot":
        return _dot(dag)
    raise ConfigError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")


# Characters XML 1.0 forbids even as character references (`&#1;` makes the GraphML unreadable):
# control characters other than tab, newline and carriage return.
_XML_BAD = {c: " " for c in [*range(0, 9), 11, 12, *range(14, 32), 0xFFFE, 0xFFFF]}


def _scalar(v: Any) -> Any:
    if isinstance(v, (list, dict)):
        v = orjson.dumps(v).decode()
    elif isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, str) and not v.isprintable():
        return v.translate(_XML_BAD)
    return v


def _graphml(dag: StepDag) -> str:
    graph = {k: _scalar(v) for k, v in _redacted_metrics(dag).items() if v is not None}
    nodes = [
        (n["node_id"], {k: _scalar(v) for k, v in n.items() if v is not None and k != "trajectory_id"})
        for n in _redacted_nodes(dag)
    ]
    edges = [
        (
            e["src"],
            e["dst"],
            e["type"],
            {k: _scalar(e[k]) for k in ("type", "artifact", "rule") if e.get(k) is not None},
        )
        for e in _redacted_edges(dag)
    ]
    return graphml(graph, nodes, edges)


_EDGE_STYLE = {
    "sequence": 'color="gray60"',
    "data": 'color="black", penwidth=1.5',
    "retry": 'color="orange", style=dashed',
    "spawn": 'color="blue", style=bold',
    "return": 'color="blue", style=dashed',
    "summary": 'color="purple", style=dotted',
    "answer": 'color="darkgreen", penwidth=2',
}
_NODE_COLOR = {"ok": "white", "error": "mistyrose", "timeout": "moccasin", "no-output": "gray90"}


def _esc(text: str) -> str:
    return text.translate(CONTROL_CHARS).replace("\\", "\\\\").replace('"', '\\"')


def _q(*lines: str) -> str:
    """A DOT double-quoted string of escaped lines (never an HTML label)."""
    return '"' + "\\n".join(_esc(x) for x in lines) + '"'


def _dot(dag: StepDag) -> str:
    rank = {c["step_index"]: k + 1 for k, c in enumerate(dag.candidates) if c["step_index"] is not None}
    out = [
        f"digraph {_q(dag.trajectory_id)} {{",
        "  rankdir=TB;",
        '  node [shape=box, style=filled, fontname="Helvetica"];',
    ]
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for n in _redacted_nodes(dag):
        by_agent.setdefault(n.get("agent_id") or "main", []).append(n)
    for k, (agent, nodes) in enumerate(by_agent.items()):
        nested = any(int(n.get("depth") or 0) > 0 for n in nodes)
        pad = "    " if nested else "  "
        if nested:
            out.append(f"  subgraph cluster_{k} {{")
            out.append(f"    label={_q('sub-agent ' + agent)}; style=dashed;")
        for n in nodes:
            i = n["node_id"]
            lines = [f"{i} {n.get('tool') or n['kind']} [{n['status']}]", (n.get("label") or "")[:60]]
            if i in rank:
                lines.append(f"decisive #{rank[i]}")
            attrs = f"label={_q(*lines)}, fillcolor={_q(_NODE_COLOR.get(n['status'], 'white'))}"
            if i == dag.metrics.get("answer_step"):
                attrs += ", peripheries=2"
            if i in rank:
                attrs += ', color="red", penwidth=2'
            out.append(f"{pad}n{i} [{attrs}];")
        if nested:
            out.append("  }")
    for e in _redacted_edges(dag):
        lab = e["type"] if not e.get("artifact") else f"{e['type']}: {e['artifact'][:40]}"
        out.append(f"  n{e['src']} -> n{e['dst']} [label={_q(lab)}, {_EDGE_STYLE.get(e['type'], '')}];")
    out.append("}")
    return "\n".join(out) + "\n"
