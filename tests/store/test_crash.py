"""Atomic commits: a failure or a killed writer mid-commit leaves the previous generation readable,
and the next writer cleans up (or rolls the folders forward to a manifest that did get written)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest

from trajlab.errors import LabError
from trajlab.store import Lab, _publish
from trajlab.store import _transaction as transaction_module

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def qrows(n: int, prefix: str) -> list[dict]:
    return [
        {"source_path": f"{prefix}{i}", "reason": "r", "error_type": "json", "ingested_at": NOW}
        for i in range(n)
    ]


def glob_sources(lab: Lab) -> list[str]:
    rel = duckdb.sql(f"select source_path from read_parquet('{lab.root}/quarantine/*.parquet') order by 1")
    return [r[0] for r in rel.fetchall()]


def base_lab(tmp_path: Path) -> Lab:
    lab = Lab.open(tmp_path / "lab", create=True)
    lab.append("quarantine", qrows(2, "old"))
    return lab


def run_killed(lab_dir: Path, patch: str) -> int:
    """Run a writer in a subprocess that SIGKILLs itself at the patched point; return its exit code."""
    code = textwrap.dedent(
        f"""
        import os, signal
        from trajlab.store import Lab, _publish, _transaction
        from datetime import datetime, timezone
        def die(*a, **k):
            os.kill(os.getpid(), signal.SIGKILL)
        {patch} = die
        lab = Lab.open({str(lab_dir)!r})
        now = datetime.now(timezone.utc)
        with lab.write("doomed") as txn:
            txn.append("quarantine", [{{"source_path": "new", "reason": "r", "error_type": "json", "ingested_at": now}}])
            txn.delete("quarantine", "source_path", ["old0"])
        """
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120).returncode


def test_exception_between_part_moves_and_manifest_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab = base_lab(tmp_path)

    def boom(*a: object, **k: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(transaction_module, "write_manifest", boom)
    with pytest.raises(OSError, match="disk full"), lab.write("fails") as txn:
        txn.append("quarantine", qrows(3, "new"))
        txn.delete("quarantine", "source_path", ["old0"])
    monkeypatch.undo()
    assert lab.generation == 1
    fresh = Lab.open(lab.root)
    assert fresh.generation == 1
    assert sorted(fresh.read("quarantine").column("source_path").to_pylist()) == ["old0", "old1"]
    assert glob_sources(fresh) == ["old0", "old1"]
    # the half-built generation was removed on the way out
    assert sorted(p.name for p in (lab.root / ".gen" / "quarantine").iterdir()) == ["g000001"]
    with fresh.write("next") as txn:
        txn.append("quarantine", qrows(1, "later"))
    assert fresh.generation == 2
    assert sorted(fresh.read("quarantine").column("source_path").to_pylist()) == ["later0", "old0", "old1"]


def test_killed_before_the_manifest_switch(tmp_path: Path) -> None:
    lab = base_lab(tmp_path)
    rc = run_killed(lab.root, "_transaction.write_manifest")
    assert rc == -signal.SIGKILL
    # leftovers of the dead writer: its staging folder and its unpublished generation folder
    assert (lab.root / ".gen" / "quarantine" / "g000002").is_dir()
    # readers (through the manifest, and globbing the table folder) still see generation 1
    fresh = Lab.open(lab.root)
    assert fresh.generation == 1
    assert sorted(fresh.read("quarantine").column("source_path").to_pylist()) == ["old0", "old1"]
    assert glob_sources(fresh) == ["old0", "old1"]
    # the next writer cleans up and commits generation 2 for real
    with fresh.write("next") as txn:
        txn.append("quarantine", qrows(1, "later"))
    assert fresh.generation == 2
    assert sorted(fresh.read("quarantine").column("source_path").to_pylist()) == ["later0", "old0", "old1"]
    assert glob_sources(fresh) == ["later0", "old0", "old1"]
    assert not list((lab.root / "_staging").glob("*"))


def test_killed_after_the_manifest_switch_rolls_forward(tmp_path: Path) -> None:
    lab = base_lab(tmp_path)
    rc = run_killed(lab.root, "_publish.switch")
    assert rc == -signal.SIGKILL
    fresh = Lab.open(lab.root)
    assert fresh.generation == 2  # the manifest was replaced: the commit happened
    assert sorted(fresh.read("quarantine").column("source_path").to_pylist()) == ["new", "old1"]
    # a glob reader still sees the whole previous generation until a writer rolls the symlink forward
    assert glob_sources(fresh) == ["old0", "old1"]
    with fresh.write("next"):
        pass
    assert glob_sources(fresh) == ["new", "old1"]
    assert os.readlink(lab.root / "quarantine") == os.path.join(_publish.GEN, "quarantine", "g000002")


def test_exclusive_repairs_a_writer_killed_after_the_manifest_switch(tmp_path: Path) -> None:
    """A caller that takes the lock and then writes nothing (an ingest with nothing new) still rolls
    the symlinks forward and removes the dead writer's staging folder."""
    lab = base_lab(tmp_path)
    assert run_killed(lab.root, "_publish.switch") == -signal.SIGKILL
    assert list((lab.root / "_staging").iterdir())  # the dead writer's staging folder
    with Lab.open(lab.root).exclusive() as held:
        assert held.generation == 2
    assert glob_sources(lab) == ["new", "old1"]
    assert os.readlink(lab.root / "quarantine") == os.path.join(_publish.GEN, "quarantine", "g000002")
    assert not list((lab.root / "_staging").glob("*"))
    assert sorted(p.name for p in (lab.root / ".gen" / "quarantine").iterdir()) == ["g000002"]


