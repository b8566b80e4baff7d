"""`trajlab review`, `annotations`, `adjudicate`, `agreement`, `propagate`: human review commands."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..review import (
    POLICIES,
    AnnotationStore,
    ReviewQueue,
    ReviewSession,
    adjudicate,
    agreement,
    import_example_truth,
    import_who_and_when,
    propagate,
    resolve_taxonomy,
)
from ..store import Lab
from ._inputs import read_ground_truth

ANNOTATIONS_ENV = "TRAJLAB_ANNOTATIONS"

F = TypeVar("F", bound=Callable[..., Any])


def _store_options(f: F) -> F:
    f = click.option(
        "--annotations",
        "annotations_dir",
        default=lambda: os.environ.get(ANNOTATIONS_ENV, "annotations"),
        show_default="annotations (or $TRAJLAB_ANNOTATIONS)",
        type=click.Path(file_okay=False, path_type=str),
        help="Root folder of the annotation files.",
    )(f)
    f = click.option("--dataset", "-d", default="default", show_default=True, help="Annotation dataset.")(f)
    return f


def _taxonomy_option(f: F) -> F:
    return click.option(
        "--taxonomy", "-t", default="omni-failure", show_default=True, help="Taxonomy id or file."
    )(f)


@click.command("review")
@click.argument("lab", type=click.Path(path_type=str))
@click.option(
    "--annotator", "-a", required=True, help="Your name (your labels go to <dataset>/<name>.jsonl)."
)
@_store_options
@_taxonomy_option
@click.option("--blind", is_flag=True, help="Hide the judge's label (for agreement studies).")
@click.option("--reviewers", "-n", type=int, default=1, show_default=True, help="Reviewers wanted per item.")
@click.option("--limit", type=int, default=None, help="Stop after this many labels.")
@click.option("--list", "list_only", is_flag=True, help="Print your queue in priority order and exit.")
def review_cmd(
    lab: str,
    annotator: str,
    annotations_dir: str,
    dataset: str,
    taxonomy: str,
    blind: bool,
    reviewers: int,
    limit: int | None,
    list_only: bool,
) -> None:
    """Review judge labels of LAB in the terminal: one key to accept or pick a category, then a note.

    Every label is appended to the annotation file (and synced to disk) as soon as it is complete.
    """
    queue = ReviewQueue(
        Lab.open(lab),
        taxonomy,
        annotator,
        mode="blind" if blind else "normal",
        reviewers_per_item=reviewers,
        store=AnnotationStore(annotations_dir, dataset),
    )
    if list_only:
        from .. import tabular

        rows = [
            {
                "trajectory_id": it.trajectory_id,
                "priority": it.priority,
                "reviews": it.n_reviews,
                "judge": None if it.judge is None else it.judge.category,
                "why": "; ".join(it.reasons),
            }
            for it in queue.items()
        ]
        click.echo(tabular.render(rows, max_width=70) if rows else "queue empty")
        return
    queue.store.check_writable(annotator)  # before a label is typed, not when it is saved
    ReviewSession(queue, limit=limit).run()


@click.group("annotations")
def annotations_group() -> None:
    """Check and load the human annotation files (annotations/<dataset>/<annotator>.jsonl)."""


@annotations_group.command("validate")
@click.argument("lab", required=False, type=click.Path(path_type=str))
@_store_options
@click.option(
    "--taxonomy", "-t", default=None, help="Check against this taxonomy (default: each record's own)."
)
def validate_cmd(lab: str | None, annotations_dir: str, dataset: str, taxonomy: str | None) -> None:
    """List every problem of a dataset (with LAB: also unknown trajectories and steps)."""
    store = AnnotationStore(annotations_dir, dataset)
    if not store.files():
        click.echo(f"no annotation files in {store.folder}")
    problems = store.validate(Lab.open(lab) if lab else None, taxonomy)
    for p in problems:
        click.echo(str(p))
    n_err = sum(p.severity == "error" for p in problems)
    click.echo(
        f"{len(store.files())} files, {len(store.records())} records: {n_err} errors, {len(problems) - n_err} warnings"
    )
    if n_err:
        raise SystemExit(1)


@annotations_group.command("load")
@click.argument("lab", type=click.Path(path_type=str))
@_store_options
@click.option(
    "--taxonomy", "-t", default=None, help="Check against this taxonomy (default: each record's own)."
)
@click.option("--skip-invalid", is_flag=True, help="Load the valid records and report the others.")
def load_cmd(lab: str, annotations_dir: str, dataset: str, taxonomy: str | None, skip_invalid: bool) -> None:
    """Validate a dataset and load it into LAB's human_labels table (replacing its earlier load)."""
    report = AnnotationStore(annotations_dir, dataset).load_into_lab(
        Lab.open(lab), taxonomy, strict=not skip_invalid
    )
    click.echo(report.format())


