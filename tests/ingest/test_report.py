"""The ingest summary's invariant line: records seen = ingested + quarantined for every runner, and
which runners break it when one does."""

from __future__ import annotations

from pathlib import Path

from trajlab.ingest._report import IngestReport, RunnerSummary


def _report(**runners: tuple[int, int, int]) -> IngestReport:
    rep = IngestReport(lab=Path("lab"))
    for name, (seen, ingested, quarantined) in runners.items():
        rep.runners[name] = RunnerSummary(
            files=1, records_seen=seen, records_ingested=ingested, records_quarantined=quarantined
        )
    return rep


def test_the_summary_says_whether_the_invariant_holds() -> None:
    ok = _report(codex=(10, 9, 1), claude=(5, 5, 0))
    assert ok.invariant_holds
    assert "records seen 15 = ingested 14 + quarantined 1 (holds)" in ok.format().splitlines()
    # an adapter that counted a record as seen but neither ingested nor quarantined it
    bad = _report(codex=(10, 9, 1), toy=(3, 1, 1))
    assert not bad.invariant_holds
    assert bad.unbalanced == ["toy"]
    assert "records seen 13 = ingested 10 + quarantined 2 (VIOLATED by toy)" in bad.format().splitlines()
    # runners off in opposite directions add up in the totals, but each is still caught
    hidden = _report(a=(3, 1, 1), b=(1, 1, 1), c=(2, 2, 0))
    assert (hidden.records_seen, hidden.records_ingested + hidden.records_quarantined) == (6, 6)
    assert not hidden.invariant_holds and hidden.unbalanced == ["a", "b"]
    assert "records seen 6 = ingested 4 + quarantined 2 (VIOLATED by a, b)" in hidden.format().splitlines()
