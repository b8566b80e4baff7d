"""Human review: annotation files, review queue, adjudication, agreement statistics, label propagation.

- `AnnotationStore` / `AnnotationRecord`: append-only JSONL labels per dataset and annotator
  (`annotations/<dataset>/<annotator>.jsonl`), validated and loaded into `human_labels`.
- `ReviewQueue`: judge labels waiting for review in priority order, normal or blind, N reviewers.
- `ReviewSession`: the terminal loop of `trajlab review`.
- `agreement`: Cohen's kappa per pair, Fleiss' kappa, Krippendorff's alpha, per-category and
  decisive-step agreement, judge-vs-gold confusion.
- `adjudicate`: reviewers' labels -> `gold_labels` (unanimous, majority, adjudicated).
- `propagate`: a calibrated classifier trained on reviewed labels -> `predicted_labels`.
"""

from ._adjudicate import POLICIES, AdjudicationReport, Unresolved, adjudicate
from ._agreement import AgreementReport, PairStats, Rating, agreement
from ._files import Located, Problem
from ._import import ImportReport, import_example_truth, import_who_and_when
from ._propagate import PropagationReport, propagate, reviewed_labels
from ._queue import MODES, WEIGHTS, JudgeView, QueueError, ReviewItem, ReviewQueue
from ._records import REVIEW_ACTIONS, SPECIAL_CATEGORIES, AdjudicationRecord, AnnotationRecord, field_docs
from ._session import ReviewSession, SessionSummary, category_keys
from ._stage import review_stage
from ._stats import cohen_kappa, confusion, fleiss_kappa, krippendorff_alpha_nominal, specific_agreement
from ._store import AnnotationSet, AnnotationStore, LoadReport, raise_problems
from ._taxo import DEFAULT_TAXONOMY, resolve_taxonomy

__all__ = [
    "DEFAULT_TAXONOMY",
    "MODES",
    "POLICIES",
    "REVIEW_ACTIONS",
    "SPECIAL_CATEGORIES",
    "WEIGHTS",
    "AdjudicationRecord",
    "AdjudicationReport",
    "AgreementReport",
    "AnnotationRecord",
    "AnnotationSet",
    "AnnotationStore",
    "ImportReport",
    "JudgeView",
    "LoadReport",
    "Located",
    "PairStats",
    "Problem",
    "PropagationReport",
    "QueueError",
    "Rating",
    "ReviewItem",
    "ReviewQueue",
    "ReviewSession",
    "SessionSummary",
    "Unresolved",
    "adjudicate",
    "agreement",
    "category_keys",
    "cohen_kappa",
    "confusion",
    "field_docs",
    "fleiss_kappa",
    "import_example_truth",
    "import_who_and_when",
    "krippendorff_alpha_nominal",
    "propagate",
    "raise_problems",
    "resolve_taxonomy",
    "review_stage",
    "reviewed_labels",
    "specific_agreement",
]
