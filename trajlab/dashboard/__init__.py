"""The Dash dashboard (layer 9): browse runs and failure DAGs, inspect steps, review labels, see the analyses.

`create_app(lab, annotations=..., dashboards=[...])` builds the app; `DashboardServer(app, host, port)`
or `serve(...)` serves it (127.0.0.1 by default); `trajlab dash LAB` does both. Pages are data:
`dashboards/*.yaml` (`load_dashboards`), validated with errors naming file, line and field. The runs
table is filtered, sorted and paged in DuckDB with parameters (`RunsQuery`, `fetch_page`); the step DAG
is drawn on a canvas (`assets/dag.js`) from `build_view` (layered, folded, chunked). Reviews go through
`trajlab.review` into `annotations/`; the lab is only read. See docs/dashboard.md.
"""

from ._app import SECURITY_HEADERS, DashContext, create_app
from ._check import PanelCheck, check_pages
from ._graph import EDGE_COLORS, MARKS, GraphView, Highlights, build_view, fold
from ._review import (
    ReviewResult,
    TrajectoryLabels,
    agreement_rows,
    live_agreement,
    submit_review,
    trajectory_labels,
)
from ._runs import (
    DEFAULT_COLUMNS,
    DEFAULT_FILTERS,
    NONE_VALUE,
    RUN_COLUMNS,
    RUN_FILTERS,
    RunsPage,
    RunsQuery,
    facet_values,
    fetch_page,
    fetch_summary,
    page_sql,
    where_clause,
)
from ._server import DEFAULT_HOST, DEFAULT_PORT, DashboardServer, is_loopback, serve
from ._source import LabSource, Snapshot
from ._spec import (
    PANEL_KINDS,
    AgreementPanel,
    AnalysisPanel,
    DashboardSpec,
    FigurePanel,
    FilterSpec,
    MarkdownPanel,
    PageSpec,
    QueuePanel,
    RunsPanel,
    SqlPanel,
    check_sql,
    default_dirs,
    load_dashboards,
    load_file,
)
from ._text import clean_block, clean_line

__all__ = [
    "DEFAULT_COLUMNS",
    "DEFAULT_FILTERS",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "EDGE_COLORS",
    "MARKS",
    "NONE_VALUE",
    "PANEL_KINDS",
    "RUN_COLUMNS",
    "RUN_FILTERS",
    "SECURITY_HEADERS",
    "AgreementPanel",
    "AnalysisPanel",
    "DashContext",
    "DashboardServer",
    "DashboardSpec",
    "FigurePanel",
    "FilterSpec",
    "GraphView",
    "Highlights",
    "LabSource",
    "MarkdownPanel",
    "PageSpec",
    "PanelCheck",
    "QueuePanel",
    "ReviewResult",
    "RunsPage",
    "RunsPanel",
    "RunsQuery",
    "Snapshot",
    "SqlPanel",
    "TrajectoryLabels",
    "agreement_rows",
    "build_view",
    "check_pages",
    "check_sql",
    "clean_block",
    "clean_line",
    "create_app",
    "default_dirs",
    "facet_values",
    "fetch_page",
    "fetch_summary",
    "fold",
    "is_loopback",
    "live_agreement",
    "load_dashboards",
    "load_file",
    "page_sql",
    "serve",
    "submit_review",
    "trajectory_labels",
    "where_clause",
]
