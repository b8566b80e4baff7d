from __future__ import annotations

from pathlib import Path

import pytest
from analysis_labs import LabBuilder


@pytest.fixture()
def builder(tmp_path: Path) -> LabBuilder:
    """An empty lab builder writing to a fresh folder."""
    return LabBuilder(tmp_path / "lab")
