"""Raw media vs tool orchestration: what feeding media to the model costs in tokens, per group."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import plotly.graph_objects as go
import pyarrow as pa

from .. import analysis
from ..analysis import missing_hint
from ..errors import ConfigError
from ._result import FigureResult, LabLike, group_labels, open_lab, skipped
from ._style import STRATEGY_COLORS, check_width, font_px, px, styled

MEDIA_MEASURES: dict[str, str] = {
    "prompt_per_call": "prompt tokens per model call",
    "prompt_tokens": "prompt tokens per trajectory",
    "total_tokens": "total tokens per trajectory",
    "tokens_per_solved": "tokens per solved task",
}
"""The token columns of `analysis.media_strategy` the figure can plot, with their axis titles."""

STRATEGY_NAMES: dict[str, str] = {
    "raw": "raw media",
    "mixed": "mixed",
    "tools": "tools only",
    "none": "no media call",
}

# why a measure can be empty although the analysis ran (each column has its own source)
_EMPTY: dict[str, tuple[str, str]] = {
    "prompt_per_call": (
        "no per-call prompt tokens",
        "the runners recorded no prompt tokens on model calls (steps.input_tokens); try measure=total_tokens",
    ),
    "prompt_tokens": (
        "no prompt token counts",
        "the runners recorded no prompt tokens per trajectory (trajectories.input_tokens); "
        "try measure=total_tokens",
    ),
    "total_tokens": ("no token counts", "the runners recorded no token usage for these trajectories"),
    "tokens_per_solved": (
        "no solved trajectories with token counts",
        "tokens per solved task needs successful runs that record tokens",
    ),
}


def media_tokens(
    lab: LabLike,
    width: str = "single",
    by: str | Iterable[str] | None = ("domain",),
    measure: str = "prompt_per_call",
    raw_tools: str = "image_read",
) -> FigureResult:
    """Grouped bars of tokens per media strategy (raw media, mixed, tools only, none) per group.

    Strategies come from `analysis.media_strategy`: `raw` runs fed media to the model (a tool in
    `raw_tools`, or a file read of audio/video), `tools` ran extraction tools only, `mixed` both.
    `measure` is `prompt_per_call` (context size per model call), `prompt_tokens` or `total_tokens`
    (means per trajectory) or `tokens_per_solved`; a strategy with no runs is left out. Numbers above
    the bars are trajectories; the hover adds accuracy and the ratio to the group's tools-only runs.
    """
    name, title = "media_tokens", "Raw media vs tool orchestration"
    if measure not in MEDIA_MEASURES:
        raise ConfigError(f"measure must be one of {', '.join(MEDIA_MEASURES)}, not {measure!r}")
    check_width(width)
    cols = list(analysis.normalize_by(by or ()))
    res = analysis.media_strategy(open_lab(lab), by=cols, raw_tools=raw_tools)
    params = {**res.params, "by": cols, "measure": measure, "raw_tools": raw_tools}
    if res.missing:
        out = skipped(
            name, title, "; ".join(res.missing), width, sql=res.sql, params=params, analysis="media"
        )
        out.notes = [h for m in res.missing if (h := missing_hint(m))]
        return out
    raw = res.table.to_pylist()
    rows: list[dict[str, Any]] = [
        {
            **{c: r[c] for c in cols},
            "group": label,
            "strategy": r["strategy"],
            "value": r[measure],
            "n_traj": r["n_traj"],
            "n_with_tokens": r["n_with_tokens"],
            "accuracy": r["accuracy"],
            "avg_raw_reads": r["avg_raw_reads"],
            "avg_extractions": r["avg_extractions"],
            "prompt_per_call_vs_tools": r["prompt_per_call_vs_tools"],
        }
        for r, label in zip(raw, group_labels(raw, cols))
        if r[measure] is not None
    ]
    if not rows:
        reason, hint = _EMPTY[measure]
        out = skipped(name, title, reason, width, sql=res.sql, params=params, analysis="media")
        out.notes = [hint]
        return out
    groups = sorted({r["group"] for r in rows})
    strategies = [s for s in STRATEGY_COLORS if any(r["strategy"] == s for r in rows)]
    rows.sort(key=lambda r: (groups.index(r["group"]), strategies.index(r["strategy"])))
    data = pa.Table.from_pylist(rows)
    fig = go.Figure()
    for s in strategies:
        by_group = {r["group"]: r for r in rows if r["strategy"] == s}
        pts = [by_group.get(g) for g in groups]
        fig.add_trace(
            go.Bar(
                name=STRATEGY_NAMES[s],
                legendgroup=s,
                x=groups,  # group labels are safe_text already
                y=[p["value"] if p else None for p in pts],
                text=[str(p["n_traj"]) if p else "" for p in pts],
                textposition="outside",
                cliponaxis=False,
                marker={"color": STRATEGY_COLORS[s], "line": {"width": 0}},
                customdata=[_hover(p) for p in pts],
                hovertemplate="%{x}: "
                + STRATEGY_NAMES[s]
                + " %{y:,.0f} tokens<br>%{customdata}<extra></extra>",
            )
        )
    styled(fig, width, aspect=0.62)
    fig.update_yaxes(title={"text": MEDIA_MEASURES[measure]}, rangemode="tozero", tickformat=",.0f")
    fig.update_xaxes(categoryorder="array", categoryarray=groups, tickangle=-35 if len(groups) > 4 else 0)
    fig.update_layout(
        barmode="group",
        bargap=0.18,
        bargroupgap=0.0,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.01, "xanchor": "left", "x": 0.0},
    )
    fig.update_traces(textfont={"size": font_px(width) - px(1)})  # trajectories per bar, a point smaller
    return FigureResult(
        name,
        title,
        fig,
        data,
        res.sql,
        params,
        "media",
        notes=list(res.notes),
        caption=f"{MEDIA_MEASURES[measure].capitalize()} per "
        + (", ".join(cols) or "lab")
        + f" and media strategy: raw = media fed to the model ({raw_tools}, or a file read of audio/video), "
        "tools = extraction tools only, mixed = both, none = no media call. "
        "Numbers above the bars: trajectories.",
        width=width,
    )


def _hover(p: dict[str, Any] | None) -> str:
    if p is None:
        return ""
    acc = "accuracy n/a" if p["accuracy"] is None else f"accuracy {p['accuracy']:.0%}"
    vs = p["prompt_per_call_vs_tools"]
    ratio = "" if vs is None or p["strategy"] == "tools" else f", {vs:.2f}x the prompt per call of tools-only"
    return f"{p['n_traj']} trajectories, {acc}{ratio}"
