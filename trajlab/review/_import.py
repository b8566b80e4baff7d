"""Turn labels that come with a dataset into annotation records, so they flow through the same
validation, agreement and propagation as labels typed in `trajlab review`.

- Who&When: the human mistake annotation stored in `trajectories.metadata["who_and_when"]` (by the
  Who&When adapter; `mistake_step` is a `step_index`). It names a decisive step and agent but no
  category of our taxonomies, so the records say `unsure` with the step: they count for
  decisive-step (and agent) agreement, never for category agreement.
- Example runs (`trajlab examples`): the planted cause of each failed run from `ground_truth.jsonl`,
  with its decisive call and evidence calls mapped to step indexes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..schema import UNSURE
from ._records import AnnotationRecord
from ._store import AnnotationStore
from ._taxo import resolve_taxonomy

if TYPE_CHECKING:
    from ..store import Lab


@dataclass
class ImportReport:
    appended: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)  # why each skipped row was skipped

    def format(self) -> str:
        lines = [
            f"{self.appended} records appended, {self.unchanged} already present, {len(self.skipped)} skipped"
        ]
        lines += [f"  skipped: {s}" for s in self.skipped[:20]]
        if len(self.skipped) > 20:
            lines.append(f"  ... and {len(self.skipped) - 20} more")
        return "\n".join(lines)


def _append_all(store: AnnotationStore, records: Iterable[AnnotationRecord], report: ImportReport) -> None:
    existing = {r.record_id for r in store.records()}
    for rec in records:
        rec = rec.with_id()
        if rec.record_id in existing:
            report.unchanged += 1
            continue
        store.append(rec)
        existing.add(rec.record_id)
        report.appended += 1


def import_who_and_when(
    lab: Lab, store: AnnotationStore, taxonomy: Any = None, annotator: str = "who-and-when"
) -> ImportReport:
    """Append one record per Who&When trajectory: `unsure` + the annotated mistake step."""
    tax = resolve_taxonomy(taxonomy)
    report = ImportReport()
    # A fixed timestamp keeps re-imports identical (same record ids -> nothing appended twice).
    stamp = datetime(2025, 1, 1, tzinfo=timezone.utc)
    recs = []
    cols = ["trajectory_id", "metadata", "n_steps", "ingested_at"]
    for t in lab.read("trajectories", cols).to_pylist():
        try:
            meta = json.loads(t["metadata"] or "{}")
        except json.JSONDecodeError:
            continue
        ann = meta.get("who_and_when") if isinstance(meta, dict) else None
        if not isinstance(ann, dict):
            continue
        raw_step: Any = ann.get("mistake_step")
        try:
            step = int(raw_step)
        except (TypeError, ValueError):
            report.skipped.append(f"{t['trajectory_id']}: mistake_step {raw_step!r} is not a number")
            continue
        if not 0 <= step < (t["n_steps"] or 0):
            report.skipped.append(f"{t['trajectory_id']}: mistake_step {step} outside 0..{t['n_steps'] - 1}")
            continue
        note = f"mistake_agent={ann.get('mistake_agent')}: {ann.get('mistake_reason') or ''}".strip()
        recs.append(
            AnnotationRecord(
                trajectory_id=t["trajectory_id"],
                taxonomy_id=tax.id,
                taxonomy_version=str(tax.version),
                category=UNSURE,
                decisive_step_index=step,
                note=note[:2000],
                annotator=annotator,
                created_at=stamp,
            )
        )
    _append_all(store, recs, report)
    return report


def import_example_truth(
    lab: Lab,
    store: AnnotationStore,
    truth: Iterable[Mapping[str, Any]],
    taxonomy: Any = None,
    annotator: str = "ground-truth",
) -> ImportReport:
    """Append the planted category, decisive step and evidence of each failed example run."""
    tax = resolve_taxonomy(taxonomy)
    report = ImportReport()
    stamp = datetime(2025, 1, 1, tzinfo=timezone.utc)
    trajs = lab.read("trajectories", ["trajectory_id", "native_id", "source_path"]).to_pylist()
    by_native = {t["native_id"]: t["trajectory_id"] for t in trajs if t["native_id"]}
    rows = [r for r in truth if r.get("outcome") == "failure" and r.get("category")]
    tids: dict[int, str] = {}
    for i, r in enumerate(rows):
        tid = by_native.get(r.get("native_id"))
        if tid is None and r.get("source"):
            tid = next(
                (t["trajectory_id"] for t in trajs if t["source_path"].endswith("/" + r["source"])), None
            )
        if tid is None:
            report.skipped.append(f"{r.get('run_id')}: no trajectory in the lab for {r.get('source')}")
            continue
        tids[i] = tid
    steps = _step_index(lab, set(tids.values()))
    recs = []
    for i, tid in tids.items():
        r = rows[i]
        if r["category"] not in tax.category_ids:
            report.skipped.append(f"{r.get('run_id')}: category {r['category']!r} not in {tax.id}")
            continue
        by_call, last_answer, texts = steps.get(tid, ({}, None, []))
        d = r.get("decisive") or {}
        decisive = None
        if d.get("call_id"):
            decisive = by_call.get(d["call_id"])
        elif d.get("final_answer"):
            decisive = last_answer
        elif d.get("assistant_text"):
            decisive = next((k for k, txt in texts if d["assistant_text"].strip()[:80] in txt), None)
        evidence = [by_call[c] for c in r.get("evidence_call_ids") or [] if c in by_call]
        recs.append(
            AnnotationRecord(
                trajectory_id=tid,
                taxonomy_id=tax.id,
                taxonomy_version=str(tax.version),
                category=r["category"],
                decisive_step_index=decisive,
                evidence_steps=evidence,
                note=f"planted cause ({r.get('variant')}) of example run {r.get('run_id')}",
                annotator=annotator,
                created_at=stamp,
            )
        )
    _append_all(store, recs, report)
    return report


def _step_index(
    lab: Lab, tids: set[str]
) -> dict[str, tuple[dict[str, int], int | None, list[tuple[int, str]]]]:
    """trajectory -> (call_id -> step_index, last assistant step, [(step, text)] of assistant steps)."""
    out: dict[str, tuple[dict[str, int], int | None, list[tuple[int, str]]]] = {}
    if not tids:
        return out
    import pyarrow as pa

    con = lab.connect()
    con.register("_tids", pa.table({"trajectory_id": pa.array(sorted(tids), pa.string())}))
    for tid, idx, kind, call_id, text in con.execute(
        """SELECT trajectory_id, step_index, kind, call_id, text FROM steps
           WHERE trajectory_id IN (SELECT trajectory_id FROM _tids) ORDER BY trajectory_id, step_index"""
    ).fetchall():
        by_call, _last, texts = out.setdefault(tid, ({}, None, []))
        if call_id and call_id not in by_call:
            by_call[call_id] = idx
        if kind == "assistant":
            texts.append((idx, text or ""))
            out[tid] = (by_call, idx, texts)
    return out
