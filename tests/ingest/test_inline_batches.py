"""One worker: each batch's parts are finished on its writer thread while the next batch parses."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajlab.errors import LabError
from trajlab.ingest import ingest
from trajlab.store import Lab, query

CODEX = "codex/rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-000000000001.jsonl"
Q = "select trajectory_id, n_steps, n_tool_calls, input_tokens from trajectories order by 1"


def _copies(runs: Path, n: int) -> None:
    for i in range(n):  # distinct units (ids differ), so that they are not duplicates
        data = (runs / "codex" / Path(CODEX).name).read_bytes()
        data = data.replace(b"0199aaaa-1111", f"0199aaaa-{i:04d}".encode())
        (runs / "codex" / f"rollout-copy-{i}.jsonl").write_bytes(data)


def _one_unit_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    import trajlab.ingest._run as run

    monkeypatch.setattr(run, "BATCH_BYTES", 1)
    monkeypatch.setattr(run, "MIN_BATCH_BYTES", 1)


def test_many_batches_give_the_same_lab(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, invariant
) -> None:
    _copies(runs, 4)
    whole = ingest([runs], tmp_path / "whole", workers=1, progress=False)
    _one_unit_per_batch(monkeypatch)
    split = ingest([runs], tmp_path / "split", workers=1, progress=False)
    assert whole.totals == split.totals and split.totals.trajectories == 6
    lab = Lab.open(tmp_path / "split")
    assert query(Lab.open(tmp_path / "whole"), Q).to_pylist() == query(lab, Q).to_pylist()
    invariant(lab)
    # every batch's parts were adopted: as many steps as the one-batch lab
    n = "select count(*) n from steps"
    assert query(lab, n).to_pylist() == query(Lab.open(tmp_path / "whole"), n).to_pylist()


def test_a_failing_batch_write_fails_the_ingest_and_commits_nothing(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trajlab.ingest._worker as worker

    _copies(runs, 3)
    _one_unit_per_batch(monkeypatch)
    real = worker.fsync_file
    calls = []

    def fsync(path: Path) -> None:
        calls.append(path)
        if len(calls) == 3:  # a part of the second batch (each batch writes trajectories + steps)
            raise OSError(28, "No space left on device")
        real(path)

    monkeypatch.setattr(worker, "fsync_file", fsync)
    with pytest.raises(LabError, match="lab: No space left on device; the lab was not created"):
        ingest([runs], tmp_path / "lab", workers=1, progress=False)
    assert not (tmp_path / "lab").exists()  # the lab this ingest created held no commit: removed again
    monkeypatch.setattr(worker, "fsync_file", real)
    rep = ingest([runs], tmp_path / "lab", workers=1, progress=False)  # the next run ingests everything
    assert rep.totals.trajectories == 5
