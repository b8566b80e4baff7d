"""`trajlab schema`: print the lab schema."""

from __future__ import annotations

import json

import click

from ..schema import TABLES, json_schema, schema_as_dict, schema_as_markdown


@click.command("schema")
@click.argument("table", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json", "jsonschema"]),
    default="markdown",
    show_default=True,
)
def schema_cmd(table: str | None, fmt: str) -> None:
    """Print the versioned lab schema (all tables, or one TABLE)."""
    if table is not None and table not in TABLES:
        raise click.BadParameter(
            f"unknown table {table!r}; choose from {', '.join(TABLES)}", param_hint="TABLE"
        )
    if fmt == "jsonschema":
        for name in [table] if table else list(TABLES):
            click.echo(json_schema(name))
        return
    if fmt == "json":
        d = schema_as_dict()
        if table:
            d["tables"] = {table: d["tables"][table]}
        click.echo(json.dumps(d, indent=2))
        return
    md = schema_as_markdown()
    if table:
        start = md.index(f"## `{table}`")
        end = md.find("\n## ", start + 1)
        md = md[start : end if end > 0 else None]
    click.echo(md)
