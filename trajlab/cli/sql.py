"""`trajlab sql`: read-only DuckDB SQL over a lab."""

from __future__ import annotations

from typing import IO, Any

import click

from .. import tabular
from ..analysis import connection
from ..store import fetch_arrow, run_readonly, view_names
from ._output import check_outside_lab, write_out


@click.command("sql")
@click.argument("lab", type=click.Path(path_type=str))
@click.argument("query", required=False)
@click.option("--file", "-f", "sql_file", type=click.File("r"), help="Read the query from a file.")
@click.option("--format", "fmt", type=click.Choice(tabular.FORMATS), default="table", show_default=True)
@click.option("--out", "-o", type=click.Path(path_type=str), help="Write the result to a file instead.")
@click.option(
    "--max-rows",
    type=click.IntRange(min=0),
    default=200,
    show_default=True,
    help="Rows shown in table/markdown output.",
)
@click.option("--views", is_flag=True, help="List the views available and exit.")
def sql_cmd(
    lab: str,
    query: str | None,
    sql_file: IO[Any] | None,
    fmt: str,
    out: str | None,
    max_rows: int,
    views: bool,
) -> None:
    """Run a read-only SQL QUERY over the views of LAB (trajectories, steps, tool_calls, ...)."""
    if out:
        check_outside_lab(out, lab)
    # the analysis connection: the table views plus tool_calls, step_capability and tool_usage
    con = connection(lab)
    if views:
        click.echo("\n".join(view_names(con)))
        return
    if sql_file is not None:
        try:
            query = sql_file.read()
        except UnicodeDecodeError as e:
            raise click.BadParameter(
                f"{sql_file.name}: not UTF-8 text ({e.reason} at byte {e.start})", param_hint="'--file'"
            ) from None
    if not query:
        raise click.UsageError("give a QUERY or --file")
    result = fetch_arrow(run_readonly(con, query))
    if out:
        write_out(out, lambda: tabular.write(result, out, None if fmt == "table" else fmt), lab)
        click.echo(f"wrote {result.num_rows} rows to {out}")
        return
    if fmt == "parquet":
        raise click.UsageError("--format parquet needs --out")
    text = tabular.render(result, fmt, max_rows=max_rows if fmt in ("table", "markdown") else None)
    click.echo(text, nl=not text.endswith("\n"))
