"""`trajlab ingest` and `trajlab formats`."""

from __future__ import annotations

import os

import click

from ..formats import adapters, load_errors
from ..fsutil import path_text
from ..ingest import IngestInterrupted, ingest


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option(
    "--out",
    "-o",
    "out",
    required=True,
    type=click.Path(path_type=str),
    help="Lab folder (created if missing).",
)
@click.option(
    "--workers",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: number of CPUs, at most 8).",
)
@click.option("--benchmark", default=None, help="Benchmark name for runs that do not record one.")
@click.option("--split", default=None, help="Split for these runs: train, calibration, eval, heldout.")
@click.option("--condition", default=None, help="Experimental condition, e.g. no-skill or skill:log.")
@click.option("--tag", "tags", multiple=True, help="Tag added to every trajectory (repeatable).")
@click.option(
    "--meta",
    "meta_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="JSONL sidecar with task ids, outcomes, splits per run (see docs); trajlab-meta.jsonl files are found automatically.",
)
@click.option("--force", is_flag=True, help="Re-read files even when they are unchanged.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def ingest_cmd(
    paths: tuple[str, ...],
    out: str,
    workers: int | None,
    benchmark: str | None,
    split: str | None,
    condition: str | None,
    tags: tuple[str, ...],
    meta_files: tuple[str, ...],
    force: bool,
    quiet: bool,
) -> None:
    """Ingest trajectory files and folders from any supported runner into the lab OUT.

    Walks folders, detects each file's format, skips files that have not changed since the last
    ingest, quarantines bad records with their file and line, and commits atomically. Prints a
    summary per runner and the invariant records seen = ingested + quarantined.
    """
    for problem in load_errors():
        click.echo(f"warning: {problem}", err=True)
    defaults = {"benchmark": benchmark, "split": split, "condition": condition, "tags": list(tags)}
    try:
        report = ingest(
            list(paths),
            out,
            workers=workers,
            defaults=defaults,
            progress=not quiet,
            force=force,
            meta_files=list(meta_files),
        )
    except IngestInterrupted as e:  # Ctrl-C: say what was kept, not just "Aborted!"
        click.echo(e.format(), err=True)
        raise SystemExit(130) from None
    click.echo(report.format())
    if report.missing and len(report.missing) == len(paths):
        raise click.ClickException("none of the input paths exist")
    given = {path_text(os.path.normpath(os.path.abspath(os.path.expanduser(p)))) for p in paths}
    if given and given <= {p for p, _ in report.unreadable} | set(report.missing):
        raise click.ClickException("none of the input paths is a regular file or a folder")


@click.command("formats")
def formats_cmd() -> None:
    """List the trajectory formats trajlab recognises."""
    for a in adapters():
        click.echo(f"{a.name:<24} {a.runner:<16} {','.join(a.extensions):<14} {a.description}")
