"""The trajectory page's step inspector and its timeline table of steps."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dash import html
from dash.dash_table.DataTable import DataTable

from ._components import TABLE_STYLE, TableRow, kv, message, pre
from ._text import clean_line, fmt_seconds, pretty_json

if TYPE_CHECKING:
    from ._app import DashContext
    from ._trajectory_data import TrajectoryData

TIMELINE_PAGE = 50


def _timeline(ctx: DashContext, d: TrajectoryData) -> html.Div:
    status = {n["node_id"]: n["status"] for n in d.dag.nodes}
    start = d.row.get("started_at")
    rows: list[TableRow] = []
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
            DataTable(
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


def _source_file(s: dict[str, Any]) -> str | None:
    """The file the step's `source_line` counts lines of, when not the trajectory's own (a Claude Code
    sub-agent's transcript: `metadata.source_file`)."""
    md = s.get("metadata")
    if not md or "source_file" not in md:
        return None
    try:
        value = json.loads(md).get("source_file")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


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
        ("source file", _source_file(s)),
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
