"""The dashboard's view of a lab: a read-only DuckDB snapshot with a `runs` index, refreshed on change.

A `Snapshot` is one lab generation: `lab.connect()` (read-only views over that generation's parts) plus
an in-memory `runs_base` table (one row per trajectory: its columns, the tools and modalities it used,
and its newest judge, gold, predicted and lab-loaded human labels) and a `human_live` table of the
labels in the annotation files, which the review panel appends to. The `runs` view joins them and picks
one effective `category` and `label_source` per run (gold > human > LLM judge > rules judge >
predicted). Nothing here writes to the lab: the tables live in the connection's in-memory catalog.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ..review import AnnotationStore, resolve_taxonomy
from ..store import Lab
from ._runs import RUN_FILTERS, facet_values

RUNS_BASE_SQL = """
CREATE TABLE runs_base AS
WITH calls AS (
    SELECT trajectory_id,
           list_sort(list(DISTINCT tool) FILTER (WHERE tool IS NOT NULL)) AS tools,
           list_sort(list(DISTINCT modality) FILTER (WHERE modality IS NOT NULL)) AS modalities
    FROM steps WHERE kind = 'tool_call' GROUP BY trajectory_id
),
jl AS (
    SELECT trajectory_id, judge, category, confidence,
           row_number() OVER (PARTITION BY trajectory_id, judge = 'rules'
                              ORDER BY created_at DESC NULLS LAST, label_id) AS rn
    FROM judge_labels
    WHERE status = 'labeled' AND taxonomy_id = $taxonomy AND category IS NOT NULL
),
llm AS (SELECT * FROM jl WHERE judge <> 'rules' AND rn = 1),
rules AS (SELECT * FROM jl WHERE judge = 'rules' AND rn = 1),
gold AS (
    SELECT trajectory_id, arg_max(category, created_at) AS category
    FROM gold_labels WHERE taxonomy_id = $taxonomy GROUP BY trajectory_id
),
pred AS (
    SELECT trajectory_id, arg_max(category, created_at) AS category
    FROM predicted_labels WHERE taxonomy_id = $taxonomy GROUP BY trajectory_id
),
hl AS (
    SELECT trajectory_id, arg_max(category, created_at) AS category, count(DISTINCT annotator) AS n
    FROM human_labels WHERE taxonomy_id = $taxonomy AND dataset <> $dataset GROUP BY trajectory_id
)
SELECT t.trajectory_id, t.runner, t.format, t.model, t.harness, t.benchmark, t.task_id, t.task,
       t.domain, t.difficulty, t.split, t.condition, t.reasoning_effort, t.outcome, t.reward,
       t.n_steps, t.n_tool_calls, t.n_errors, t.n_subagents, t.total_tokens, t.cost_usd, t.duration_s,
       t.started_at,
       coalesce(c.tools, []::VARCHAR[]) AS tools,
       coalesce(c.modalities, []::VARCHAR[]) AS modalities,
       coalesce(llm.category, rules.category) AS judge_category,
       CASE WHEN llm.category IS NOT NULL THEN 'judge:llm'
            WHEN rules.category IS NOT NULL THEN 'judge:rules' END AS judge_source,
       coalesce(llm.confidence, rules.confidence) AS judge_confidence,
       gold.category AS gold_category,
       pred.category AS predicted_category,
       hl.category AS lab_human_category,
       coalesce(hl.n, 0) AS lab_human_n
FROM trajectories t
LEFT JOIN calls c USING (trajectory_id)
LEFT JOIN llm USING (trajectory_id)
LEFT JOIN rules USING (trajectory_id)
LEFT JOIN gold USING (trajectory_id)
LEFT JOIN pred USING (trajectory_id)
LEFT JOIN hl USING (trajectory_id)
"""

RUNS_VIEW_SQL = """
CREATE OR REPLACE VIEW runs AS
SELECT b.* EXCLUDE (lab_human_category, lab_human_n){hidden},
       coalesce(h.category, b.lab_human_category) AS human_category,
       b.lab_human_n + coalesce(h.n, 0) AS n_human,
       coalesce(b.gold_category, h.category, b.lab_human_category{judged}) AS category,
       CASE WHEN b.gold_category IS NOT NULL THEN 'gold'
            WHEN h.category IS NOT NULL OR b.lab_human_category IS NOT NULL THEN 'human'
            {judged_source}
            ELSE NULL END AS label_source
