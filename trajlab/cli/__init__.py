"""The `trajlab` command line: a thin layer over the library, one module per command group.

Commands are loaded lazily so that `trajlab --help` stays fast and a broken optional dependency
only affects its own command. Typed trajlab errors become one-line messages here and nowhere else.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from .._version import __version__
from ..errors import TrajlabError

# command name -> ("module:attribute" under trajlab.cli, the one-line summary `trajlab --help` lists).
# The summaries are kept here so that the listing imports no command module; a test checks that each
# is its command's own first help sentence.
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": (
        "ingest:ingest_cmd",
        "Ingest trajectory files and folders from any supported runner into the lab OUT.",
    ),
    "formats": ("ingest:formats_cmd", "List the trajectory formats trajlab recognises."),
    "schema": ("schema:schema_cmd", "Print the versioned lab schema (all tables, or one TABLE)."),
    "sql": (
        "sql:sql_cmd",
        "Run a read-only SQL QUERY over the views of LAB (trajectories, steps, tool_calls, ...).",
    ),
    "demo": ("demo:demo_cmd", "Run every trajlab stage on generated example runs and print what each found."),
    "examples": (
        "demo:examples_cmd",
        "Generate the example run set (Codex, Claude Code and ATIF runs with planted failure causes) in OUT.",
    ),
    "dag": ("dag:dag_group", "Step DAGs: `trajlab dag LAB` builds them (same as `trajlab dag build LAB`)."),
    "taxonomy": (
        "taxonomy:taxonomy_group",
        "Failure taxonomies: YAML files of categories, decision rules, examples and signals.",
    ),
    "judge": (
        "judge:judge_group",
        "Label failed trajectories with a failure category, decisive step and evidence.",
    ),
    "review": (
        "review:review_cmd",
        "Review judge labels of LAB in the terminal: one key to accept or pick a category, then a note.",
    ),
    "annotations": (
        "review:annotations_group",
        "Check and load the human annotation files (annotations/<dataset>/<annotator>.jsonl).",
    ),
    "adjudicate": (
        "review:adjudicate_cmd",
        "Load the dataset's labels, resolve disagreements and write gold_labels.",
    ),
    "agreement": (
        "review:agreement_cmd",
        "Agreement of judges and human reviewers: kappas, alpha, per category, decisive steps, confusion.",
    ),
    "propagate": (
        "review:propagate_cmd",
        "Train on reviewed labels, report cross-validated accuracy, predict unreviewed failures.",
    ),
    "gaps": (
        "analysis:gaps_cmd",
        "Tools over-represented in successful vs failed trajectories of LAB, with intervals and tests.",
    ),
    "analyze": (
        "analysis:analyze_cmd",
        "Run the analysis NAME over LAB: gaps, capability, tokens, failures, funnel, recovery, tools, ...",
    ),
    "dash": (
        "dashboard:dash_cmd",
        "Serve the dashboard for LAB: runs, trajectory DAGs, step inspector, review, analyses.",
    ),
    "figures": (
        "figures:figures_cmd",
        "Export the paper figures of LAB as PDF/PNG/SVG, each with a sidecar JSON of its data and provenance.",
    ),
    "tables": (
        "figures:tables_cmd",
        "Write the numbers behind every figure of LAB as LaTeX (booktabs) and Markdown tables.",
    ),
    "distill": (
        "distill:distill_cmd",
        "Distil skills from successful vs failed runs (log-driven self-distillation).",
    ),
    "iterate": (
        "distill:iterate_cmd",
        "Improve a skill by calibration-set self-iteration (resumable: rerun the same command).",
    ),
    "skills": ("distill:skills_group", "Validate, scaffold, install and compare skills."),
}


def _available(name: str) -> bool:
    module = COMMANDS[name][0].split(":")[0]
    return importlib.util.find_spec(f"trajlab.cli.{module}") is not None


def _short(summary: str, limit: int) -> str:
    """The summary cut at a word to `limit` characters, with "..." as click shortens help."""
    if len(summary) <= limit:
        return summary
    cut = summary[: max(limit - 3, 1)].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "..."


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n in COMMANDS if _available(n))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None or not _available(name):
            return None
        module, attr = entry[0].split(":")
        return getattr(importlib.import_module(f"trajlab.cli.{module}"), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the registry's summaries: loading every command module (and the
        library behind it: scipy, openai, dash, ...) only to print one line each took seconds."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, click.utils.make_str(_short(COMMANDS[n][1], limit))) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
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


# color=True: click must not strip "ANSI styles" from piped output, which would change data (a CSV
# cell holding ESC [2J lost it); on a terminal, stdout goes through cli._tty.TerminalSafe instead.
@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "color": True})
@click.version_option(__version__, prog_name="trajlab")
def cli() -> None:
    """Process-level trajectory analysis for AI coding agents.

    Typical flow: ingest runs into a lab, build step DAGs, label failures, then analyse, review,
    distil skills, browse the dashboard and export paper figures. `trajlab demo` runs it all on
    generated example runs.
    """


def main(argv: list[str] | None = None) -> None:
    from ._tty import guard_stdout

    guard_stdout()  # log text printed to a terminal cannot send it escape sequences
    cli.main(args=argv, prog_name="trajlab", standalone_mode=True)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
