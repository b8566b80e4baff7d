"""Paper figures and tables (layer 8): the study's figure set as functions over a lab.

Every figure function takes `(lab, width="single"|"double"|"screen", **options)` and returns a
`FigureResult` (plotly figure, the Arrow table of plotted numbers, the SQL/analysis and parameters
behind it, or a one-line `skipped` reason when the lab lacks the data). The dashboard calls the same
functions, so the paper and the dashboard show the same numbers. `export_figures` writes PDF/PNG/SVG
through one kaleido (Chromium) server per run, each with a provenance sidecar JSON; `export_tables`
writes the same numbers as LaTeX (booktabs) and Markdown. See docs/figures.md.
"""

from ._agreement import agreement_confusion
from ._bars import capability_usage, failure_distribution, tool_gaps
from ._dag import exemplar_dag
from ._export import (
    BROWSER_HINT,
    EXPORT_FORMATS,
    ExportReport,
    FigureRenderer,
    export_figures,
    find_browser,
)
from ._media import MEDIA_MEASURES, media_tokens
from ._points import accuracy_by_difficulty, accuracy_tokens_pareto
from ._registry import FIGURES, describe_figures, figure_options
from ._result import FigureResult, wilson
from ._style import (
    CAPABILITY_COLORS,
    CATEGORY_COLORS,
    CATEGORY_SHORT,
    CONDITION_COLORS,
    MODALITY_COLORS,
    OUTCOME_COLORS,
    PALETTE,
    PNG_DPI,
    STATUS_COLORS,
    STRATEGY_COLORS,
    TEMPLATE_NAME,
    WIDTHS_IN,
    paper_template,
    safe_text,
)
from ._tables import TABLE_FORMATS, export_tables, latex_table, markdown_table

__all__ = [
    "BROWSER_HINT",
    "CAPABILITY_COLORS",
    "CATEGORY_COLORS",
    "CATEGORY_SHORT",
    "CONDITION_COLORS",
    "EXPORT_FORMATS",
    "FIGURES",
    "MEDIA_MEASURES",
    "MODALITY_COLORS",
    "OUTCOME_COLORS",
    "PALETTE",
    "PNG_DPI",
    "STATUS_COLORS",
    "STRATEGY_COLORS",
    "TABLE_FORMATS",
    "TEMPLATE_NAME",
    "WIDTHS_IN",
    "ExportReport",
    "FigureRenderer",
    "FigureResult",
    "accuracy_by_difficulty",
    "accuracy_tokens_pareto",
    "agreement_confusion",
    "capability_usage",
    "describe_figures",
    "exemplar_dag",
    "export_figures",
    "export_tables",
    "failure_distribution",
    "figure_options",
    "find_browser",
    "latex_table",
    "markdown_table",
    "media_tokens",
    "paper_template",
    "safe_text",
    "tool_gaps",
    "wilson",
]
