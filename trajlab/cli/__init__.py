"""The `trajlab` command line: a thin layer over the library, one module per command group.

Commands are loaded lazily so that `trajlab --help` stays fast and a broken optional dependency
only affects its own command. Typed trajlab errors become one-line messages here and nowhere else.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from .._version import __version__
from ..errors import TrajlabError

# command name -> "module:attribute" under trajlab.cli
COMMANDS: dict[str, str] = {
    "ingest": "ingest:ingest_cmd",
    "formats": "ingest:formats_cmd",
    "schema": "schema:schema_cmd",
    "sql": "sql:sql_cmd",
    "demo": "demo:demo_cmd",
    "examples": "demo:examples_cmd",
    "dag": "dag:dag_group",
    "taxonomy": "taxonomy:taxonomy_group",
    "judge": "judge:judge_group",
    "review": "review:review_cmd",
    "annotations": "review:annotations_group",
    "adjudicate": "review:adjudicate_cmd",
    "agreement": "review:agreement_cmd",
    "propagate": "review:propagate_cmd",
    "gaps": "analysis:gaps_cmd",
    "analyze": "analysis:analyze_cmd",
    "dash": "dashboard:dash_cmd",
    "figures": "figures:figures_cmd",
    "tables": "figures:tables_cmd",
    "distill": "distill:distill_cmd",
    "iterate": "distill:iterate_cmd",
    "skills": "distill:skills_group",
}


def _available(name: str) -> bool:
    module = COMMANDS[name].split(":")[0]
    return importlib.util.find_spec(f"trajlab.cli.{module}") is not None


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n in COMMANDS if _available(n))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None or not _available(name):
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(f"trajlab.cli.{module}"), attr)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except TrajlabError as e:
            click.echo(f"Error: {e}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            # Ctrl-C before a command's own handler (which says what was kept) is in place, e.g. while
            # it plans: 130 as for any interrupted command, not click's "Aborted!" with status 1
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except Exception as e:
            # Last resort for a DuckDB error a library path did not wrap (e.g. a damaged Parquet page met
            # mid-query): the user gets DuckDB's message, not a traceback. duckdb is not imported here
            # (it would slow `trajlab --help`); if it is not loaded, the error cannot be one of its own.
            duckdb = sys.modules.get("duckdb")
            if duckdb is None or not isinstance(e, duckdb.Error):
                raise
            click.echo(f"Error: DuckDB could not read the lab: {e}", err=True)
            ctx.exit(1)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trajlab")
def cli() -> None:
    """Process-level trajectory analysis for AI coding agents.

    Typical flow: ingest runs into a lab, build step DAGs, label failures, then analyse, review,
    distil skills, browse the dashboard and export paper figures. `trajlab demo` runs it all on
    generated example runs.
    """


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="trajlab", standalone_mode=True)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
