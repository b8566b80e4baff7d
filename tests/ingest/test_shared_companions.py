"""A run-level companion (one results.json for several trajectory files) belongs to every unit that
reads it: changing it re-ingests all of them, and their quarantine rows stay apart."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from trajlab.ingest import discover, ingest
from trajlab.store import Lab, query

RUN = "swe_agent/gpt4o__swe-bench-lite__default__t-0.00__p-0.95__c-3.00"


@pytest.fixture()
def run(tmp_path: Path, fixtures_dir: Path) -> Path:
    d = tmp_path / "runs" / Path(RUN).name
    shutil.copytree(fixtures_dir / "formats" / RUN, d)
    return d


def _outcomes(lab: Lab) -> dict[str, tuple[str, float | None]]:
    rows = query(lab, "select task_id, outcome, reward from trajectories").to_pylist()
    return {r["task_id"]: (r["outcome"], r["reward"]) for r in rows}


def _rewrite(path: Path, data: str, mtime_s: int) -> None:
    path.write_text(data)
    os.utime(path, (mtime_s, mtime_s))  # a distinct mtime, whatever the file system's resolution


def test_shared_results_file_is_a_companion_of_every_unit(run: Path) -> None:
    disc = discover([run])
    comps = {u.primary.name: sorted(c.name for c in u.companions) for u in disc.units}
    assert comps == {
        "calc__calc-1.traj": ["all_preds.jsonl", "calc__calc-1.pred", "results.json"],
        "parser__parser-7.traj": ["all_preds.jsonl", "results.json"],
    }
    assert {p.name for p in disc.shared} == {"all_preds.jsonl", "results.json"}
    assert not disc.unknown  # the shared files are companions, not units or unknown files


def test_changed_shared_results_reingest_every_sibling(run: Path, tmp_path: Path, invariant) -> None:
    lab_dir = tmp_path / "lab"
    rep = ingest([run], lab_dir, workers=1, progress=False)
    assert rep.runners["swe_agent"].files == 2
    lab = Lab.open(lab_dir)
    assert _outcomes(lab) == {"calc__calc-1": ("success", 1.0), "parser__parser-7": ("failure", 0.0)}

    # The evaluation is re-run: the outcomes flip; only the shared results.json changes.
    results = {"resolved_ids": ["parser__parser-7"], "unresolved_ids": ["calc__calc-1"], "error_ids": []}
    _rewrite(run / "results.json", json.dumps(results), 2_000_000_000)
    rep = ingest([run], lab_dir, workers=1, progress=False)
    assert (rep.runners["swe_agent"].files, rep.runners["swe_agent"].unchanged) == (2, 0)
    lab = Lab.open(lab_dir)
    assert _outcomes(lab) == {"calc__calc-1": ("failure", 0.0), "parser__parser-7": ("success", 1.0)}
    assert query(lab, "select count(*) n from trajectories").to_pylist() == [{"n": 2}]

    rep = ingest([run], lab_dir, workers=1, progress=False)  # nothing changed since
    assert (rep.runners["swe_agent"].files, rep.runners["swe_agent"].unchanged) == (0, 2)
    invariant(Lab.open(lab_dir))


def test_quarantine_rows_of_a_shared_file_stay_with_their_unit(
    run: Path, tmp_path: Path, invariant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each unit that reads a broken shared file quarantines its bad records itself; re-ingesting one
    unit replaces only that unit's rows, so quarantine rows keep matching the sources counts."""
    from trajlab.formats import get_adapter

    adapter = type(get_adapter("swe-agent"))
    original = adapter.parse

    def parse(self, unit, ctx):  # type: ignore[no-untyped-def]
        yield from original(self, unit, ctx)
        shared = unit.primary.parent / "results.json"
        if not shared.exists():
            shared = unit.primary.parent.parent / "results.json"
        ctx.quarantine(shared, f"bad row read for {unit.primary.name}", "schema", b"{}", line=3)

    monkeypatch.setattr(adapter, "parse", parse)
    lab_dir = tmp_path / "lab"
    ingest([run], lab_dir, workers=1, progress=False)
    lab = Lab.open(lab_dir)
    sql = "select unit_path, source_path, reason from quarantine order by unit_path"
    before = query(lab, sql).to_pylist()
    assert [(Path(r["unit_path"]).name, Path(r["source_path"]).name, r["reason"]) for r in before] == [
        ("calc__calc-1.traj", "results.json", "bad row read for calc__calc-1.traj"),
        ("parser__parser-7.traj", "results.json", "bad row read for parser__parser-7.traj"),
    ]
    counts = invariant(lab)
    assert counts["q"] == 2

    # only calc__calc-1's own prediction file changes: its unit alone is re-ingested
    pred = run / "calc__calc-1" / "calc__calc-1.pred"
    _rewrite(pred, pred.read_text() + "\n", 2_000_000_000)
    rep = ingest([run], lab_dir, workers=1, progress=False)
    assert (rep.runners["swe_agent"].files, rep.runners["swe_agent"].unchanged) == (1, 1)
    lab = Lab.open(lab_dir)
    assert query(lab, sql).to_pylist()[1] == before[1]  # the sibling's row is untouched
    assert [Path(r["unit_path"]).name for r in query(lab, sql).to_pylist()] == [
        "calc__calc-1.traj",
        "parser__parser-7.traj",
    ]
    assert invariant(lab) == counts
