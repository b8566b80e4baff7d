"""Stage 1: ingest trajectories from any runner into a lab."""

from ._discover import Discovery, discover
from ._run import IngestReport, RunnerSummary, ingest
from ._worker import unit_digest

__all__ = ["Discovery", "IngestReport", "RunnerSummary", "discover", "ingest", "unit_digest"]
