"""Stage 1: ingest trajectories from any runner into a lab."""

from ._discover import Discovery, discover
from ._meta import MetaIndex, is_meta_file, load_meta
from ._report import IngestReport, Quarantined, RunnerSummary
from ._run import IngestInterrupted, classify_unreadable, ingest
from ._worker import unit_digest

__all__ = [
    "Discovery",
    "IngestInterrupted",
    "IngestReport",
    "MetaIndex",
    "Quarantined",
    "RunnerSummary",
    "classify_unreadable",
    "discover",
    "ingest",
    "is_meta_file",
    "load_meta",
    "unit_digest",
]
