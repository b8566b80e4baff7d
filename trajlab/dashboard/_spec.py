"""Dashboard definitions as data: `dashboards/*.yaml` pages, their filters and panels.

A file holds one page (a mapping) or several (`pages: [...]`). Every problem is an `InputFileError`
naming the file, the line and the field (`pages[1].panels[0].figure: unknown figure 'x' ...`).
A page id defined again in a later folder replaces the earlier one, so a user's `dashboards/` can
override a shipped page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import duckdb
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError, InputFileError
from ..store import statement_name
from ._runs import DEFAULT_COLUMNS, DEFAULT_FILTERS, MAX_PAGE_SIZE, RUN_COLUMNS, RUN_FILTERS

IDENT = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
RESERVED_PATHS = ("/trajectory", "/_dash", "/assets")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FilterSpec(_Model):
    """A page filter: a dropdown whose value reaches the page's SQL as the parameter `$id`."""

    id: str = Field(description="Parameter name used in the SQL as `$id`.")
    label: str | None = Field(None, description="Shown above the dropdown (default: the id).")
    options: list[str] | None = Field(None, description="Fixed choices.")
    options_from: str | None = Field(
        None, description=f"Take the choices from a runs column: {', '.join(RUN_FILTERS)}."
    )
    options_sql: str | None = Field(
        None, description="A read-only query whose first column gives the choices."
    )
    multi: bool = Field(False, description="Several choices at once (the parameter is then a list).")
    default: str | list[str] | None = Field(None, description="Initial choice(s); empty means NULL.")

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", v):
            raise ValueError("must be a SQL parameter name (letters, digits, underscore)")
        return v

    @field_validator("options_from")
    @classmethod
    def _from(cls, v: str | None) -> str | None:
        if v is not None and v not in RUN_FILTERS:
            raise ValueError(f"unknown runs column {v!r}; use one of {', '.join(RUN_FILTERS)}")
        return v

    @model_validator(mode="after")
    def _one_source(self) -> FilterSpec:
        given = [k for k in ("options", "options_from", "options_sql") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of options, options_from, options_sql")
        return self


class RunsPanel(_Model):
    """The trajectory table with its filters, summary counts and server-side paging."""

    kind: Literal["runs"]
    title: str | None = None
    page_size: int = Field(25, ge=1, le=MAX_PAGE_SIZE)
    filters: list[str] = Field(default_factory=lambda: list(DEFAULT_FILTERS))
    columns: list[str] = Field(default_factory=lambda: list(DEFAULT_COLUMNS))
    preset: dict[str, list[str]] = Field(
        default_factory=dict, description="Filter values selected when the page opens."
    )
    sort: str = "started_at"
    descending: bool = True
    search: bool = Field(True, description="Offer a text search over task and ids.")

    @field_validator("filters")
    @classmethod
    def _filters(cls, v: list[str]) -> list[str]:
        bad = [f for f in v if f not in RUN_FILTERS]
        if bad:
            raise ValueError(f"unknown filter(s) {', '.join(bad)}; known: {', '.join(RUN_FILTERS)}")
        return v

    @field_validator("columns")
    @classmethod
    def _columns(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if c not in RUN_COLUMNS]
        if bad:
            raise ValueError(f"unknown column(s) {', '.join(bad)}; known: {', '.join(RUN_COLUMNS)}")
        return v

    @field_validator("sort")
    @classmethod
    def _sort(cls, v: str) -> str:
        if v not in RUN_COLUMNS:
            raise ValueError(f"unknown column {v!r}; known: {', '.join(RUN_COLUMNS)}")
        return v

    @field_validator("preset")
    @classmethod
    def _preset(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        bad = [f for f in v if f not in RUN_FILTERS]
        if bad:
            raise ValueError(f"unknown filter(s) {', '.join(bad)}; known: {', '.join(RUN_FILTERS)}")
        return v


class SqlPanel(_Model):
    """A read-only query over the lab's views (and `runs`), shown as a table, a chart or a number."""

    kind: Literal["sql"]
    title: str | None = None
    sql: str
    display: Literal["table", "bar", "line", "scatter", "number"] = "table"
    x: str | None = None
    y: str | None = None
    color: str | None = None
    page_size: int = Field(20, ge=1, le=MAX_PAGE_SIZE)
    description: str | None = None

    @model_validator(mode="after")
    def _axes(self) -> SqlPanel:
        if self.display in ("bar", "line", "scatter") and (not self.x or not self.y):
            raise ValueError(f"display {self.display!r} needs x and y (column names of the query)")
        return self


class FigurePanel(_Model):
    """A figure from `trajlab.figures` (the same function the paper uses), with its plotted data."""

    kind: Literal["figure"]
    figure: str
    title: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    controls: dict[str, list[Any]] = Field(
        default_factory=dict, description="Options the viewer may change, with their choices."
    )
    show_data: bool = True

    @model_validator(mode="after")
    def _known(self) -> FigurePanel:
        from ..figures import FIGURES, figure_options

        if self.figure not in FIGURES:
            raise ValueError(f"unknown figure {self.figure!r}; figures: {', '.join(FIGURES)}")
        allowed = figure_options(self.figure)
        bad = [k for k in [*self.options, *self.controls] if k not in allowed]
        if bad:
            raise ValueError(
                f"figure {self.figure!r} has no option(s) {', '.join(bad)}; options: {', '.join(allowed)}"
            )
        for k, choices in self.controls.items():
            if not choices:
                raise ValueError(f"controls.{k}: give at least one choice")
        return self


class AnalysisPanel(_Model):
    """A `trajlab.analysis` result table (with its SQL and what the lab is missing)."""

    kind: Literal["analysis"]
    analysis: str
    title: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    page_size: int = Field(20, ge=1, le=MAX_PAGE_SIZE)

    @model_validator(mode="after")
    def _known(self) -> AnalysisPanel:
        import inspect

        from .. import analysis

        if self.analysis not in analysis.ANALYSES:
            raise ValueError(f"unknown analysis {self.analysis!r}; analyses: {', '.join(analysis.ANALYSES)}")
        fn = getattr(analysis, analysis.ANALYSES[self.analysis])
        allowed = [p for p in list(inspect.signature(fn).parameters)[1:] if p != "progress"]
        bad = [k for k in self.options if k not in allowed]
        if bad:
            raise ValueError(
                f"analysis {self.analysis!r} has no option(s) {', '.join(bad)}; options: {', '.join(allowed)}"
            )
        return self


class AgreementPanel(_Model):
    """Agreement statistics between judges and reviewers (live from the annotation files)."""

    kind: Literal["agreement"]
    title: str | None = None
    k: int = Field(1, ge=0, le=100, description="Decisive steps within +-k count as agreeing.")


class QueuePanel(_Model):
    """The review queue of the current reviewer, highest priority first."""

    kind: Literal["queue"]
    title: str | None = None
    limit: int = Field(200, ge=1, le=5000)


class MarkdownPanel(_Model):
    """Explanatory text written by the dashboard's author (Markdown, raw HTML disabled)."""

    kind: Literal["markdown"]
    text: str


Panel = RunsPanel | SqlPanel | FigurePanel | AnalysisPanel | AgreementPanel | QueuePanel | MarkdownPanel
PANEL_KINDS: dict[str, type[_Model]] = {
    "runs": RunsPanel,
    "sql": SqlPanel,
    "figure": FigurePanel,
    "analysis": AnalysisPanel,
    "agreement": AgreementPanel,
    "queue": QueuePanel,
    "markdown": MarkdownPanel,
}


class PageSpec(_Model):
    """One page of the dashboard."""

    id: str
    title: str
    path: str
    order: int = 100
    description: str | None = None
    filters: list[FilterSpec] = Field(default_factory=list)
    panels: list[Any] = Field(min_length=1)
    source: str = Field("", description="File the page was defined in (filled in by the loader).")

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not IDENT.match(v):
            raise ValueError("use 1-64 lowercase letters, digits, '-' or '_', starting with a letter")
        return v

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not re.match(r"^/[A-Za-z0-9/_-]*$", v):
            raise ValueError("must start with '/' and use letters, digits, '/', '-', '_'")
        if any(v == r or v.startswith(r + "/") for r in RESERVED_PATHS):
            raise ValueError(f"{v!r} is reserved (used by the app: {', '.join(RESERVED_PATHS)})")
        return v.rstrip("/") or "/"


class DashboardSpec(_Model):
    """Every page the app serves, in menu order."""

    pages: list[PageSpec]

    def page(self, page_id: str) -> PageSpec:
        for p in self.pages:
            if p.id == page_id:
                return p
        raise KeyError(page_id)

    def by_path(self, path: str) -> PageSpec | None:
        path = path.rstrip("/") or "/"
        return next((p for p in self.pages if p.path == path), None)


# -- loading ----------------------------------------------------------------------------------------


def _line_map(text: str) -> dict[tuple[Any, ...], int]:
    """YAML path -> 1-based line of its value, for error messages."""
    out: dict[tuple[Any, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[Any, ...]) -> None:
        out[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = k.value if isinstance(k, yaml.ScalarNode) else str(k)
                out[(*path, key)] = k.start_mark.line + 1
                walk(v, (*path, key))
                out[(*path, key)] = k.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, (*path, i))

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return out
    if root is not None:
        walk(root, ())
    return out


def _where(loc: Sequence[Any]) -> str:
    s = ""
    for part in loc:
        s += f"[{part}]" if isinstance(part, int) else (f".{part}" if s else str(part))
    return s or "(top level)"


def _line_for(lines: dict[tuple[Any, ...], int], loc: Sequence[Any]) -> int | None:
    loc = tuple(loc)
    while loc:
        if loc in lines:
            return lines[loc]
        loc = loc[:-1]
    return lines.get(())


def _fail(path: Path, lines: dict[tuple[Any, ...], int], loc: Sequence[Any], msg: str) -> InputFileError:
    return InputFileError(str(path), f"{_where(loc)}: {msg}", _line_for(lines, loc))


def _validation_error(
    path: Path, lines: dict[tuple[Any, ...], int], base: Sequence[Any], e: ValidationError
) -> InputFileError:
    msgs = []
    first_loc: tuple[Any, ...] = tuple(base)
    for i, err in enumerate(e.errors()):
        loc = (*base, *[p for p in err["loc"] if p != "__root__"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        msgs.append(f"{_where(loc)}: {msg}")
        if i == 0:
            first_loc = loc
    return InputFileError(str(path), "; ".join(msgs), _line_for(lines, first_loc))


def check_sql(sql: str) -> list[str]:
    """Parse a query (without running it): one read-only statement; returns its `$parameters`."""
    con = duckdb.connect(":memory:")
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise ValueError(f"SQL does not parse: {str(e).splitlines()[0]}") from None
    finally:
        con.close()
    if len(statements) != 1:
        raise ValueError(f"give exactly one SQL statement (got {len(statements)})")
    kind = str(statements[0].type).rsplit(".", 1)[-1]
    if kind not in ("SELECT",):
        raise ValueError(f"only SELECT queries are allowed (got {statement_name(kind)})")
    return sorted(set(PARAM.findall(sql)))


def _parse_page(raw: Any, path: Path, lines: dict[tuple[Any, ...], int], base: tuple[Any, ...]) -> PageSpec:
    if not isinstance(raw, dict):
        raise _fail(path, lines, base, "a page must be a mapping (id, title, path, panels, ...)")
    try:
        page = PageSpec.model_validate({**raw, "source": str(path)})
    except ValidationError as e:
        raise _validation_error(path, lines, base, e) from None
    panels = []
    for i, p in enumerate(page.panels):
        loc = (*base, "panels", i)
        if not isinstance(p, dict):
            raise _fail(path, lines, loc, "a panel must be a mapping with a `kind`")
        kind = p.get("kind")
        model = PANEL_KINDS.get(kind) if isinstance(kind, str) else None
        if model is None:
            raise _fail(
                path, lines, (*loc, "kind"), f"unknown panel kind {kind!r}; kinds: {', '.join(PANEL_KINDS)}"
            )
        try:
            panel = model.model_validate(p)
        except ValidationError as e:
            raise _validation_error(path, lines, loc, e) from None
        except ConfigError as e:  # figures/analysis import problems
            raise _fail(path, lines, loc, str(e)) from None
        panels.append(panel)
    if sum(isinstance(p, RunsPanel) for p in panels) > 1:
        raise _fail(path, lines, (*base, "panels"), "a page can hold at most one runs panel")
    declared = {f.id for f in page.filters}
    seen: set[str] = set()
    for i, f in enumerate(page.filters):
        if f.id in seen:
            raise _fail(path, lines, (*base, "filters", i, "id"), f"filter {f.id!r} is defined twice")
        seen.add(f.id)
        if f.options_sql is not None:
            try:
                check_sql(f.options_sql)
            except ValueError as e:
                raise _fail(path, lines, (*base, "filters", i, "options_sql"), str(e)) from None
    for i, panel in enumerate(panels):
        if isinstance(panel, SqlPanel):
            try:
                params = check_sql(panel.sql)
            except ValueError as e:
                raise _fail(path, lines, (*base, "panels", i, "sql"), str(e)) from None
            unknown = [p for p in params if p not in declared]
            if unknown:
                raise _fail(
                    path,
                    lines,
                    (*base, "panels", i, "sql"),
                    f"parameter(s) {', '.join('$' + p for p in unknown)} are not filters of this page "
                    f"(declared: {', '.join(sorted(declared)) or 'none'})",
                )
    return page.model_copy(update={"panels": panels})


def load_file(path: str | Path) -> list[PageSpec]:
    """The pages defined in one YAML file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputFileError(str(path), f"cannot read: {e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputFileError(
            str(path), f"not valid YAML: {getattr(e, 'problem', e)}", mark.line + 1 if mark else None
        ) from None
    lines = _line_map(text)
    if data is None:
        raise InputFileError(str(path), "empty file: define a page (id, title, path, panels)")
    if isinstance(data, dict) and "pages" in data:
        extra = set(data) - {"pages"}
        if extra:
            raise _fail(
                path, lines, (sorted(extra)[0],), "unknown field (a file with `pages:` holds only that)"
            )
        if not isinstance(data["pages"], list) or not data["pages"]:
            raise _fail(path, lines, ("pages",), "must be a non-empty list of pages")
        return [_parse_page(p, path, lines, ("pages", i)) for i, p in enumerate(data["pages"])]
    return [_parse_page(data, path, lines, ())]


PAGES_DIR = (Path(__file__).parent / "pages").resolve()  # error messages name the file users edit


def default_dirs() -> list[Path]:
    """The shipped page definitions: `trajlab/dashboard/pages`, installed with the package. In a source
    checkout it is a link to the repository's `dashboards/` folder, the copy users edit and version."""
    return [PAGES_DIR] if PAGES_DIR.is_dir() else []


def load_dashboards(dirs: Iterable[str | Path] | None = None, include_defaults: bool = True) -> DashboardSpec:
    """Every page of the given folders (or files), later ones overriding earlier pages with the same id."""
    sources: list[Path] = (default_dirs() if include_defaults else []) + [Path(d) for d in dirs or []]
    pages: dict[str, PageSpec] = {}
    for src in sources:
        if src.is_file():
            files = [src]
        elif src.is_dir():
            files = sorted([*src.glob("*.yaml"), *src.glob("*.yml")])
        else:
            raise ConfigError(f"{src}: no such dashboards folder or file")
        for f in files:
            for page in load_file(f):
                pages[page.id] = page
    if not pages:
        raise ConfigError(
            "no dashboard pages found (looked in: "
            + (", ".join(str(s) for s in sources) or "no folder")
            + "); pass --dashboards DIR with *.yaml page definitions"
        )
    by_path: dict[str, PageSpec] = {}
    for p in pages.values():
        if p.path in by_path:
            other = by_path[p.path]
            raise InputFileError(
                p.source,
                f"path {p.path!r} of page {p.id!r} is already used by page {other.id!r} ({other.source})",
            )
        by_path[p.path] = p
    return DashboardSpec(pages=sorted(pages.values(), key=lambda p: (p.order, p.title)))
