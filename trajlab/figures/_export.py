"""Static export: every figure of a lab written through one kaleido (Chromium) server, with sidecars.

Kaleido 1.x drives a Chromium over the DevTools protocol. Starting the browser and loading plotly.js
into its tabs is most of the cost of one image, so an export run starts one `kaleido.Kaleido` with
`workers` tabs in a private event loop (on its own thread, so it also works inside Jupyter's running
loop), writes every figure x format through it, and closes it. The browser is the system Chromium
(`BROWSER_PATH`, else `chromium`/`chromium-browser`/`google-chrome` on PATH): nothing is downloaded,
and MathJax (fetched from a CDN by default) is turned off.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import shutil
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from tqdm import tqdm

from .._version import __version__
from ..errors import ConfigError, TrajlabError
from ..fsutil import atomic_write_bytes, atomic_write_text
from ..store import utcnow
from ._registry import FIGURES, figure_options
from ._result import FigureResult, LabLike, jsonable, open_lab
from ._style import CSS_DPI, PNG_SCALE, WIDTHS_IN, check_width

EXPORT_FORMATS = ("pdf", "png", "svg")
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
BROWSER_HINT = (
    "no Chromium found for static export: install it with `apt-get install chromium` "
    "(or set BROWSER_PATH to a Chrome/Chromium executable); sidecar JSON files were still written"
)


def find_browser() -> str | None:
    """The Chromium to render with: `BROWSER_PATH` if set (None when it is not an executable), else the
    first of chromium / chromium-browser / google-chrome on PATH, else /usr/bin/chromium."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    fallback = "/usr/bin/chromium"
    return fallback if os.access(fallback, os.X_OK) else None


def _browser_message() -> str:
    env = os.environ.get("BROWSER_PATH")
    if env:
        return f"BROWSER_PATH={env!r} is not an executable file; " + BROWSER_HINT
    return BROWSER_HINT


def image_size(fig: go.Figure, width: str) -> tuple[int, int]:
    """(width, height) in CSS pixels to export at (the layout's, or the column width for `screen`)."""
    w = fig.layout.width or round(WIDTHS_IN["double"] * CSS_DPI)
    h = fig.layout.height or round(w * 0.62)
    return int(w), int(h)


class FigureRenderer:
    """One kaleido server for many renders: `with FigureRenderer() as r: r.write(jobs)`.

    `workers` is the number of browser tabs rendering at once. `write` takes (figure, path, format)
    jobs and returns one error (or None) per job; `on_done` is called after each job.
    """

    def __init__(self, browser: str | None = None, workers: int = 2, timeout: float = 180.0):
        self.browser = browser or find_browser()
        if self.browser is None:
            raise ConfigError(_browser_message())
        self.workers = max(1, int(workers))
        self.timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._kaleido: Any = None

    def __enter__(self) -> FigureRenderer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Any) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def start(self) -> None:
        import kaleido

        if self._loop is not None:
            return
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="trajlab-kaleido", daemon=True)
        self._thread.start()

        async def open_() -> Any:
            k = kaleido.Kaleido(n=self.workers, timeout=self.timeout, mathjax=False, path=self.browser)
            await k.open()
            return k

        try:
            self._kaleido = self._run(open_())
        except BaseException:
            self._stop_loop()
            raise

    def _stop_loop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=30)
            self._loop.close()
        self._loop = self._thread = None

    def close(self) -> None:
        if self._loop is None:
            return
        try:
            if self._kaleido is not None:
                self._run(self._kaleido.close())
        finally:
            self._kaleido = None
            self._stop_loop()

    def write(
        self,
        jobs: Sequence[tuple[go.Figure, Path, str]],
        width: str = "single",
        on_done: Any = None,
    ) -> list[BaseException | None]:
        if self._loop is None:
            self.start()
        k = self._kaleido

        async def one(fig: go.Figure, path: Path, fmt: str) -> None:
            w, h = image_size(fig, width)
            opts = {"format": fmt, "width": w, "height": h, "scale": PNG_SCALE if fmt == "png" else 1}
            # kaleido's own file write truncates the earlier image first and deletes it when the write
            # fails (a full disk): render to bytes and replace the file atomically instead
            data = await k.calc_fig(fig, opts=opts)
            await asyncio.to_thread(atomic_write_bytes, path, data)

        assert self._loop is not None
        futures = {
            asyncio.run_coroutine_threadsafe(one(fig, Path(path), fmt), self._loop): i
            for i, (fig, path, fmt) in enumerate(jobs)
        }
        errors: list[BaseException | None] = [None] * len(jobs)
        for fut in concurrent.futures.as_completed(futures):
            errors[futures[fut]] = fut.exception()
            if on_done is not None:
                on_done()
        return errors


