"""Ctrl-C anywhere in a command exits 130 with one line, not click's "Aborted!" with status 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from trajlab.cli import cli


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def test_ctrl_c_while_ingest_looks_for_files_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the transaction starts (while discovering files) ingest has no "kept so far" to report."""
    import trajlab.ingest._run as run

    monkeypatch.setattr(run, "discover", _interrupt)
    (tmp_path / "runs").mkdir()
    res = CliRunner().invoke(cli, ["ingest", str(tmp_path / "runs"), "--out", str(tmp_path / "lab"), "-q"])
    assert res.exit_code == 130, res.output
    assert res.output.strip().splitlines()[-1] == "interrupted" and "Aborted" not in res.output
