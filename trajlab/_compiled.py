"""Which of trajlab's modules run compiled by mypyc (`python -m trajlab.compiled` prints it).

The per-record and per-step modules below are compiled into C extensions at install time when a C
compiler is there (`setup.py` reads this list); the same source runs as plain Python otherwise, or
when installed with TRAJLAB_PURE_PYTHON=1; with TRAJLAB_PURE_PYTHON=1 at run time an installed build
imports the Python source instead. Both give the same rows: the test suite runs on either.
This file imports nothing from trajlab at module level, so the build can read it without the package's
dependencies.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from collections.abc import Sequence

__all__ = ["COMPILED_MODULES", "compiled_status", "is_compiled", "main", "use_python_source"]

COMPILED_MODULES: tuple[str, ...] = (
    # ingest: the shared reader and row finishing, and the adapters of the formats that carry the volume
    "trajlab.formats._base",
    "trajlab.formats._read",
    "trajlab.formats._finish",
    "trajlab.formats._safe",
    "trajlab.formats._scan",
    "trajlab.formats._typed",
    "trajlab.formats.codex_rollout",
    "trajlab.formats.claude_code",
    # tool normalization (ingest) and shell parsing (ingest and DAG)
    "trajlab.normalize._lexicon",
    "trajlab.normalize._resolve",
    "trajlab.normalize._shell",
    "trajlab.normalize._tools",
    # the step-DAG builder
    "trajlab.dag._analyze",
    "trajlab.dag._answer",
    "trajlab.dag._build",
    "trajlab.dag._candidates",
    "trajlab.dag._index",
    "trajlab.dag._model",
    "trajlab.dag._nodes",
    "trajlab.dag._programs",
    "trajlab.dag._scan",
    "trajlab.dag._shellio",
    "trajlab.dag._stepio",
    "trajlab.dag._structure",
    "trajlab.dag._tokens",
)


def is_compiled(module: str) -> bool:
    """True if `module` was loaded from a C extension (mypyc) rather than from its `.py` source."""
    mod = importlib.import_module(module)
    path = getattr(mod, "__file__", None) or ""
    return path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


class _SourceFinder:
    """Finds the listed modules' `.py` sources, ahead of their compiled extensions."""

    def __init__(self, names: frozenset[str]):
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        loaders = [(importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)]
        for entry in path or sys.path:
            spec = importlib.machinery.FileFinder(entry, *loaders).find_spec(fullname)
            if spec is not None:
                return spec
        return None


def use_python_source() -> None:
    """Import the compiled modules from their Python source from now on (TRAJLAB_PURE_PYTHON=1 does it
    when trajlab is first imported): for tracebacks and profilers that show Python lines, and to run
    the tests on either build. Modules already imported stay as they are."""
    if not any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFinder(frozenset(COMPILED_MODULES)))


def compiled_status() -> dict[str, bool]:
    return {m: is_compiled(m) for m in COMPILED_MODULES}


def main() -> int:
    status = compiled_status()
    n = sum(status.values())
    for m, c in status.items():
        print(f"{'compiled' if c else 'Python  '}  {m}")
    print(f"{n} of {len(status)} modules compiled")
    return 0