@dataclass
class ExportReport:
    """What `export_figures` produced: files per figure, sidecars, skips (with reasons) and failures."""

    out_dir: Path
    lab: Path
    generation: int
    formats: tuple[str, ...]
    width: str
    produced: dict[str, list[Path]] = field(default_factory=dict)
    sidecars: dict[str, Path] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    browser: str | None = None
    browser_missing: str | None = None
    seconds: float = 0.0
    results: dict[str, FigureResult] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """At least one figure file was written."""
        return any(self.produced.values())

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "out_dir": str(self.out_dir),
            "lab": str(self.lab),
            "lab_generation": self.generation,
            "formats": list(self.formats),
            "width": self.width,
            "produced": {k: [p.name for p in v] for k, v in self.produced.items()},
            "sidecars": {k: p.name for k, p in self.sidecars.items()},
            "skipped": dict(self.skipped),
            "failed": dict(self.failed),
            "browser": self.browser,
            "browser_missing": self.browser_missing,
            "seconds": round(self.seconds, 3),
        }

    def format(self) -> str:
        lines = [f"figures of {self.lab} (generation {self.generation}) in {self.out_dir}:"]
        for name in dict.fromkeys([*self.results, *self.sidecars, *self.failed]):
            if name in self.failed:
                lines.append(f"  {name}: FAILED: {self.failed[name]}")
            elif name in self.skipped:
                lines.append(f"  {name}: skipped: {self.skipped[name]}")
            elif self.produced.get(name):
                lines.append(f"  {name}: " + ", ".join(p.name for p in self.produced[name]))
            elif name in self.sidecars:
                lines.append(f"  {name}: data only ({self.sidecars[name].name})")
        if self.browser_missing:
            lines.append(self.browser_missing)
        n = sum(len(v) for v in self.produced.values())
        lines.append(
            f"{n} files from {sum(1 for v in self.produced.values() if v)} figures in {self.seconds:.1f}s"
        )
        return "\n".join(lines)


def check_options(names: Iterable[str], options: Mapping[str, Mapping[str, Any]] | None) -> None:
    """Unknown figure names or option names are a ConfigError (before anything is computed)."""
    for name in names:
        if name not in FIGURES:
            raise ConfigError(f"unknown figure {name!r}; figures: {', '.join(FIGURES)}")
    for name, opts in (options or {}).items():
        known = figure_options(name)
        for key in opts:
            if key not in known:
                raise ConfigError(f"figure {name} has no option {key!r}; options: {', '.join(known)}")


def compute_figures(
    lab: LabLike,
    only: Sequence[str] | None = None,
    width: str = "single",
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: bool = True,
) -> tuple[dict[str, FigureResult], dict[str, str]]:
    """(results, failures) of the selected figures; one figure's unexpected error does not stop the rest."""
    names = list(dict.fromkeys(only)) if only else list(FIGURES)
    check_width(width)
    check_options(names, options)
    lab = open_lab(lab)
    results: dict[str, FigureResult] = {}
    failed: dict[str, str] = {}
    for name in tqdm(names, desc="figures", unit="fig", disable=not progress, leave=False):
        try:
            results[name] = FIGURES[name](lab, width=width, **dict((options or {}).get(name, {})))
        except ConfigError:
            raise
        except (TrajlabError, Exception) as e:  # one broken figure must not stop the set
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return results, failed


def _sidecar(res: FigureResult, lab_root: Path, generation: int, files: list[Path]) -> str:
    doc = {
        **res.provenance(),
        "lab": str(lab_root),
        "lab_generation": generation,
        "trajlab_version": __version__,
        "created_at": utcnow().isoformat(),
        "files": [p.name for p in files],
    }
    return json.dumps(jsonable(doc), indent=2, ensure_ascii=False) + "\n"


def export_figures(
    lab: LabLike,
    out_dir: str | os.PathLike[str],
    formats: Sequence[str] = EXPORT_FORMATS,
    only: Sequence[str] | None = None,
    progress: bool = True,
    width: str = "single",
    options: Mapping[str, Mapping[str, Any]] | None = None,
    workers: int = 2,
    browser: str | None = None,
) -> ExportReport:
    """Write every figure (or `only` these) as `OUT/<name>.<fmt>` plus `OUT/<name>.json` (the data behind
    it, the SQL/analysis and parameters, the lab path and generation), and `OUT/index.json`.

    A figure whose data the lab lacks is skipped with a one-line reason; without a browser no image is
    written, the sidecars still are, and `browser_missing` says what to install. `report.ok` is False
    only when no figure file was written. `options` maps a figure name to its keyword options.
    """
    t0 = time.perf_counter()
    fmts = tuple(dict.fromkeys(f.strip().lower().lstrip(".") for f in formats if f.strip()))
    for f in fmts:
        if f not in EXPORT_FORMATS:
            raise ConfigError(f"unknown format {f!r}; formats: {', '.join(EXPORT_FORMATS)}")
    lab = open_lab(lab)
    results, failed = compute_figures(lab, only, width, options, progress)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = ExportReport(out, lab.root, lab.generation, fmts, width, failed=failed, results=results)
    report.skipped = {n: r.skipped for n, r in results.items() if r.skipped}
    ready = {n: r for n, r in results.items() if not r.skipped}
    report.produced = {n: [] for n in results}
    if ready and fmts:
        report.browser = browser or find_browser()
        if report.browser is None:
            report.browser_missing = _browser_message()
        else:
            jobs = [(r.figure, out / f"{n}.{f}", f) for n, r in ready.items() for f in fmts]
            with (
                tqdm(total=len(jobs), desc="export", unit="file", disable=not progress, leave=False) as bar,
                FigureRenderer(report.browser, workers=workers) as renderer,
            ):
                errors = renderer.write(jobs, width=width, on_done=bar.update)
            for (_, path, _), err in zip(jobs, errors):
                name = path.stem
                if err is None and path.is_file() and path.stat().st_size > 0:
                    report.produced[name].append(path)
                else:
                    report.failed.setdefault(name, f"{path.name}: {type(err).__name__}: {err}")
    for name, res in results.items():
        path = out / f"{name}.json"
        atomic_write_text(path, _sidecar(res, lab.root, lab.generation, report.produced.get(name, [])))
        path.chmod(0o644)
        report.sidecars[name] = path
    report.seconds = time.perf_counter() - t0
    atomic_write_text(out / "index.json", json.dumps(report.to_dict(), indent=2) + "\n").chmod(0o644)
    return report