FROM runs_base b LEFT JOIN human_live h USING (trajectory_id)
"""

HUMAN_SCHEMA = pa.schema([("trajectory_id", pa.string()), ("category", pa.string()), ("n", pa.int64())])


BLIND_HIDDEN = (
    " REPLACE (NULL::VARCHAR AS judge_category, NULL::VARCHAR AS judge_source,"
    " NULL::DOUBLE AS judge_confidence, NULL::VARCHAR AS predicted_category)"
)
"""In blind mode the per-run judge and classifier columns of `runs` are NULL, so no page built on it
(the Failures page's judge columns, a SQL panel over `runs`) shows a blind reviewer what the judge said."""


BLIND_TABLES = ("judge_labels", "predicted_labels")
"""What a blind reviewer's figures, analyses and SQL panels read as empty (`Lab.hiding`): the judges' labels
and the classifier's predictions, whose counts per category would show what the judge said."""
BLIND_NOTE = (
    "Blind review: the judges' labels and the classifier's predictions are hidden from this dashboard."
)


def _runs_view(blind: bool) -> str:
    if blind:  # judge and classifier labels stay hidden from a blind reviewer
        return RUNS_VIEW_SQL.format(hidden=BLIND_HIDDEN, judged="", judged_source="")
    return RUNS_VIEW_SQL.format(
        hidden="",
        judged=", b.judge_category, b.predicted_category",
        judged_source="WHEN b.judge_category IS NOT NULL THEN b.judge_source "
        "WHEN b.predicted_category IS NOT NULL THEN 'predicted'",
    )


@dataclass
class Snapshot:
    """One lab generation as the dashboard reads it."""

    lab: Lab
    generation: int
    con: duckdb.DuckDBPyConnection
    built_s: float
    shown: Lab
    """The lab the panels read: in blind mode a view with `BLIND_TABLES` hidden, at this generation."""
    facets: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    human_signature: tuple[Any, ...] = ()
    cache: OrderedDict[Hashable, Any] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A connection for one request (DuckDB connections are not shared across threads)."""
        return self.con.cursor()

    def cached(self, key: Hashable, compute: Callable[[], Any], size: int = 64) -> Any:
        """Memoize per generation (figures, SQL panels, DAG elements); LRU of `size` entries."""
        with self.lock:
            if key in self.cache:
                self.cache.move_to_end(key)
                return self.cache[key]
        value = compute()
        with self.lock:
            self.cache[key] = value
            while len(self.cache) > size:
                self.cache.popitem(last=False)
        return value


class LabSource:
    """The lab, the annotation store and the current snapshot; `snapshot()` follows the lab's writes."""

    def __init__(
        self,
        lab: Lab | str | os.PathLike[str],
        annotations: str | os.PathLike[str] = "annotations",
        dataset: str = "default",
        taxonomy: Any = None,
        blind: bool = False,
    ):
        self.lab = lab if isinstance(lab, Lab) else Lab.open(lab)
        self.taxonomy = resolve_taxonomy(taxonomy)
        self.store = AnnotationStore(annotations, dataset)
        self.blind = blind
        self._snap: Snapshot | None = None
        self._lock = threading.Lock()
        self._checked = 0.0
        self.review_lock = threading.Lock()
        """Held while a review is decided and appended (`submit_review`): this server's saves, from any
        tab, go one at a time."""

    @property
    def annotations_root(self) -> Path:
        return self.store.root

    def snapshot(self, max_age_s: float = 1.0) -> Snapshot:
        """The snapshot of the lab's current generation (rebuilt when another process committed).

        The manifest is re-read at most once per `max_age_s`; the annotation files are re-read when
        their sizes or modification times changed.
        """
        with self._lock:
            now = time.monotonic()
            if self._snap is None or now - self._checked >= max_age_s:
                self._checked = now
                self.lab.refresh()
                if self._snap is None or self._snap.generation != self.lab.generation:
                    self._snap = self._build()
            snap = self._snap
            sig = self._human_signature()
            if sig != snap.human_signature:
                self._load_human(snap, sig)
            return snap

    def invalidate_annotations(self) -> None:
        """Force the next snapshot() to re-read the annotation files (after a review was saved)."""
        with self._lock:
            if self._snap is not None:
                self._snap.human_signature = ("stale",)

    def _human_signature(self) -> tuple[Any, ...]:
        out = []
        for p in self.store.files():
            try:
                st = p.stat()
            except OSError:
                continue
            out.append((p.name, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def human_rows(self) -> list[dict[str, Any]]:
        """Current human labels of the dataset for this taxonomy: newest per trajectory, with counts."""
        newest: dict[str, Any] = {}
        annotators: dict[str, set[str]] = {}
        for r in self.store.records(effective=True):
            if r.taxonomy_id != self.taxonomy.id:
                continue
            annotators.setdefault(r.trajectory_id, set()).add(r.annotator)
            old = newest.get(r.trajectory_id)
            if old is None or r.created_at >= old.created_at:
                newest[r.trajectory_id] = r
        return [
            {"trajectory_id": t, "category": r.category, "n": len(annotators[t])} for t, r in newest.items()
        ]

    def _load_human(self, snap: Snapshot, sig: tuple[Any, ...]) -> None:
        table = pa.Table.from_pylist(self.human_rows(), schema=HUMAN_SCHEMA)
        con = snap.cursor()
        con.register("_human_rows", table)
        try:
            con.execute("CREATE OR REPLACE TABLE human_live AS SELECT * FROM _human_rows")
        finally:
            con.unregister("_human_rows")
        con.execute(_runs_view(self.blind))
        snap.human_signature = sig
        snap.facets = {name: facet_values(con, name) for name in RUN_FILTERS}
        with snap.lock:  # cached panels may show labels
            snap.cache.clear()

    def _build(self) -> Snapshot:
        t0 = time.perf_counter()
        shown = self.lab.hiding(BLIND_TABLES) if self.blind else self.lab
        con = shown.connect()
        con.execute(RUNS_BASE_SQL, {"taxonomy": self.taxonomy.id, "dataset": self.store.dataset})
        snap = Snapshot(self.lab, self.lab.generation, con, 0.0, shown)
        self._load_human(snap, self._human_signature())
        snap.built_s = time.perf_counter() - t0
        return snap
