"""`trajlab figures` and `trajlab tables`: the paper figure set and its tables (trajlab.figures)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import ConfigError
from ._output import check_creatable, check_outside_lab, writing_into

F = TypeVar("F", bound=Callable[..., Any])


def _options(items: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """`-p tool_gaps.by=domain -p exemplar_dag.trajectory_id=t_ab` -> {figure: {option: value}}."""
    from ..analysis import parse_value

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        name, dot, opt = key.strip().partition(".")
        if not sep or not dot or not name or not opt:
            raise ConfigError(
                f"option {item!r} must look like FIGURE.OPTION=VALUE (e.g. tool_gaps.by=domain)"
            )
        out.setdefault(name, {})[opt.strip()] = parse_value(value)
    return out


def _formats(formats: str, known: str) -> list[str]:
    names = [f.strip() for f in formats.split(",") if f.strip()]
    if not names:
        raise ConfigError(f"--format {formats!r}: give at least one of {known}")
    return names


def _out_dir(out: Path, lab: Path) -> None:
    """--out must be a folder that can be made, and not the lab or one of its own folders."""
    check_creatable(out, "--out", folder=True)
    check_outside_lab(out, lab)


def _only(only: tuple[str, ...]) -> list[str] | None:
    names = [n.strip() for item in only for n in item.split(",") if n.strip()]
    return names or None


_COMMON = [
    click.option("--only", multiple=True, help="Only these figures (repeat or comma-separate)."),
    click.option(
        "-p",
        "--option",
        "options",
        multiple=True,
        metavar="FIGURE.OPTION=VALUE",
        help="A figure option, e.g. -p tool_gaps.by=domain -p failure_distribution.source=judge,gold.",
    ),
]


def _common(fn: F) -> F:
    for deco in reversed(_COMMON):
        fn = deco(fn)
    return fn


@click.command("figures")
@click.argument("lab", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), help="Output folder.")
@click.option(
    "--format",
    "formats",
    default="pdf,png,svg",
    show_default=True,
    help="Comma-separated: pdf, png, svg.",
)
@click.option(
    "--width",
    type=click.Choice(["single", "double"]),
    default="single",
    show_default=True,
    help="Column width: single (3.5 in) or double (7.16 in).",
)
@_common
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Browser tabs rendering at once.",
)
@click.option("--list", "list_", is_flag=True, help="List the figures and their options, then exit.")
@click.option("--no-progress", is_flag=True, help="No progress bars.")
def figures_cmd(
    lab: Path | None,
    out: Path | None,
    formats: str,
    width: str,
    only: tuple[str, ...],
    options: tuple[str, ...],
    workers: int,
    list_: bool,
    no_progress: bool,
) -> None:
    """Export the paper figures of LAB as PDF/PNG/SVG, each with a sidecar JSON of its data and provenance.

    Uses the system Chromium through one kaleido server (BROWSER_PATH overrides; nothing is
    downloaded). A figure whose data the lab lacks is skipped with its reason; the exit status is 1
    only when no figure could be produced.
    """
    from ..figures import describe_figures, export_figures

    if list_:
        for f in describe_figures():
            opts = ", ".join(f"{k}={v!r}" for k, v in f["options"].items())
            click.echo(f"{f['name']}: {f['summary']}\n    options: {opts}")
        return
    if lab is None or out is None:
        raise click.UsageError("give LAB and --out DIR (or --list)")
    fmts = _formats(formats, "pdf, png, svg")
    _out_dir(out, lab)
    with writing_into(out):
        report = export_figures(
            lab,
            out,
            formats=fmts,
            only=_only(only),
            progress=not no_progress,
            width=width,
            options=_options(options),
            workers=workers,
        )
    click.echo(report.format())
    if report.browser_missing:
        click.echo(f"Error: {report.browser_missing}", err=True)
    if not report.ok:
        click.echo("Error: no figure could be produced", err=True)
        raise SystemExit(report.exit_code)


@click.command("tables")
@click.argument("lab", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder."
)
@click.option(
    "--format",
    "formats",
    default="latex,markdown",
    show_default=True,
    help="Comma-separated: latex (booktabs), markdown.",
)
@_common
@click.option("--json", "as_json", is_flag=True, help="Print the written paths as JSON.")
def tables_cmd(
    lab: Path, out: Path, formats: str, only: tuple[str, ...], options: tuple[str, ...], as_json: bool
) -> None:
    """Write the numbers behind every figure of LAB as LaTeX (booktabs) and Markdown tables."""
    from ..figures import export_tables

    fmts = _formats(formats, "latex, markdown")
    _out_dir(out, lab)
    with writing_into(out):
        paths = export_tables(
            lab,
            out,
            only=_only(only),
            formats=fmts,
            options=_options(options),
        )
    if as_json:
        click.echo(json.dumps([str(p) for p in paths]))
        return
    for p in paths:
        click.echo(str(p))
    skipped = (
        (out / "tables.md").read_text(encoding="utf-8").count("` skipped:")
        if (out / "tables.md").exists()
        else 0
    )
    click.echo(
        f"{len(paths)} files in {out}" + (f" ({skipped} figures skipped: see tables.md)" if skipped else "")
    )
