"""The mypyc build: which modules it compiles, that CI really got them compiled, and the pure-Python switch."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from trajlab.compiled import COMPILED_MODULES, compiled_status, is_compiled

REPO = Path(__file__).resolve().parents[1]


def test_every_listed_module_has_its_source_and_setup_compiles_that_list() -> None:
    for m in COMPILED_MODULES:
        assert (REPO / (m.replace(".", "/") + ".py")).is_file(), m
    # setup.py reads the list from trajlab/_compiled.py without importing trajlab
    listed = runpy.run_path(str(REPO / "trajlab" / "_compiled.py"))["COMPILED_MODULES"]
    assert tuple(listed) == COMPILED_MODULES


@pytest.mark.skipif(
    not os.environ.get("TRAJLAB_REQUIRE_COMPILED"), reason="TRAJLAB_REQUIRE_COMPILED is not set (CI sets it)"
)
def test_the_build_compiled_every_listed_module() -> None:
    """CI installs with a C compiler: a build that silently fell back to Python must fail here."""
    status = compiled_status()
    assert all(status.values()), [m for m, c in status.items() if not c]


def test_trajlab_pure_python_imports_the_sources() -> None:
    code = (
        "import trajlab.compiled as c, trajlab.formats.codex_rollout as m; "
        "print(sum(c.compiled_status().values()), m.__file__.endswith('.py'))"
    )
    env = {**os.environ, "TRAJLAB_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "True"]


def test_is_compiled_tells_an_extension_from_source() -> None:
    assert is_compiled("trajlab.compiled") is False  # never compiled
    assert is_compiled("orjson.orjson") is True  # a C extension
