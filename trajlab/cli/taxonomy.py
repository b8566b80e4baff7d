"""`trajlab taxonomy`: show, validate and describe failure taxonomies."""

from __future__ import annotations

import json

import click

from ..taxonomy import (
    available_ids,
    find_taxonomy,
    load_taxonomy,
    search_dirs,
    taxonomy_json_schema,
    to_markdown,
    to_text,
    validate_file,
)


@click.group("taxonomy")
def taxonomy_group() -> None:
    """Failure taxonomies: YAML files of categories, decision rules, examples and signals."""


@taxonomy_group.command("list")
def list_cmd() -> None:
    """List the taxonomy ids that can be used by name, and where they are looked up."""
    for tid in available_ids():
        click.echo(f"{tid}  ({find_taxonomy(tid)})")
    click.echo("searched: " + ", ".join(str(d) for d in search_dirs()), err=True)


@taxonomy_group.command("show")
@click.argument("ref", default="omni-failure")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True
)
@click.option("--verbose", "-v", is_flag=True, help="Show rules, tie-breakers, examples and signals.")
def show_cmd(ref: str, fmt: str, verbose: bool) -> None:
    """Show a taxonomy, by id (e.g. omni-failure) or file path."""
    tax = load_taxonomy(ref)
    if fmt == "json":
        click.echo(json.dumps(tax.model_dump(mode="json"), indent=2, ensure_ascii=False))
    elif fmt == "markdown":
        click.echo(to_markdown(tax))
    else:
        click.echo(to_text(tax, verbose=verbose))


@taxonomy_group.command("validate")
@click.argument("files", nargs=-1, required=True)
def validate_cmd(files: tuple[str, ...]) -> None:
    """Check taxonomy FILES (paths or ids); print every problem with its line; exit 1 if any."""
    bad = 0
    for ref in files:
        path = find_taxonomy(ref)
        problems = validate_file(path)
        if problems:
            bad += 1
            for p in problems:
                click.echo(p)
        else:
            tax = load_taxonomy(path)
            click.echo(f"{path}: ok ({tax.id} v{tax.version}, {len(tax.categories)} categories)")
    if bad:
        raise SystemExit(1)


@taxonomy_group.command("schema")
def schema_cmd() -> None:
    """Print the JSON schema taxonomy files must follow."""
    click.echo(json.dumps(taxonomy_json_schema(), indent=2))