@annotations_group.command("import")
@click.argument("lab", type=click.Path(path_type=str))
@_store_options
@_taxonomy_option
@click.option(
    "--who-and-when",
    "source",
    flag_value="who_and_when",
    help="Who&When mistake steps from trajectory metadata.",
)
@click.option(
    "--examples",
    "examples_dir",
    type=click.Path(exists=True, file_okay=False, path_type=str),
    help="Ground truth of a `trajlab examples` folder.",
)
@click.option("--annotator", "-a", default=None, help="Annotator name for the imported records.")
def import_cmd(
    lab: str,
    annotations_dir: str,
    dataset: str,
    taxonomy: str,
    source: str | None,
    examples_dir: str | None,
    annotator: str | None,
) -> None:
    """Append labels that ship with a dataset as annotation records (idempotent)."""
    the_lab = Lab.open(lab)
    store = AnnotationStore(annotations_dir, dataset)
    if source == "who_and_when":
        report = import_who_and_when(the_lab, store, taxonomy, annotator or "who-and-when")
    elif examples_dir:
        report = import_example_truth(
            the_lab,
            store,
            read_ground_truth(examples_dir, "--examples"),
            taxonomy,
            annotator or "ground-truth",
        )
    else:
        raise click.UsageError("give --who-and-when or --examples DIR")
    click.echo(report.format())


@annotations_group.command("schema")
def schema_cmd() -> None:
    """Print the JSON schema of an annotation record."""
    from ..review import AnnotationRecord

    click.echo(json.dumps(AnnotationRecord.model_json_schema(), indent=2))


@click.command("adjudicate")
@click.argument("lab", type=click.Path(path_type=str))
@_store_options
@_taxonomy_option
@click.option("--policy", type=click.Choice(POLICIES), default="majority", show_default=True)
@click.option(
    "--min-reviewers", type=int, default=1, show_default=True, help="Votes needed before a gold label."
)
@click.option(
    "--decide", nargs=2, metavar="TRAJECTORY CATEGORY", help="Record an adjudicator's decision first."
)
@click.option("--step", type=int, default=None, help="Gold decisive step for --decide.")
@click.option("--by", "decided_by", default=None, help="Adjudicator name for --decide.")
@click.option("--reason", default=None, help="Why, for --decide.")
def adjudicate_cmd(
    lab: str,
    annotations_dir: str,
    dataset: str,
    taxonomy: str,
    policy: str,
    min_reviewers: int,
    decide: tuple[str, str] | None,
    step: int | None,
    decided_by: str | None,
    reason: str | None,
) -> None:
    """Load the dataset's labels, resolve disagreements and write gold_labels."""
    the_lab = Lab.open(lab)
    tax = resolve_taxonomy(taxonomy)
    store = AnnotationStore(annotations_dir, dataset)
    if decide:
        if not decided_by or not reason:
            raise click.UsageError("--decide needs --by NAME and --reason TEXT")
        store.append_adjudication(
            {
                "trajectory_id": decide[0],
                "taxonomy_id": tax.id,
                "taxonomy_version": str(tax.version),
                "category": decide[1],
                "decisive_step_index": step,
                "decided_by": decided_by,
                "reason": reason,
            }
        )
    click.echo(store.load_into_lab(the_lab, tax).format())
    decisions, problems = store.adjudications()
    from ..review import raise_problems

    raise_problems(problems)
    report = adjudicate(the_lab, tax, [d.record for d in decisions], policy, min_reviewers, dataset=dataset)
    click.echo(report.format())


@click.command("agreement")
@click.argument("lab", type=click.Path(path_type=str))
@click.option("--k", "k", type=int, default=1, show_default=True, help="Decisive steps within +-k agree.")
@click.option(
    "--taxonomy", "-t", "taxonomy_id", default=None, help="Taxonomy id (default: the most labeled)."
)
@click.option("--json", "as_json", is_flag=True, help="JSON instead of tables.")
def agreement_cmd(lab: str, k: int, taxonomy_id: str | None, as_json: bool) -> None:
    """Agreement of judges and human reviewers: kappas, alpha, per category, decisive steps, confusion."""
    report = agreement(Lab.open(lab), k=k, taxonomy_id=taxonomy_id)
    click.echo(report.to_json() if as_json else report.to_table())


@click.command("propagate")
@click.argument("lab", type=click.Path(path_type=str))
@_taxonomy_option
@click.option(
    "--control", is_flag=True, help="Also cross-validate on shuffled labels (should be near chance)."
)
@click.option("--no-write", is_flag=True, help="Report only; leave predicted_labels unchanged.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def propagate_cmd(
    lab: str, taxonomy: str, control: bool, no_write: bool, seed: int, as_json: bool, quiet: bool
) -> None:
    """Train on reviewed labels, report cross-validated accuracy, predict unreviewed failures."""
    report = propagate(
        Lab.open(lab), taxonomy, write=not no_write, control=control, seed=seed, progress=not quiet
    )
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.format())
