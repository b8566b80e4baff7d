"""Paper style: one plotly template, column widths, and colours shared by every figure.

Sizes are given in points and inches and converted to CSS pixels, because kaleido lays a figure out at
96 px per inch and writes PDF pages at 0.75 pt per px: a 336 px wide figure is a 3.5 in PDF page, and
a 10.67 px font is 8 pt on paper. PNGs are written at `PNG_DPI` by scaling.

The palette is Okabe-Ito (distinguishable under the common colour-vision deficiencies); every figure
takes a category's, modality's or node status's colour from the dictionaries below, so the same
category has the same colour in every figure and in the dashboard.
"""

from __future__ import annotations

import re
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from ..errors import ConfigError
from ..redact import bidi_visible, redact

CSS_DPI = 96.0
"""Pixels per inch of kaleido's layout (and of the dashboard's CSS pixels)."""
PNG_DPI = 300
"""Resolution of exported PNGs."""
PNG_SCALE = PNG_DPI / CSS_DPI

WIDTHS_IN: dict[str, float] = {"single": 3.5, "double": 7.16}
"""Column widths in inches of a two-column paper (IEEE/ACM/NeurIPS-like)."""
FONT_PT: dict[str, float] = {"single": 7.0, "double": 8.0}
"""Base font size in points at each width (axis titles and legends; ticks one point smaller)."""
WIDTH_CHOICES = ("single", "double", "screen")
"""`screen` is for the dashboard: no fixed pixel width (autosize) and screen-sized fonts."""

FONT_FAMILY = "Liberation Sans, Arial, Helvetica, DejaVu Sans, sans-serif"
TEMPLATE_NAME = "trajlab-paper"

# Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO: dict[str, str] = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#999999",
}
PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
    "#999999",
)
"""Default colourway: Okabe-Ito, darkest first."""

TAXONOMY_ORDER: tuple[str, ...] = (
    "audio_perception",
    "video_perception",
    "insufficient_exploration",
    "knowledge_retrieval",
    "reasoning_calculation",
    "tool_infrastructure",
    "not_a_failure",
    "unsure",
)
CATEGORY_COLORS: dict[str, str] = {
    "audio_perception": "#E69F00",
    "video_perception": "#56B4E9",
    "insufficient_exploration": "#009E73",
    "knowledge_retrieval": "#CC79A7",
    "reasoning_calculation": "#0072B2",
    "tool_infrastructure": "#D55E00",
    "not_a_failure": "#BBBBBB",
    "unsure": "#F0E442",
}
"""Colour of each omni-failure category id plus `not_a_failure` and `unsure`."""
CATEGORY_SHORT: dict[str, str] = {
    "audio_perception": "Audio perception",
    "video_perception": "Video perception",
    "insufficient_exploration": "Insuff. exploration",
    "knowledge_retrieval": "Knowledge retrieval",
    "reasoning_calculation": "Reasoning/calc.",
    "tool_infrastructure": "Tool/infra.",
    "not_a_failure": "Not a failure",
    "unsure": "Unsure",
    "(none)": "(no label)",
}
"""Short display names of the categories (axis labels must fit a single column)."""

MODALITY_COLORS: dict[str, str] = {
    "audio": "#E69F00",
    "video": "#56B4E9",
    "image": "#009E73",
    "document": "#CC79A7",
    "web": "#0072B2",
    "file": "#999999",
    "compute": "#D55E00",
    "text": "#FFFFFF",
}
"""Fill colour of each step modality (DAG nodes, modality bars). `text` nodes are white with an outline."""

STATUS_COLORS: dict[str, str] = {
    "ok": "#404040",
    "error": "#D55E00",
    "timeout": "#CC79A7",
    "no-output": "#999999",
}
"""Outline colour of a DAG node by status."""

OUTCOME_COLORS: dict[str, str] = {"success": "#0072B2", "failure": "#D55E00", "unknown": "#999999"}
CAPABILITY_COLORS: dict[str, str] = {
    "external": "#0072B2",
    "file": "#E69F00",
    "compute": "#009E73",
    "other": "#999999",
}
STRATEGY_COLORS: dict[str, str] = {
    "raw": "#D55E00",
    "mixed": "#CC79A7",
    "tools": "#0072B2",
    "none": "#999999",
}
"""Media strategies of `analysis.media_strategy`: media fed to the model (vermillion), both (purple),
extraction tools only (blue), no media call (grey)."""
CONDITION_COLORS: dict[str, str] = {"no-skill": "#999999", "skill": "#0072B2"}
"""Conditions other than these take the next free palette colours, in sorted order."""


def category_color(category: str | None) -> str:
    return CATEGORY_COLORS.get(category or "", "#666666")


def category_label(category: str | None) -> str:
    c = category or "(none)"
    return CATEGORY_SHORT.get(c) or safe_text(c.replace("_", " "), 30)


