"""Accuracy figures: accuracy vs tokens with the Pareto frontier, and accuracy by difficulty and condition."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import plotly.graph_objects as go
import pyarrow as pa
from plotly.subplots import make_subplots

from .. import analysis
from ..analysis import missing_hint
from ..errors import ConfigError
from ._result import FigureResult, LabLike, group_label, group_labels, open_lab, skipped, wilson
from ._style import PALETTE, condition_colors, safe_text, styled

SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "cross", "x", "star", "hexagon")


def _cols(by: str | Iterable[str] | None) -> list[str]:
    return list(analysis.normalize_by(by or ()))


def _legend_top(fig: go.Figure) -> None:
    fig.update_layout(
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.01, "xanchor": "left", "x": 0.0}
    )


def accuracy_tokens_pareto(
    lab: LabLike,
    width: str = "single",
    by: str | Iterable[str] | None = ("model", "harness", "reasoning_effort"),
    color: str | None = "model",
    symbol: str | None = "reasoning_effort",
    log_x: bool = False,
    ci: bool = True,
) -> FigureResult:
    """Accuracy vs mean total tokens per trajectory, one point per group, with the Pareto frontier.

    `by` are the groups (default model x harness x reasoning effort); `color` and `symbol` name the
    grouping columns that pick a point's colour and marker (legend); frontier points (no group with
    fewer tokens and at least the accuracy) are joined by a dashed line. Error bars: 95% Wilson
    intervals of the accuracy (`ci=False` hides them).
    """
    name, title = "accuracy_tokens_pareto", "Accuracy vs tokens"
    cols = _cols(by)
    enc = {k: (_cols(v)[0] if v else None) for k, v in (("color", color), ("symbol", symbol))}
    for k, v in enc.items():
        if v is not None and v not in cols:
            raise ConfigError(f"{k}={v!r} must be one of the grouping columns ({', '.join(cols) or 'none'})")
    res = analysis.token_efficiency(open_lab(lab), by=cols)
    params = {**res.params, "by": cols, **enc, "log_x": log_x, "ci": ci}
    # a point is a group's accuracy and mean tokens over the same runs: those with both an outcome and
    # token counts (`scored_*`)
    rows = [r for r in res.table.to_pylist() if r["scored_accuracy"] is not None]
    if res.missing or not rows:
        reason = "; ".join(res.missing) or "no group has both token counts and outcomes"
        out = skipped(name, title, reason, width, sql=res.sql, params=params, analysis="token_efficiency")
        out.notes = [h for m in res.missing if (h := missing_hint(m))]
        return out
    data_rows: list[dict[str, Any]] = []
    for r, label in zip(rows, group_labels(rows, cols)):
        lo, hi = wilson(r["n_scored_success"], r["n_scored"])
        data_rows.append(
            {
                **{c: r[c] for c in cols},
                "group": label,
                "total_tokens": r["scored_tokens"],
                "accuracy": r["scored_accuracy"],
                "ci_low": lo,
                "ci_high": hi,
                "n_success": r["n_scored_success"],
                "n_failure": r["n_scored"] - r["n_scored_success"],
                "n_traj": r["n_traj"],
                "tokens_per_solved": r["tokens_per_solved"],
                "pareto": bool(r["pareto"]),
            }
        )
    data_rows.sort(key=lambda r: (r["total_tokens"], -r["accuracy"]))
    data = pa.Table.from_pylist(data_rows)
    fig = go.Figure()
    ckey, skey = enc["color"], enc["symbol"]
    cvals = sorted({group_label(r, [ckey]) for r in data_rows}) if ckey else ["all"]
    svals = _ordered_levels({group_label(r, [skey]) for r in data_rows}) if skey else []
    colors = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(cvals)}
    symbols = {v: SYMBOLS[i % len(SYMBOLS)] for i, v in enumerate(svals)}
    for cv in cvals:
        pts = [r for r in data_rows if not ckey or group_label(r, [ckey]) == cv]
        fig.add_trace(
            go.Scatter(
                name=cv,
                x=[r["total_tokens"] for r in pts],
                y=[r["accuracy"] for r in pts],
                mode="markers",
                marker={
                    "color": colors[cv],
                    "size": 7,
                    "symbol": [symbols[group_label(r, [skey])] for r in pts] if skey else "circle",
                    "line": {"width": 0},
                },
                error_y={
                    "type": "data",
                    "array": [r["ci_high"] - r["accuracy"] for r in pts],
                    "arrayminus": [r["accuracy"] - r["ci_low"] for r in pts],
                    "thickness": 0.7,
                    "width": 0,
                    "color": colors[cv],
                    "visible": ci,
                },
                text=[r["group"] for r in pts],
                hovertemplate="%{text}<br>%{x:,.0f} tokens, accuracy %{y:.1%}<extra></extra>",
            )
        )
    for sv in svals:  # marker legend, drawn in grey
        fig.add_trace(
            go.Scatter(
                name=sv,
                x=[None],
                y=[None],
                mode="markers",
                marker={"color": "#808080", "symbol": symbols[sv], "size": 7},
                showlegend=True,
            )
        )
    front = [r for r in data_rows if r["pareto"]]
    fig.add_trace(  # black rings on the frontier's points
        go.Scatter(
            x=[r["total_tokens"] for r in front],
            y=[r["accuracy"] for r in front],
            mode="markers",
            marker={"symbol": "circle-open", "size": 12, "color": "#000000", "line": {"width": 1}},
            showlegend=False,
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            name="Pareto frontier",
            x=[r["total_tokens"] for r in front],
            y=[r["accuracy"] for r in front],
            mode="lines",
            line={"color": "#000000", "width": 1, "dash": "dash"},
            hoverinfo="skip",
        )
    )
    n_legend = len(cvals) + len(svals) + 1
    styled(fig, width, aspect=0.72 + (0.05 * (n_legend // 3) if width == "single" else 0))
    fig.update_xaxes(title={"text": "mean total tokens per trajectory"}, type="log" if log_x else "linear")
    fig.update_yaxes(title={"text": "accuracy"}, tickformat=".0%", range=[0, 1.02])
    fig.update_layout(
        legend={
            "orientation": "h",
            "x": 0.0,
            "xanchor": "left",
            "y": -0.2,
            "yanchor": "top",
            "itemsizing": "trace",
            "entrywidth": 0.33 if width == "single" else 0.2,
            "entrywidthmode": "fraction",
        }
    )
    return FigureResult(
        name,
        title,
        fig,
        data,
        res.sql,
        params,
        "token_efficiency",
        notes=list(res.notes),
        caption="Accuracy against mean total tokens per trajectory for each "
        + " x ".join(cols)
        + " group, with 95% Wilson intervals; the dashed line joins the Pareto-optimal groups.",
        width=width,
    )


_LEVEL_WORDS = {
    w: i for i, w in enumerate(["trivial", "easy", "low", "medium", "moderate", "high", "hard", "expert"])
}


def _ordered_levels(levels: Iterable[str]) -> list[str]:
    """Numeric levels numerically, known words (easy < medium < hard) in order, the rest alphabetically."""

    def key(v: str) -> tuple[int, float, str]:
        m = re.fullmatch(r"\s*(?:level\s*)?(-?\d+(?:\.\d+)?)\s*", v, re.I)
        if m:
            return (0, float(m.group(1)), v)
        if v.lower() in _LEVEL_WORDS:
            return (1, _LEVEL_WORDS[v.lower()], v)
        return (2, 0.0, v)

    return sorted(levels, key=key)


DIFFICULTY_SQL = """\
-- accuracy per difficulty level and condition (and facet), over trajectories with a known outcome
SELECT {{by}}
    difficulty,
    coalesce(condition, '(none)') AS condition,
    count(*) AS n_traj,
    count(*) FILTER (WHERE outcome = 'success') AS n_success,
    count(*) FILTER (WHERE outcome = 'failure') AS n_failure