KILL_AT_MANIFEST_SWITCH = """
import os, signal
from trajlab.store import Lab
real_replace = os.replace
def replace(src, dst, *a, **k):
    if str(dst).endswith("lab.json"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real_replace(src, dst, *a, **k)
os.replace = replace
"""


def _killed_when_lab_json_is_replaced(body: str) -> None:
    """Run `body` in a child that is killed (SIGKILL) as it renames a new lab.json into place: the
    temporary manifest is complete, the rename not done."""
    code = KILL_AT_MANIFEST_SWITCH + textwrap.dedent(body)
    rc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120).returncode
    assert rc == -signal.SIGKILL


def test_a_manifest_left_half_written_by_a_killed_writer_is_removed(tmp_path: Path) -> None:
    lab = base_lab(tmp_path)
    # killed while the new lab.json is written: its temporary file is complete, the rename not done
    _killed_when_lab_json_is_replaced(
        f"""
        from datetime import datetime, timezone
        lab = Lab.open({str(lab.root)!r})
        now = datetime.now(timezone.utc)
        with lab.write("doomed") as txn:
            txn.append("quarantine", [{{"source_path": "new", "reason": "r", "error_type": "json", "ingested_at": now}}])
        """
    )
    assert [p.name for p in lab.root.glob(".lab.json.*.tmp")]  # the dead writer's temporary manifest
    fresh = Lab.open(lab.root)
    assert fresh.generation == 1
    with fresh.write("next") as txn:
        txn.append("quarantine", qrows(1, "later"))
    assert fresh.generation == 2
    assert list(lab.root.glob(".lab.json.*.tmp")) == []
    with Lab.open(lab.root).exclusive():
        pass
    assert sorted(fresh.read("quarantine").column("source_path").to_pylist()) == ["later0", "old0", "old1"]


def test_a_lab_whose_creation_was_killed_before_its_manifest_can_be_created_again(tmp_path: Path) -> None:
    """Killed while `Lab.create` writes the first lab.json: the folder holds the lock file and the
    temporary manifest, which is no reason to call it a non-empty folder that is not a lab."""
    root = tmp_path / "lab"
    _killed_when_lab_json_is_replaced(f"Lab.open({str(root)!r}, create=True)")
    assert not (root / "lab.json").exists() and list(root.glob(".lab.json.*.tmp"))
    lab = Lab.open(root, create=True)
    assert lab.generation == 0 and (root / "lab.json").exists()
    assert sorted(os.listdir(root)) == [".lock", "lab.json"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    with pytest.raises(LabError, match="not empty"):  # a folder holding anything else is still refused
        Lab.open(other, create=True)