def category_order(categories: list[str]) -> list[str]:
    """Taxonomy order first, unknown ids after (sorted)."""
    known = [c for c in TAXONOMY_ORDER if c in categories]
    return known + sorted(c for c in categories if c not in TAXONOMY_ORDER)


def condition_colors(conditions: list[str]) -> dict[str, str]:
    out = {c: CONDITION_COLORS[c] for c in conditions if c in CONDITION_COLORS}
    free = [p for p in PALETTE if p not in out.values()]
    for i, c in enumerate(sorted(c for c in conditions if c not in out)):
        out[c] = free[i % len(free)]
    return out


def px(points: float) -> float:
    """Points to CSS pixels."""
    return points * CSS_DPI / 72.0


def check_width(width: str) -> str:
    if width not in WIDTH_CHOICES:
        raise ConfigError(f"width must be one of {', '.join(WIDTH_CHOICES)}, not {width!r}")
    return width


def width_px(width: str) -> int | None:
    """Figure width in CSS pixels (None for `screen`: the container decides)."""
    check_width(width)
    return None if width == "screen" else round(WIDTHS_IN[width] * CSS_DPI)


def font_px(width: str) -> float:
    return 13.0 if width == "screen" else px(FONT_PT[width])


def paper_template(width: str = "single") -> go.layout.Template:
    """The paper template at a column width: fonts, margins, axes, colourway."""
    check_width(width)
    size = font_px(width)
    small = size - (1.5 if width == "screen" else px(1))
    axis = {
        "showline": True,
        "linecolor": "#404040",
        "linewidth": 0.8,
        "ticks": "outside",
        "ticklen": 3,
        "tickwidth": 0.8,
        "tickcolor": "#404040",
        "tickfont": {"size": small},
        "title": {"font": {"size": size}, "standoff": 4},
        "showgrid": False,
        "zeroline": False,
        "automargin": True,
    }
    layout = go.Layout(
        font={"family": FONT_FAMILY, "size": size, "color": "#000000"},
        title={"font": {"size": size + (2 if width == "screen" else px(1))}, "x": 0.0, "xanchor": "left"},
        colorway=list(PALETTE),
        paper_bgcolor="#FFFFFF",
        plot_bgcolor="#FFFFFF",
        margin={"l": 4, "r": 4, "t": 8, "b": 4, "pad": 0, "autoexpand": True},
        xaxis=axis,
        yaxis={**axis, "showgrid": True, "gridcolor": "#E5E5E5", "gridwidth": 0.6},
        legend={
            "font": {"size": small},
            "bgcolor": "rgba(255,255,255,0)",
            "borderwidth": 0,
            "itemsizing": "constant",
            "tracegroupgap": 2,
            "title": {"font": {"size": small}},
        },
        bargap=0.25,
        bargroupgap=0.05,
        hoverlabel={"font": {"family": FONT_FAMILY}},
        coloraxis={"colorbar": {"thickness": 8, "outlinewidth": 0, "tickfont": {"size": small}}},
    )
    return go.layout.Template(layout=layout)


pio.templates[TEMPLATE_NAME] = paper_template("single")


def styled(fig: go.Figure, width: str, height_in: float | None = None, aspect: float = 0.72) -> go.Figure:
    """Apply the template for `width` and the paper size (height from `height_in` or width * aspect)."""
    w = width_px(width)
    fig.update_layout(template=paper_template(width))
    if w is None:
        fig.update_layout(autosize=True, height=round(440 * (height_in or 0) / 3.0) if height_in else None)
    else:
        h = height_in * CSS_DPI if height_in else w * aspect
        fig.update_layout(width=w, height=round(h), autosize=False)
    return fig


_TAGS = re.compile(r"[<>&]")
_CTRL = re.compile(r"[\x00-\x1f\x7f]+")


def safe_text(text: Any, limit: int = 60, middle: bool = False) -> str:
    """Trajectory text made safe for a plotly label: secrets redacted, control characters removed, bidi
    overrides shown as `[U+202E]`, and `<`, `>`, `&` replaced by look-alikes (plotly renders a subset of
    HTML in text, e.g. `<a href>`). Text longer than `limit` is cut at the end, or with `middle` in the
    middle (keeping the start and the end: names that share a long prefix stay apart)."""
    if text is None:
        return ""
    s = bidi_visible(_CTRL.sub(" ", redact(str(text)))).strip()
    s = _TAGS.sub(lambda m: {"<": "‹", ">": "›", "&": "+"}[m.group()], s)
    if len(s) <= limit:
        return s
    if middle and limit >= 3:
        head = (limit - 1) // 2
        return s[:head] + "…" + s[len(s) - (limit - 1 - head) :]
    return s[: limit - 1] + "…"
