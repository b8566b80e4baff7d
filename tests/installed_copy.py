"""Run code against a copy of the package laid out as a wheel installs it: outside the repository,
links resolved, no compiled leftovers."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_in_installed_copy(tmp_path: Path, code: str) -> list[str]:
    """The words `code` prints, run by this Python with only the copy on its path, in `tmp_path`."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "trajlab", site / "trajlab", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    out = subprocess.run(
        [sys.executable, "-c", "import trajlab; print(trajlab.__file__); " + code],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    where, *words = out.stdout.split()
    assert where.startswith(str(site))  # the copy was imported, not the checkout
    return words
