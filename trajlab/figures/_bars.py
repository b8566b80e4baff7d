"""Bar figures over the analysis layer: tool-usage gaps, failure categories, capability usage."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import plotly.graph_objects as go
import pyarrow as pa
from plotly.subplots import make_subplots

from .. import analysis
from ..analysis import AnalysisResult, missing_hint
from ..errors import ConfigError
from ._result import FigureResult, LabLike, distinct_labels, group_label, group_labels, open_lab, skipped
from ._style import (
    CAPABILITY_COLORS,
    OUTCOME_COLORS,
    category_color,
    category_label,
    category_order,
    safe_text,
    styled,
)


def _missing(res: AnalysisResult) -> tuple[str, list[str]]:
    """(one-line reason, hints) for an analysis that could not run."""
    hints = [h for m in res.missing if (h := missing_hint(m))]
    return "; ".join(res.missing), hints


def _by(by: str | Iterable[str] | None) -> list[str]:
    return list(analysis.normalize_by(by or ()))


def _legend_top(fig: go.Figure) -> None:
    fig.update_layout(
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.01, "xanchor": "left", "x": 0.0}
    )


# -- tool-usage gaps -------------------------------------------------------------------------------

GAP_MEASURES = {
    "usage": ("usage_success", "usage_failure", "usage_gap", "usage_gap_ci_low", "usage_gap_ci_high"),
    "calls": ("share_success", "share_failure", "gap", "gap_ci_low", "gap_ci_high"),
}


def tool_gaps(
    lab: LabLike,
    width: str = "single",
    by: str | Iterable[str] | None = None,
    key: str = "tool",
    measure: str = "usage",
    top: int = 12,
    supported_only: bool = True,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    correction: str = "holm",
    min_support: int = 10,
    min_trajectories: int = 5,
) -> FigureResult:
    """Per tool: share in successful vs failed trajectories (left) and the gap with its bootstrap CI (right).

    `measure="usage"` plots the share of trajectories that call the tool (the quantity Fisher's test is
    about); `"calls"` the tool's share of all calls. Rows are the `top` tools by |gap| (supported rows
    only unless `supported_only=False`); significant gaps (after `correction`) are filled markers.
    """
    name, title = "tool_gaps", "Tool usage in successful vs failed trajectories"
    if measure not in GAP_MEASURES:
        raise ConfigError(f"measure must be one of {', '.join(GAP_MEASURES)}, not {measure!r}")
    cols = _by(by)
    res = analysis.gaps(
        open_lab(lab),
        by=cols,
        key=key,
        n_boot=n_boot,
        seed=seed,
        alpha=alpha,
        correction=correction,
        min_support=min_support,
        min_trajectories=min_trajectories,
        progress=False,
    )
    params = {**res.params, "measure": measure, "top": top, "supported_only": supported_only}
    if res.missing:
        reason, hints = _missing(res)
        out = skipped(name, title, reason, width, sql=res.sql, params=params, analysis="gaps")
        out.notes = hints
        return out
    s_col, f_col, g_col, lo_col, hi_col = GAP_MEASURES[measure]
    rows = [
        r for r in res.table.to_pylist() if r[g_col] is not None and (r["supported"] or not supported_only)
    ]
    if not rows:
        return skipped(
            name,
            title,
            f"no tool reaches min_support {min_support} calls in {min_trajectories} trajectories with both outcomes",
            width,
            sql=res.sql,
            params=params,
            analysis="gaps",
        )
    rows.sort(key=lambda r: (-abs(r[g_col]), r["tool"]))
    rows = sorted(rows[: max(1, top)], key=lambda r: -r[g_col])

    def row_label(k: tuple[Any, ...], middle: bool) -> str:
        head = group_label(dict(zip(cols, k)), cols, middle) + " · " if cols else ""
        return head + safe_text(k[-1], 30, middle)

    row_labels = distinct_labels([(*(r[c] for c in cols), r["tool"]) for r in rows], row_label)
    data = pa.Table.from_pylist(
        [
            {
                **{c: r[c] for c in cols},
                "tool": r["tool"],
                "label": label,
                "success": r[s_col],
                "failure": r[f_col],
                "gap": r[g_col],
                "ci_low": r[lo_col],
                "ci_high": r[hi_col],
                "p_adjusted": r["p_adjusted"],
                "significant": bool(r["significant"]),
                "n_calls": r["n_calls"],
                "n_traj_success": r["n_traj_success"],
                "n_traj_failure": r["n_traj_failure"],
            }
            for r, label in zip(rows, row_labels)
        ]
    )
    d = data.to_pydict()
    labels = d["label"]
    fig = make_subplots(
        rows=1, cols=2, shared_yaxes=True, column_widths=[0.55, 0.45], horizontal_spacing=0.09
    )
    for outcome in ("success", "failure"):
        fig.add_trace(
            go.Bar(
                name=outcome,
                x=d[outcome],
                y=labels,
                orientation="h",
                marker={"color": OUTCOME_COLORS[outcome], "line": {"width": 0}},
                hovertemplate="%{y}: %{x:.1%} of " + outcome + "<extra></extra>",
            ),
            row=1,
            col=1,
        )
    sig = d["significant"]
    lo = [g - c if c is not None else 0 for g, c in zip(d["gap"], d["ci_low"])]
    hi = [c - g if c is not None else 0 for g, c in zip(d["gap"], d["ci_high"])]
    fig.add_trace(
        go.Scatter(
            name="gap (95% CI)" if alpha == 0.05 else f"gap ({1 - alpha:.0%} CI)",
            x=d["gap"],
            y=labels,
            mode="markers",
            marker={
                "color": ["#000000" if s else "#FFFFFF" for s in sig],
                "line": {"color": "#000000", "width": 1},
                "size": 6,
                "symbol": "circle",
            },
            error_x={
                "type": "data",
                "array": hi,
                "arrayminus": lo,
                "thickness": 1,
                "width": 2,
                "color": "#000000",
            },
            customdata=[[p, "significant" if s else "n.s."] for p, s in zip(d["p_adjusted"], sig)],
            hovertemplate="%{y}: gap %{x:+.1%}, p_adj %{customdata[0]:.2g} (%{customdata[1]})<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    fig.add_vline(x=0, line={"color": "#404040", "width": 0.8}, row=1, col=2)
    styled(fig, width, height_in=min(6.5, 0.9 + 0.17 * len(labels)))
    what = "trajectories using it" if measure == "usage" else "share of calls"
    top_share = max([v or 0 for v in d["success"] + d["failure"]] + [0.01])
    fig.update_xaxes(
        tickformat=".0%", nticks=4, range=[0, min(1.0, top_share * 1.05)], row=1, col=1, title={"text": what}
    )
    fig.update_xaxes(tickformat=".0%", nticks=5, row=1, col=2, title={"text": "gap (success − failure)"})
    fig.update_yaxes(autorange="reversed", showgrid=False, categoryorder="array", categoryarray=labels)
    fig.update_layout(barmode="group", bargap=0.2)
    _legend_top(fig)
    return FigureResult(
        name,
        title,
        fig,
        data,
        res.sql,
        params,
        "gaps",
        notes=list(res.notes),
        caption=f"Share of {what} among successful vs failed trajectories per tool, and the difference "
        f"with its {1 - alpha:.0%} bootstrap interval (resampling trajectories). Filled markers: "
        f"significant after {correction} correction.",
        width=width,
    )


# -- failure category distribution -----------------------------------------------------------------


def _sources(source: str | Sequence[str]) -> list[str]:
    items = [s.strip() for s in source.split(",")] if isinstance(source, str) else [str(s) for s in source]
    items = [s for s in items if s]
    for s in items:
        if s not in analysis.FAILURE_SOURCES:
            raise ConfigError(f"source must be among {', '.join(analysis.FAILURE_SOURCES)}, not {s!r}")
    if not items:
        raise ConfigError("give at least one label source")
    return items


SOURCE_TITLES = {"judge": "Judge", "human": "Human", "gold": "Adjudicated", "predicted": "Predicted"}


def failure_distribution(
    lab: LabLike,
    width: str = "single",
    source: str | Sequence[str] = "judge",
    by: str | Iterable[str] | None = ("model",),
    judge: str | None = None,
    measure: str = "share",
) -> FigureResult:
    """Stacked bars of failure categories per group (model, benchmark, ...), from one or more sources.

    `source` is `judge`, `human`, `gold` (adjudicated) or `predicted`, or several (`"judge,gold"`)
    side by side; `measure` is `share` (of the group's labeled trajectories) or `count`.
    """
    name, title = "failure_distribution", "Failure categories"
    if measure not in ("share", "count"):
        raise ConfigError(f"measure must be share or count, not {measure!r}")
    srcs = _sources(source)
    cols = _by(by)
    lab = open_lab(lab)
    results = {
        s: analysis.failure_distribution(lab, source=s, by=cols, judge=judge if s == "judge" else None)
        for s in srcs
    }
    params = {"source": srcs, "by": cols, "judge": judge, "measure": measure}
    sql = "\n\n".join(f"-- source={s}\n{r.sql}" for s, r in results.items())
    usable = {s: r for s, r in results.items() if not r.missing and r.num_rows}
    notes = [f"{s}: {'; '.join(r.missing)}" for s, r in results.items() if r.missing]
    if not usable:
        reason = "; ".join(dict.fromkeys(m for r in results.values() for m in r.missing)) or "no labels"
        out = skipped(name, title, reason, width, sql=sql, params=params, analysis="failure_distribution")
        out.notes = [h for r in results.values() for m in r.missing if (h := missing_hint(m))]
        return out
    rows: list[dict[str, Any]] = []
    raw = [(s, row) for s, r in usable.items() for row in r.table.to_pylist()]
    labels = group_labels([row for _, row in raw], cols)  # one label per group, across the sources
    for (s, row), label in zip(raw, labels):
        rows.append(
            {
                "source": s,
                **{c: row[c] for c in cols},
                "group": label,
                "category": row["category"],
                "n": row["n"],
                "share": row["share"],
                "n_labeled": row["n_labeled"],
            }
        )
    cats = category_order(sorted({r["category"] for r in rows}))
    groups = sorted({r["group"] for r in rows})
    rows.sort(key=lambda r: (srcs.index(r["source"]), groups.index(r["group"]), cats.index(r["category"])))
    data = pa.Table.from_pylist(rows)
    panels = list(usable)
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        shared_yaxes=True,
        horizontal_spacing=0.06,
    )
    value = "share" if measure == "share" else "n"
    for i, s in enumerate(panels, start=1):
        for c in cats:
            vals = {r["group"]: r[value] or 0 for r in rows if r["source"] == s and r["category"] == c}
            fig.add_trace(
                go.Bar(
                    name=category_label(c),
                    legendgroup=c,
                    showlegend=i == 1,
                    x=[vals.get(g, 0) for g in groups],
                    y=groups,
                    orientation="h",
                    marker={"color": category_color(c), "line": {"color": "#FFFFFF", "width": 0.4}},
                    hovertemplate="%{y}: " + category_label(c) + " %{x}<extra>" + s + "</extra>",
                ),
                row=1,
                col=i,
            )
        fig.update_xaxes(
            tickformat=".0%" if measure == "share" else "d",
            range=[0, 1.001] if measure == "share" else None,
            dtick=0.25 if measure == "share" else None,
            title={
                "text": (f"{SOURCE_TITLES[s]}: " if len(panels) > 1 else "")
                + ("share of labeled failures" if measure == "share" else "labeled trajectories")
            },
            row=1,
            col=i,
        )
    styled(fig, width, height_in=min(6.0, 1.1 + 0.2 * len(groups)))
    fig.update_layout(barmode="stack")
    fig.update_yaxes(autorange="reversed", showgrid=False, categoryorder="array", categoryarray=groups)
    fig.update_annotations(font={"size": fig.layout.font.size})
    _legend_top(fig)
    return FigureResult(
        name,
        title,
        fig,
        data,
        sql,
        params,
        "failure_distribution",
        notes=notes + [n for r in usable.values() for n in r.notes],
        caption="Failure category of failed trajectories per "
        + (", ".join(cols) or "lab")
        + " ("
        + ", ".join(SOURCE_TITLES[s].lower() for s in panels)
        + " labels).",
        width=width,
    )


# -- capability usage ------------------------------------------------------------------------------

CAPABILITY_MEASURES = {
    "usage_rate": "trajectories using it",
    "call_share": "share of tool calls",
    "calls_per_traj": "calls per trajectory",
}


def capability_usage(
    lab: LabLike,
    width: str = "single",
    by: str | Iterable[str] | None = ("model",),
    facet: str | None = None,
    measure: str = "usage_rate",
) -> FigureResult:
    """Grouped bars of meta-capability usage (external, file, compute, other) per group.

    `by` groups the x axis (e.g. model); `facet` (e.g. `domain`) draws one panel per value;
    `measure` is `usage_rate` (share of trajectories with at least one such call), `call_share` or
    `calls_per_traj`.
    """
    name, title = "capability_usage", "Capability usage"
    if measure not in CAPABILITY_MEASURES:
        raise ConfigError(f"measure must be one of {', '.join(CAPABILITY_MEASURES)}, not {measure!r}")
    cols = _by(by)
    fcols = _by(facet) if facet else []
    if len(fcols) > 1:
        raise ConfigError("facet takes one column")
    res = analysis.capability_usage(open_lab(lab), by=[*cols, *fcols])
    params = {**res.params, "by": cols, "facet": fcols[0] if fcols else None, "measure": measure}
    if res.missing or not res.num_rows:
        reason, hints = _missing(res) if res.missing else ("no trajectories", [])
        out = skipped(name, title, reason, width, sql=res.sql, params=params, analysis="capability_usage")
        out.notes = hints
        return out
    raw = res.table.to_pylist()
    facet_labels = group_labels(raw, fcols) if fcols else ["all"] * len(raw)
    rows = [
        {
            **{c: r[c] for c in [*cols, *fcols]},
            "facet": fl,
            "group": gl,
            "capability": r["capability"],
            "value": r[measure],
            "n_traj": r["n_traj"],
            "n_calls": r["n_calls"],
        }
        for r, fl, gl in zip(raw, facet_labels, group_labels(raw, cols))
    ]
    data = pa.Table.from_pylist(rows)
    facets = sorted({r["facet"] for r in rows})
    groups = sorted({r["group"] for r in rows})
    # a capability with no calls anywhere (often `other`) would be a legend entry without bars
    caps = [c for c in CAPABILITY_COLORS if any(r["capability"] == c and r["n_calls"] for r in rows)]
    fig = make_subplots(
        rows=1,
        cols=len(facets),
        shared_yaxes=True,
        horizontal_spacing=0.02,
    )
    for i, f in enumerate(facets, start=1):
        for c in caps:
            vals = {r["group"]: r["value"] for r in rows if r["facet"] == f and r["capability"] == c}
            fig.add_trace(
                go.Bar(
                    name=c,
                    legendgroup=c,
                    showlegend=i == 1,
                    x=groups,  # group labels are safe_text already
                    y=[vals.get(g) for g in groups],
                    marker={"color": CAPABILITY_COLORS[c], "line": {"width": 0}},
                    hovertemplate="%{x}: " + c + " %{y:.2f}<extra>" + f + "</extra>",
                ),
                row=1,
                col=i,
            )
    styled(fig, width, aspect=0.62 if len(facets) == 1 else 0.5)
    ratio = measure != "calls_per_traj"
    fig.update_yaxes(tickformat=".0%" if ratio else None, range=[0, 1.0] if ratio else None)
    fig.update_yaxes(title={"text": CAPABILITY_MEASURES[measure]}, row=1, col=1)
    fig.update_xaxes(tickangle=-35, categoryorder="array", categoryarray=groups)
    if fcols:  # panel names under the axes (a top legend would cover subplot titles)
        for i, f in enumerate(facets, start=1):
            fig.update_xaxes(title={"text": f"{fcols[0]}: {f}"}, row=1, col=i)
    fig.update_layout(barmode="group", bargap=0.18, bargroupgap=0.0)
    fig.update_annotations(font={"size": fig.layout.font.size})
    _legend_top(fig)
    return FigureResult(
        name,
        title,
        fig,
        data,
        res.sql,
        params,
        "capability_usage",
        notes=list(res.notes),
        caption=f"Meta-capability usage ({CAPABILITY_MEASURES[measure]}) per "
        + (", ".join(cols) or "lab")
        + (f", one panel per {fcols[0]}" if fcols else "")
        + "; capabilities from the step_capability rules.",
        width=width,
    )
