"""The figure set: name -> figure function, with the options each one takes."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ._agreement import agreement_confusion
from ._bars import capability_usage, failure_distribution, tool_gaps
from ._dag import exemplar_dag
from ._media import media_tokens
from ._points import accuracy_by_difficulty, accuracy_tokens_pareto
from ._result import FigureResult

FigureFunction = Callable[..., FigureResult]

FIGURES: dict[str, FigureFunction] = {
    "tool_gaps": tool_gaps,
    "failure_distribution": failure_distribution,
    "accuracy_tokens_pareto": accuracy_tokens_pareto,
    "capability_usage": capability_usage,
    "accuracy_by_difficulty": accuracy_by_difficulty,
    "exemplar_dag": exemplar_dag,
    "agreement_confusion": agreement_confusion,
    "media_tokens": media_tokens,
}
"""Every paper figure by name; each is `fn(lab, width="single"|"double"|"screen", **options)`."""


def figure_options(name: str) -> dict[str, Any]:
    """The options a figure takes and their defaults (everything after `lab` and `width`)."""
    from ..errors import ConfigError

    if name not in FIGURES:
        raise ConfigError(f"unknown figure {name!r}; figures: {', '.join(FIGURES)}")
    sig = inspect.signature(FIGURES[name])
    return {p.name: p.default for p in list(sig.parameters.values())[2:]}


def describe_figures() -> list[dict[str, Any]]:
    """Name, first docstring line and options of every figure (for `trajlab figures --list`)."""
    out = []
    for name, fn in FIGURES.items():
        doc = (fn.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        out.append({"name": name, "summary": " ".join(doc.split()), "options": figure_options(name)})
    return out
