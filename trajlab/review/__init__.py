"""Human review: annotation files, review queue, adjudication, agreement statistics, label propagation."""

from ._files import Located, Problem
from ._records import REVIEW_ACTIONS, SPECIAL_CATEGORIES, AdjudicationRecord, AnnotationRecord
from ._store import AnnotationSet, AnnotationStore, LoadReport
from ._taxo import DEFAULT_TAXONOMY, resolve_taxonomy

__all__ = [
    "DEFAULT_TAXONOMY",
    "REVIEW_ACTIONS",
    "SPECIAL_CATEGORIES",
    "AdjudicationRecord",
    "AnnotationRecord",
    "AnnotationSet",
    "AnnotationStore",
    "LoadReport",
    "Located",
    "Problem",
    "resolve_taxonomy",
]
