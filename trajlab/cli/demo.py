"""`trajlab demo` (the whole pipeline on the example runs) and `trajlab examples` (just the runs)."""

from __future__ import annotations

import click

from ..examples import generate_examples
from ..pipeline import run_demo
from ._output import check_creatable, writing_into


@click.command("demo")
@click.option(
    "--out",
    "-o",
    default="demo-out",
    show_default=True,
    type=click.Path(path_type=str),
    help="Folder for the example runs, the lab and every output.",
)
@click.option(
    "--tasks",
    "n_tasks",
    type=click.IntRange(min=1),
    default=40,
    show_default=True,
    help="Number of example tasks (4 runs each).",
)
@click.option("--seed", default=7, show_default=True)
@click.option("--workers", "-j", type=click.IntRange(min=1), default=None)
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
def demo_cmd(out: str, n_tasks: int, seed: int, workers: int | None, quiet: bool) -> None:
    """Run every trajlab stage on generated example runs and print what each found."""
    check_creatable(out, "--out", folder=True)
    with writing_into(out):
        result = run_demo(
            out, n_tasks=n_tasks, seed=seed, workers=workers, echo=click.echo, progress=not quiet
        )
    click.echo(f"done: outputs in {result.out}")


@click.command("examples")
@click.argument("out", type=click.Path(path_type=str))
@click.option(
    "--tasks", "n_tasks", type=click.IntRange(min=1), default=40, show_default=True, help="Number of tasks."
)
@click.option("--seed", default=7, show_default=True)
@click.option(
    "--runs-per-task",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Runs per task without skills (plus one with).",
)
def examples_cmd(out: str, n_tasks: int, seed: int, runs_per_task: int) -> None:
    """Generate the example run set (Codex, Claude Code and ATIF runs with planted failure causes) in OUT."""
    check_creatable(out, "OUT", folder=True)
    with writing_into(out):
        try:
            r = generate_examples(out, n_tasks=n_tasks, seed=seed, runs_per_task=runs_per_task)
        except FileExistsError as e:
            raise click.ClickException(str(e)) from None
    click.echo(
        f"{r.runs} runs ({r.successes} successes, {r.failures} failures) in {r.runs_dir}; ground truth in {r.out}/ground_truth.jsonl"
    )