FROM trajectories
WHERE difficulty IS NOT NULL
GROUP BY ALL
ORDER BY ALL
"""


def accuracy_by_difficulty(
    lab: LabLike,
    width: str = "single",
    facet: str | None = None,
    conditions: Sequence[str] | str | None = None,
    ci: bool = True,
) -> FigureResult:
    """Accuracy per difficulty level, one bar per condition (e.g. `no-skill` vs `skill`), 95% Wilson CIs.

    `conditions` picks and orders the conditions shown (default all, `no-skill` first); `facet`
    (e.g. `model` or `domain`) draws one panel per value. Runs without a condition count as `(none)`.
    """
    name, title = "accuracy_by_difficulty", "Accuracy by difficulty, with and without skills"
    fcols = _cols(facet)
    if len(fcols) > 1:
        raise ConfigError("facet takes one column")
    lab = open_lab(lab)
    res = analysis.run_analysis(lab, DIFFICULTY_SQL, by=fcols)
    params = {"facet": fcols[0] if fcols else None, "conditions": conditions, "ci": ci}
    if isinstance(conditions, str):
        conditions = [c.strip() for c in conditions.split(",") if c.strip()]
    rows = res.table.to_pylist()
    if conditions:
        rows = [r for r in rows if r["condition"] in conditions]
    known = [r for r in rows if r["n_success"] + r["n_failure"] > 0]
    if not rows or not known:
        facts = analysis.lab_facts(lab)
        if facts.n_trajectories == 0:
            reason = "no trajectories"
        elif not rows:
            reason = "no difficulty levels" + (
                f" for conditions {', '.join(conditions)}" if conditions else ""
            )
        else:
            reason = "no outcomes"
        out = skipped(name, title, reason, width, sql=res.sql, params=params, analysis="sql")
        out.notes = [h for h in [missing_hint(reason)] if h] or [
            "tag trajectories with a difficulty (trajlab-meta.jsonl `difficulty`) to draw this figure"
        ]
        return out
    conds = list(conditions) if conditions else sorted({r["condition"] for r in known}, key=_condition_key)
    conds = [c for c in conds if any(r["condition"] == c for r in known)]
    levels = _ordered_levels({r["difficulty"] for r in known})
    data_rows = []
    facet_labels = group_labels(known, fcols) if fcols else ["all"] * len(known)
    for r, facet_label in zip(known, facet_labels):
        n = r["n_success"] + r["n_failure"]
        lo, hi = wilson(r["n_success"], n)
        data_rows.append(
            {
                **{c: r[c] for c in fcols},
                "facet": facet_label,
                "difficulty": r["difficulty"],
                "condition": r["condition"],
                "n_traj": r["n_traj"],
                "n_success": r["n_success"],
                "n_failure": r["n_failure"],
                "accuracy": r["n_success"] / n,
                "ci_low": lo,
                "ci_high": hi,
            }
        )
    facets = sorted({r["facet"] for r in data_rows})
    data_rows.sort(
        key=lambda r: (facets.index(r["facet"]), levels.index(r["difficulty"]), conds.index(r["condition"]))
    )
    data = pa.Table.from_pylist(data_rows)
    colors = condition_colors(conds)
    fig = make_subplots(
        rows=1,
        cols=len(facets),
        shared_yaxes=True,
        horizontal_spacing=0.03,
    )
    for i, f in enumerate(facets, start=1):
        for c in conds:
            by_level = {r["difficulty"]: r for r in data_rows if r["facet"] == f and r["condition"] == c}
            pts = [by_level.get(lv) for lv in levels]
            fig.add_trace(
                go.Bar(
                    name=safe_text(c, 40),
                    legendgroup=c,
                    showlegend=i == 1,
                    x=[safe_text(lv, 20) for lv in levels],
                    y=[p["accuracy"] if p else None for p in pts],
                    marker={"color": colors[c], "line": {"width": 0}},
                    error_y={
                        "type": "data",
                        "array": [p["ci_high"] - p["accuracy"] if p else 0 for p in pts],
                        "arrayminus": [p["accuracy"] - p["ci_low"] if p else 0 for p in pts],
                        "thickness": 0.8,
                        "width": 2,
                        "color": "#404040",
                        "visible": ci,
                    },
                    customdata=[
                        [p["n_success"], p["n_success"] + p["n_failure"]] if p else [0, 0] for p in pts
                    ],
                    hovertemplate="difficulty %{x}: %{y:.1%} (%{customdata[0]}/%{customdata[1]})<extra>"
                    + c
                    + "</extra>",
                ),
                row=1,
                col=i,
            )
    styled(fig, width, aspect=0.62)
    fig.update_layout(barmode="group", bargap=0.25, bargroupgap=0.05)
    fig.update_xaxes(
        type="category",
        title={"text": "difficulty"},
        categoryorder="array",
        categoryarray=[safe_text(lv, 20) for lv in levels],
    )
    if fcols:  # panel names under the axes (a top legend would cover subplot titles)
        for i, f in enumerate(facets, start=1):
            fig.update_xaxes(title={"text": f}, row=1, col=i)
    fig.update_yaxes(tickformat=".0%", range=[0, 1.05])
    fig.update_yaxes(title={"text": "accuracy"}, row=1, col=1)
    fig.update_annotations(font={"size": fig.layout.font.size})
    _legend_top(fig)
    notes = [] if len(conds) > 1 else [f"only one condition ({conds[0]}): nothing to compare it with"]
    return FigureResult(
        name,
        title,
        fig,
        data,
        res.sql,
        params,
        "sql",
        notes=notes,
        caption="Accuracy per difficulty level for each condition ("
        + ", ".join(conds)
        + "), with 95% Wilson intervals"
        + (f"; one panel per {fcols[0]}" if fcols else "")
        + ".",
        width=width,
    )


def _condition_key(c: str) -> tuple[int, str]:
    return (0 if c in ("no-skill", "(none)", "baseline", "control") else 1, c)
