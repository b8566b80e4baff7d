"""The value every analysis returns: a table plus the SQL that made it and what the lab was missing."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from .. import tabular

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

METADATA_KEY = b"trajlab.analysis"

MISSING_HINTS: dict[str, str] = {
    "no trajectories": "ingest runs first: `trajlab ingest PATH --out LAB`",
    "no tool calls": "the trajectories hold no tool-call steps",
    "no outcomes": "no trajectory is marked success or failure; give outcomes with a trajlab-meta.jsonl "
    "sidecar (`trajlab ingest --meta`) or ingest runner output that records results",
    "no successful trajectories": "every trajectory with an outcome failed: gaps need both outcomes",
    "no failed trajectories": "every trajectory with an outcome succeeded: gaps need both outcomes",
    "no token counts": "the runners recorded no token usage for these trajectories",
    "no judge labels": "label failures with a judge first (see `trajlab judge --help`)",
    "no human labels": "load human annotations first: `trajlab annotations load LAB`",
    "no gold labels": "adjudicate human labels first: `trajlab adjudicate LAB`",
    "no predicted labels": "propagate labels first: `trajlab propagate LAB`",
    "no tool errors": "no tool call is flagged is_error or timed_out",
    "no media tool calls": "no tool call touches audio, video or images (steps.modality)",
}
"""What to do about each `AnalysisResult.missing` message (shown by the CLI and the dashboard)."""


def missing_hint(message: str) -> str | None:
    return MISSING_HINTS.get(message)


@dataclass
class AnalysisResult:
    """The result of one analysis.

    `table` holds the rows (possibly none); `sql` is the exact SQL that ran (placeholders expanded);
    `params` the parameters it ran with; `missing` names what the lab lacks for this analysis
    ("no outcomes", "no judge labels", ...) and is empty when the analysis could run in full; `notes`
    carries caveats (excluded trajectories, groups where a statistic is undefined); `extras` holds
    companion results (e.g. `step_funnel(...).extras["recovery"]`).
    """

    name: str
    table: pa.Table
    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extras: dict[str, AnalysisResult] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when nothing the analysis needs is missing from the lab."""
        return not self.missing

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    @property
    def columns(self) -> list[str]:
        return list(self.table.column_names)

    def to_polars(self) -> pl.DataFrame:
        import polars as pl

        return cast("pl.DataFrame", pl.from_arrow(self.table))  # a Table gives a DataFrame

    def to_pandas(self) -> pd.DataFrame:
        return self.table.to_pandas()

    def to_pylist(self) -> list[dict[str, Any]]:
        return self.table.to_pylist()

    def metadata(self) -> dict[str, Any]:
        """Provenance as plain data (stored in the Parquet schema metadata by `write`)."""
        return {
            "name": self.name,
            "params": {k: _plain(v) for k, v in self.params.items()},
            "missing": list(self.missing),
            "notes": list(self.notes),
            "sql": self.sql,
        }

    def render(self, fmt: str = "table", max_rows: int | None = 200) -> str:
        """The rows as a terminal table, Markdown, CSV or JSON (trajlab.tabular formats)."""
        return tabular.render(self.table, fmt, max_rows=max_rows if fmt in ("table", "markdown") else None)

    def write(self, path: str | Path, fmt: str | None = None) -> Path:
        """Write the rows as CSV, JSON, JSONL, Markdown or Parquet, chosen by `fmt` or the file suffix.

        Parquet files also carry `metadata()` (SQL, params, missing, notes) under the schema metadata key
        `trajlab.analysis`, so a figure built from the file can say where its numbers came from.
        """
        table = self.table.replace_schema_metadata(
            {**(self.table.schema.metadata or {}), METADATA_KEY: json.dumps(self.metadata()).encode()}
        )
        return tabular.write(table, path, fmt)

    def __repr__(self) -> str:
        extra = f", missing={self.missing}" if self.missing else ""
        return f"AnalysisResult({self.name!r}, {self.num_rows} rows, columns={self.columns}{extra})"


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return list(v)
    if isinstance(v, (str, int, float, bool, list, dict)) or v is None:
        return v
    return str(v)


def read_metadata(path: str | Path) -> dict[str, Any] | None:
    """The provenance stored by `AnalysisResult.write` in a Parquet file, or None."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(METADATA_KEY)
    return json.loads(raw) if raw else None
