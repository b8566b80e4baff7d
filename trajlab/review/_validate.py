"""Checks of annotation records against each other, the taxonomy and the lab."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TrajlabError
from ._files import Located, Problem
from ._records import SPECIAL_CATEGORIES, AnnotationRecord
from ._taxo import resolve_taxonomy

if TYPE_CHECKING:
    from ..store import Lab


def effective_records(
    recs: Sequence[Located[AnnotationRecord]],
    problems: list[Problem],
    rejected: Collection[tuple[Path, int]] = (),
    superseded_rejected: list[tuple[Located[AnnotationRecord], Located[AnnotationRecord]]] | None = None,
) -> list[Located[AnnotationRecord]]:
    """The current label per (trajectory, taxonomy) of one annotator file, in file order.

    A record replaces the current one when it `supersedes` it or repeats the same label (a newer note);
    a different label without `supersedes` is a conflicting duplicate: reported, and the earlier label
    is kept so nothing already written is lost.

    `rejected` are the (path, line) of records that failed the lab/taxonomy checks: they never become
    the current label, but a later record may supersede one -- in an append-only file that is the only
    way to correct a bad line. Such pairs (rejected, superseding) are added to `superseded_rejected`.
    """
    by_id: dict[str | None, Located[AnnotationRecord]] = {}
    current: dict[tuple[str, str], Located[AnnotationRecord]] = {}
    for loc in recs:
        r = loc.record
        if r.record_id in by_id:
            continue  # the exact same record twice (a retried append): harmless
        by_id[r.record_id] = loc
        if (loc.path, loc.line) in rejected:
            continue  # reported by the checks; only a target for `supersedes`
        key = (r.trajectory_id, r.taxonomy_id)
        cur = current.get(key)
        if r.supersedes is not None:
            target = by_id.get(r.supersedes)
            if target is None:
                problems.append(
                    Problem(
                        str(loc.path),
                        loc.line,
                        f"supersedes {r.supersedes}, which is not an earlier record of this file",
                    )
                )
                continue
            if (target.record.trajectory_id, target.record.taxonomy_id) != key:
                problems.append(
                    Problem(
                        str(loc.path),
                        loc.line,
                        f"supersedes {r.supersedes} (line {target.line}), a label of another "
                        "trajectory or taxonomy",
                    )
                )
                continue
            if (target.path, target.line) in rejected:
                # Correcting a rejected line: fine when that line was (meant to be) the latest label.
                if cur is None or target.record.supersedes == cur.record.record_id:
                    current[key] = loc
                    if superseded_rejected is not None:
                        superseded_rejected.append((target, loc))
                    continue
                problems.append(
                    Problem(
                        str(loc.path),
                        loc.line,
                        f"supersedes line {target.line} (a rejected record), but the current label is "
                        f"line {cur.line}; supersede the latest one",
                    )
                )
                continue
            if cur is not target:
                problems.append(
                    Problem(
                        str(loc.path),
                        loc.line,
                        f"supersedes line {target.line}, but the current label is line "
                        f"{cur.line if cur else '?'}; supersede the latest one",
                    )
                )
                continue
            current[key] = loc
        elif cur is not None and cur.record.label_key != r.label_key:
            problems.append(
                Problem(
                    str(loc.path),
                    loc.line,
                    f"conflicting duplicate: {r.annotator} already labeled {r.trajectory_id} as "
                    f"{cur.record.category} (step {cur.record.decisive_step_index}) at line {cur.line}, "
                    f"now {r.category} (step {r.decisive_step_index}); the earlier label is kept. To change "
                    f'a label append a record with "supersedes": "{cur.record.record_id}"',
                )
            )
        else:
            current[key] = loc
    chosen = {id(v) for v in current.values()}
    return [loc for loc in recs if id(loc) in chosen]


def _lab_index(lab: Lab) -> tuple[dict[str, int], dict[str, str]]:
    t = lab.read("trajectories", ["trajectory_id", "n_steps"])
    n_steps = dict(zip(t.column("trajectory_id").to_pylist(), t.column("n_steps").to_pylist()))
    j = lab.read("judge_labels", ["label_id", "trajectory_id"])
    labels = dict(zip(j.column("label_id").to_pylist(), j.column("trajectory_id").to_pylist()))
    return n_steps, labels


def check_against(
    recs: Sequence[Located[Any]], lab: Lab | None, taxonomy: Any
) -> tuple[set[tuple[Path, int]], list[Problem]]:
    """Problems of records against the taxonomy (always) and the lab (when given).

    Returns the (path, line) of records with errors, and all problems. With no taxonomy given, each
    record's taxonomy is loaded by id and its version must match the installed one.
    """
    problems: list[Problem] = []
    bad: set[tuple[Path, int]] = set()
    taxa: dict[str, Any] = {}
    fixed = resolve_taxonomy(taxonomy) if taxonomy is not None else None
    index = _lab_index(lab) if lab is not None else None

    def err(loc: Located[Any], msg: str, severity: str = "error") -> None:
        problems.append(Problem(str(loc.path), loc.line, msg, severity))
        if severity == "error":
            bad.add((loc.path, loc.line))

    for loc in recs:
        r = loc.record
        if fixed is not None:
            tax = fixed
        else:
            if r.taxonomy_id not in taxa:
                try:
                    taxa[r.taxonomy_id] = resolve_taxonomy(r.taxonomy_id)
                except TrajlabError as e:
                    taxa[r.taxonomy_id] = e
            tax = taxa[r.taxonomy_id]
            if isinstance(tax, Exception):
                err(loc, f"unknown taxonomy {r.taxonomy_id!r}: {tax}")
                continue
        if r.taxonomy_id != tax.id or str(r.taxonomy_version) != str(tax.version):
            err(
                loc,
                f"record is for taxonomy {r.taxonomy_id} v{r.taxonomy_version}, but this dataset is "
                f"checked against {tax.id} v{tax.version}; relabel it under v{tax.version} "
                "or keep older-version records in their own dataset",
            )
            continue
        allowed = [*tax.category_ids, *SPECIAL_CATEGORIES]
        if r.category not in allowed:
            err(
                loc,
                f"category {r.category!r} is not in taxonomy {tax.id} v{tax.version} "
                f"(allowed: {', '.join(allowed)})",
            )
            continue
        if index is None:
            continue
        n_steps, labels = index
        if r.trajectory_id not in n_steps:
            err(loc, f"unknown trajectory id {r.trajectory_id!r}: not in the lab")
            continue
        n = n_steps[r.trajectory_id] or 0
        steps = ([r.decisive_step_index] if r.decisive_step_index is not None else []) + list(
            r.evidence_steps
        )
        out_of_range = [s for s in steps if s >= n]
        if out_of_range:
            err(
                loc,
                f"step index {out_of_range[0]} does not exist in {r.trajectory_id} "
                f"(it has {n} steps: 0..{n - 1})",
            )
            continue
        reviewed = getattr(r, "reviews_label_id", None)
        if reviewed is not None:
            owner = labels.get(reviewed)
            if owner is None:
                err(loc, f"reviews judge label {reviewed}, which is not in the lab", "warning")
            elif owner != r.trajectory_id:
                err(loc, f"reviews judge label {reviewed}, which belongs to trajectory {owner}")
    return bad, problems
