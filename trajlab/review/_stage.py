"""The review stage of the demo pipeline: the example runs' planted causes stand in for reviewers.

`review_stage(lab, examples_dir, annotations_root)` imports the ground truth of a `trajlab examples`
folder as the annotator `ground-truth`, loads it into `human_labels`, adjudicates gold labels,
measures the judges against them, and propagates labels with a cross-validated classifier.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._adjudicate import adjudicate
from ._agreement import agreement
from ._import import import_example_truth
from ._propagate import propagate
from ._store import AnnotationStore
from ._taxo import resolve_taxonomy

if TYPE_CHECKING:
    from ..store import Lab


def review_stage(
    lab: Lab,
    examples_dir: str | os.PathLike[str],
    annotations_root: str | os.PathLike[str],
    taxonomy: Any = "omni-failure",
    dataset: str = "examples",
) -> tuple[str, dict[str, Any]]:
    """(summary text, figures) of the review stage on generated example runs."""
    from ..examples import load_ground_truth

    tax = resolve_taxonomy(taxonomy)
    store = AnnotationStore(annotations_root, dataset)
    imported = import_example_truth(lab, store, load_ground_truth(examples_dir), tax)
    loaded = store.load_into_lab(lab, tax)
    gold = adjudicate(lab, tax, min_reviewers=1, dataset=dataset)
    agree = agreement(lab, k=1, taxonomy_id=tax.id)
    lines = [
        f"annotations: {imported.appended} new ground-truth records in {store.folder} "
        f"({loaded.loaded} labels loaded); gold labels: {len(gold.gold)}",
    ]
    data: dict[str, Any] = {"human_labels": loaded.loaded, "gold_labels": len(gold.gold)}
    for p in agree.pairs:
        if p.kind == "judge-human":
            kappa = "n/a" if p.kappa is None else f"{p.kappa:.3f}"
            lines.append(
                f"{p.rater_a} vs {p.rater_b}: {p.items_both} runs in common, category kappa {kappa} "
                f"over {p.n_items}, decisive step exact {_pct(p.step_exact)} / within +-1 {_pct(p.step_within_k)}"
            )
            data[f"kappa {p.rater_a}"] = p.kappa
    try:
        prop = propagate(lab, tax, control=True)
    except ConfigError as e:
        lines.append(f"propagation skipped: {e}")
    else:
        lines.append(prop.format())
        data.update(cv_accuracy=prop.cv_accuracy, control_accuracy=prop.control_accuracy)
    return "\n".join(lines), data


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"
