"""`create_app(lab, ...)`: the Dash app over a lab, its pages from dashboards/*.yaml.

Routes: the YAML pages at their `path`, and `/trajectory/<id>` (DAG, timeline, inspector, labels).
The app reads the lab through a read-only DuckDB snapshot and writes only annotation files, through
`trajlab.review`.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import dash
from dash import Input, Output, State, dcc, html
from flask import jsonify

from ..errors import ConfigError, TrajlabError
from ..store import Lab
from ._components import message
from ._compress import install_compression
from ._labels import register_labels
from ._page_runs import register_runs
from ._page_trajectory import TrajectoryCache, register_trajectory, trajectory_layout
from ._panels import page_layout, register_panels
from ._source import LabSource
from ._spec import DashboardSpec, load_dashboards
from ._text import clean_line

if TYPE_CHECKING:
    from flask import Response

T = TypeVar("T")
ASSETS = Path(__file__).resolve().parent / "assets"
TRAJ_PATH = re.compile(r"^/trajectory/([A-Za-z0-9_.:-]{1,200})/?$")

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    # Nothing is loaded from or sent to another host, even if some text were ever mis-rendered.
    "Content-Security-Policy": "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
    "connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
}


@dataclass
class DashContext:
    """What every page and callback needs: the lab source, the pages and the review settings."""

    source: LabSource
    spec: DashboardSpec
    secrets: bool = True
    blind: bool = False
    reviewers: int = 1
    annotator: str | None = None
    trajectories: TrajectoryCache = field(default_factory=TrajectoryCache)
    timings: dict[str, deque[float]] = field(default_factory=lambda: defaultdict(lambda: deque(maxlen=500)))
    _tlock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, name: str, fn: Callable[[], T]) -> T:
        """Run `fn` and record its wall time under `name` (served at /_trajlab/timings)."""
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            with self._tlock:
                self.timings[name].append(time.perf_counter() - t0)


def _nav(spec: DashboardSpec) -> html.Nav:
    return html.Nav(
        [dcc.Link(p.title, href=p.path, className="nav-link", id=f"nav-{p.id}") for p in spec.pages],
        className="nav",
    )


def create_app(
    lab: Lab | str | os.PathLike[str],
    *,
    annotations: str | os.PathLike[str] = "annotations",
    dataset: str = "default",
    taxonomy: Any = None,
    dashboards: Iterable[str | os.PathLike[str]] | None = None,
    default_pages: bool = True,
    annotator: str | None = None,
    blind: bool = False,
    reviewers: int = 1,
    redact: bool = True,
) -> dash.Dash:
    """The dashboard app. `app.trajlab` is its `DashContext`; serve `app.server` (Flask) or use `serve`."""
    if reviewers < 1:  # every queue and save would fail with it
        raise ConfigError(f"--reviewers (reviewers per item) must be at least 1 (got {reviewers})")
    source = LabSource(lab, annotations, dataset, taxonomy, blind=blind)
    spec = load_dashboards([Path(d) for d in dashboards or []], include_defaults=default_pages)
    ctx = DashContext(source, spec, secrets=redact, blind=blind, reviewers=reviewers, annotator=annotator)
    source.snapshot()  # build the runs index now, not on the first request

    app = dash.Dash(
        __name__,
        assets_folder=str(ASSETS),
        suppress_callback_exceptions=True,
        title=f"trajlab · {source.lab.root.name}",
        update_title=None,  # type: ignore[arg-type]  # dash documents None (title left alone), types str
        serve_locally=True,
    )
    app.layout = html.Div(
        [
            dcc.Location(id="url"),
            html.Header(
                [
                    html.Div(
                        [
                            dcc.Link("trajlab", href="/", className="brand"),
                            html.Span(
                                clean_line(str(source.lab.root), 80), className="lab-name", title="lab"
                            ),
                        ],
                        className="brand-box",
                    ),
                    _nav(spec),
                    html.Div(
                        [
                            html.Label("reviewer", htmlFor="annotator"),
                            dcc.Input(
                                id="annotator",
                                value=annotator or "",
                                placeholder="your name",
                                debounce=True,
                                persistence=True,
                                persistence_type="local",
                                style={"width": "9em"},
                            ),
                        ],
                        className="reviewer",
                    ),
                ],
                className="topbar",
            ),
            html.Main(id="page", className="main"),
        ]
    )

    @app.callback(Output("page", "children"), Input("url", "pathname"), State("url", "search"))
    def _route(path: str | None, search: str | None) -> Any:
        try:
            return _page(path or "/", search)
        except TrajlabError as e:  # e.g. the lab was removed or is being rebuilt
            return html.Div([html.H2("Cannot show this page"), message(str(e), "error")], className="page")

    def _page(path: str, search: str | None) -> Any:
        m = TRAJ_PATH.match(path)
        if m:
            return ctx.timed("trajectory-page", lambda: trajectory_layout(ctx, m.group(1), search))
        page = spec.by_path(path)
        if page is None:
            return html.Div(
                [
                    html.H2("Not found"),
                    html.P(f"No page at {clean_line(path, 120)}."),
                    dcc.Link("← runs", href="/"),
                ],
                className="page",
            )
        return page_layout(ctx, page)

    register_runs(app, ctx)
    register_trajectory(app, ctx)
    register_labels(app, ctx)
    register_panels(app, ctx)

    server = app.server
    install_compression(server)

    @server.after_request
    def _headers(resp: Response) -> Response:
        for k, v in SECURITY_HEADERS.items():
            resp.headers.setdefault(k, v)
        return resp

    @server.route("/_trajlab/health")
    def _health() -> Response:
        snap = source.snapshot()
        n = snap.cursor().execute("SELECT count(*) FROM runs").fetchone()
        return jsonify(
            {
                "ok": True,
                "lab": str(source.lab.root),
                "generation": snap.generation,
                "trajectories": n[0] if n else 0,
            }
        )

    @server.route("/_trajlab/timings")
    def _timings() -> Response:
        with ctx._tlock:
            return jsonify({k: list(v) for k, v in ctx.timings.items()})

    app.trajlab = ctx  # type: ignore[attr-defined]
    return app
