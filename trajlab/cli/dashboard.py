"""`trajlab dash LAB`: serve the dashboard (127.0.0.1 unless told otherwise)."""

from __future__ import annotations

import os

import click

from ..review._taxo import DEFAULT_TAXONOMY

ANNOTATIONS_ENV = "TRAJLAB_ANNOTATIONS"
DASHBOARDS_ENV = "TRAJLAB_DASHBOARDS"


@click.command("dash")
@click.argument("lab", type=click.Path(path_type=str))
@click.option("--port", "-p", type=int, default=8050, show_default=True, help="Port (0 picks a free one).")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to bind. Anything but a loopback address exposes the lab (and review) to the network.",
)
@click.option(
    "--annotations",
    "annotations_dir",
    default=lambda: os.environ.get(ANNOTATIONS_ENV, "annotations"),
    show_default="annotations (or $TRAJLAB_ANNOTATIONS)",
    type=click.Path(file_okay=False, path_type=str),
    help="Root folder of the annotation files the review panel appends to.",
)
@click.option("--dataset", "-d", default="default", show_default=True, help="Annotation dataset.")
@click.option("--taxonomy", "-t", default=DEFAULT_TAXONOMY, show_default=True, help="Taxonomy id or file.")
@click.option(
    "--dashboards",
    "dashboards",
    multiple=True,
    type=click.Path(exists=True, path_type=str),
    help="Folder (or file) of page definitions (*.yaml), added to the shipped pages; repeatable. "
    "Also $TRAJLAB_DASHBOARDS (colon-separated).",
)
@click.option("--no-default-pages", is_flag=True, help="Serve only the pages of --dashboards.")
@click.option("--annotator", "-a", default=None, help="Reviewer name filled in (else typed in the app).")
@click.option("--blind", is_flag=True, help="Blind review: judge labels hidden.")
@click.option("--reviewers", "-n", type=int, default=1, show_default=True, help="Reviewers wanted per item.")
@click.option("--show-secrets", is_flag=True, help="Do not redact secrets in displayed trajectory text.")
@click.option("--open", "open_browser", is_flag=True, help="Open the dashboard in the default browser.")
@click.option(
    "--check",
    is_flag=True,
    help="Validate the lab and the page definitions, render every panel and the trajectory page of the "
    "longest failed run on the server, print the results and exit (status 1 if a panel fails).",
)
def dash_cmd(
    lab: str,
    port: int,
    host: str,
    annotations_dir: str,
    dataset: str,
    taxonomy: str,
    dashboards: tuple[str, ...],
    no_default_pages: bool,
    annotator: str | None,
    blind: bool,
    reviewers: int,
    show_secrets: bool,
    open_browser: bool,
    check: bool,
) -> None:
    """Serve the dashboard for LAB: runs, trajectory DAGs, step inspector, review, analyses.

    Reviews are appended to ANNOTATIONS/DATASET/<reviewer>.jsonl through trajlab.review; the lab is
    only read. Pages come from the shipped dashboards/ folder plus --dashboards.
    """
    from ..dashboard import DashboardServer, create_app, is_loopback

    extra = [
        *(os.environ.get(DASHBOARDS_ENV, "").split(os.pathsep) if os.environ.get(DASHBOARDS_ENV) else []),
        *dashboards,
    ]
    app = create_app(
        lab,
        annotations=annotations_dir,
        dataset=dataset,
        taxonomy=taxonomy,
        dashboards=[d for d in extra if d],
        default_pages=not no_default_pages,
        annotator=annotator,
        blind=blind,
        reviewers=reviewers,
        redact=not show_secrets,
    )
    ctx = app.trajlab
    snap = ctx.source.snapshot()
    n = snap.cursor().execute("SELECT count(*) FROM runs").fetchone()[0]
    click.echo(f"lab {ctx.source.lab.root}: {n:,} trajectories (runs index built in {snap.built_s:.2f}s)")
    click.echo("pages: " + ", ".join(f"{p.title} ({p.path})" for p in ctx.spec.pages))
    if check:
        from ..dashboard import check_pages

        results = check_pages(ctx)
        for r in results:
            click.echo(("  " if r.ok else "! ") + r.line())
        bad = [r for r in results if not r.ok]
        if bad:
            raise click.ClickException(f"{len(bad)} of {len(results)} panels failed to render")
        click.echo(f"all {len(results)} panels rendered")
        return
    if not is_loopback(host):
        click.echo(
            f"warning: binding {host}: anyone who can reach this machine can read the lab's trajectories "
            "and write reviews (there is no authentication)",
            err=True,
        )
    srv = DashboardServer(app, host, port)
    click.echo(f"reviews go to {ctx.source.store.folder}/<reviewer>.jsonl")
    click.echo(f"dashboard at {srv.url}  (Ctrl-C to stop)")
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(0.5, lambda: webbrowser.open(srv.url)).start()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
