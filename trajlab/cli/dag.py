"""`trajlab dag`: build step DAGs (the default), show one as a tree, export one for other tools."""

from __future__ import annotations

import click

from ..dag import EXPORT_FORMATS, DagInterrupted, build_lab, export, load_dag, read_steps, render_text
from ..errors import LabError
from ..fsutil import atomic_write_text
from ..store import Lab
from ._output import check_outside_lab, write_out


class _DefaultBuild(click.Group):
    """`trajlab dag LAB` means `trajlab dag build LAB`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["build", *args]
        return super().parse_args(ctx, args)


@click.group("dag", cls=_DefaultBuild)
def dag_group() -> None:
    """Step DAGs: `trajlab dag LAB` builds them (same as `trajlab dag build LAB`)."""


@dag_group.command("build")
@click.argument("lab", type=click.Path(path_type=str))
@click.option("--rebuild", is_flag=True, help="Rebuild every DAG, not only missing or outdated ones.")
@click.option(
    "--traj", "trajectories", multiple=True, help="Only this trajectory (id or unique id prefix; repeatable)."
)
@click.option(
    "--workers",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: number of CPUs, at most 4; small labs build in one process).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def build_cmd(
    lab: str, rebuild: bool, trajectories: tuple[str, ...], workers: int | None, quiet: bool
) -> None:
    """Build and store the step DAGs of the lab's trajectories (incremental)."""
    opened = Lab.open(lab)
    if not opened.rows("trajectories"):
        raise LabError(
            f"no trajectories in {opened.root}: nothing to build (ingest runs first: "
            f"`trajlab ingest PATH --out {lab}`)"
        )
    try:
        report = build_lab(
            opened, list(trajectories) or None, rebuild=rebuild, progress=not quiet, workers=workers
        )
    except DagInterrupted as e:  # Ctrl-C: say what was kept, not just "Aborted!"
        click.echo(e.report.format())
        click.echo(
            f"interrupted: the {e.report.built} DAGs of {e.report.commits} committed transactions are kept; "
            f"run `trajlab dag {lab}` again to build the rest",
            err=True,
        )
        raise SystemExit(130) from None
    click.echo(report.format())
    if report.failed:
        raise click.exceptions.Exit(1)


@dag_group.command("show")
@click.argument("lab", type=click.Path(path_type=str))
@click.argument("trajectory")
@click.option(
    "--max-output",
    type=click.IntRange(min=0),
    default=120,
    show_default=True,
    help="Characters of output per step (0: none).",
)
def show_cmd(lab: str, trajectory: str, max_output: int) -> None:
    """Print a trajectory's DAG as an indented tree with statuses (TRAJECTORY may be an id prefix)."""
    dag = load_dag(lab, trajectory)
    steps = read_steps(lab, dag.trajectory_id) if max_output > 0 else None
    click.echo(render_text(dag, steps, max_output=max_output), nl=False)


@dag_group.command("export")
@click.argument("lab", type=click.Path(path_type=str))
@click.argument("trajectory")
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), default="json", show_default=True)
@click.option(
    "--out",
    "-o",
    type=click.Path(dir_okay=False, path_type=str),
    help="Write to this file instead of stdout.",
)
def export_cmd(lab: str, trajectory: str, fmt: str, out: str | None) -> None:
    """Write a trajectory's DAG as JSON, GraphML or Graphviz DOT."""
    if out:
        check_outside_lab(out, lab)
    text = export(load_dag(lab, trajectory), fmt)
    if out:
        write_out(out, lambda: atomic_write_text(out, text), lab)
        click.echo(f"wrote {out}", err=True)
    else:
        click.echo(text, nl=False)
