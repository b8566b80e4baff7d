from __future__ import annotations

from pathlib import Path

import pytest
from figures_labs import build_lab

from trajlab.store import Lab


@pytest.fixture(scope="module")
def fig_lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    """The hand-built lab of figures_labs (shared by a module's tests; figures only read it)."""
    return build_lab(tmp_path_factory.mktemp("figlab") / "lab")


@pytest.fixture()
def bare_lab(tmp_path: Path) -> Lab:
    """The same runs without token counts, difficulty levels or labels."""
    return build_lab(tmp_path / "bare", tokens_on=False, difficulty_on=False, labels_on=False)
