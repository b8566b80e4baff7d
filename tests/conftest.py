from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _corpus() -> Path:
    env = os.environ.get("TRAJLAB_CORPUS")
    return Path(env) if env else REPO.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus of real runner files; tests using it are skipped when it is absent."""
    d = _corpus()
    if not d.is_dir():
        pytest.skip(f"corpus not present at {d} (set TRAJLAB_CORPUS)")
    return d


@pytest.fixture()
def fixtures_dir() -> Path:
    return FIXTURES
