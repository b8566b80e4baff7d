from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from trajlab.store import Lab, query

CODEX = "codex/rollout-2026-03-02T10-00-00-0199aaaa-1111-7000-8000-000000000001.jsonl"
CLAUDE_DIR = "claude_code/-work-task"


@pytest.fixture()
def runs(tmp_path: Path, fixtures_dir: Path) -> Path:
    """A folder with one Codex rollout and one Claude Code session (with its sub-agent files)."""
    root = tmp_path / "runs"
    (root / "codex").mkdir(parents=True)
    shutil.copy(fixtures_dir / CODEX, root / "codex" / Path(CODEX).name)
    shutil.copytree(fixtures_dir / CLAUDE_DIR, root / "claude")
    return root


def assert_invariant(lab: Lab) -> dict[str, int]:
    """records seen = ingested + quarantined, from the sources table, and quarantine rows match."""
    (row,) = query(
        lab,
        "select sum(records_seen) seen, sum(records_ingested) ingested, sum(records_quarantined) q "
        "from sources where status <> 'duplicate'",
    ).to_pylist()
    (n_quarantine,) = query(lab, "select count(*) n from quarantine").column("n").to_pylist()
    assert row["seen"] == row["ingested"] + row["q"]
    assert n_quarantine == row["q"]
    return row


@pytest.fixture()
def invariant() -> Callable[[Lab], dict[str, int]]:
    return assert_invariant
