"""Build hook: trajlab's per-record and per-step modules compiled with mypyc.

mypyc turns the same type-annotated Python into C extension modules (`mypy` checks the package with the
same annotations, so nothing is written twice). Ingest's adapters, tool normalization and the step-DAG
builder run 1.3-1.6x faster compiled (docs/performance.md). Everything else of the project's metadata
is in pyproject.toml.

The compiled modules need a C compiler and Python's headers at install time. Without them, or with
TRAJLAB_PURE_PYTHON=1 in the environment, trajlab installs as plain Python and behaves the same:
`python -m trajlab.compiled` says which modules run compiled.
"""

from __future__ import annotations

import os
import runpy
import sys

from setuptools import setup

# The list of compiled modules lives in trajlab/_compiled.py (which imports nothing at module level).
COMPILED = [
    m.replace(".", "/") + ".py"
    for m in runpy.run_path(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "trajlab", "_compiled.py")
    )["COMPILED_MODULES"]
]


def ext_modules() -> list:
    if os.environ.get("TRAJLAB_PURE_PYTHON"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # an install that did not bring the build requirements: plain Python
        print("trajlab: mypyc is not available; installing as plain Python", file=sys.stderr)
        return []
    # The modules share one C runtime library, the top-level module `trajlab__mypyc` (an editable
    # install maps it next to the package).
    # The build's own type check: the build environment has mypy but not trajlab's dependencies, so
    # their types are unknown (Any) there; the modules not compiled are followed silently (the project's
    # `mypy` checks them with every dependency installed), and no cache is read, so that a developer's
    # build and a fresh one see the same types.
    flags = ["--ignore-missing-imports", "--follow-imports=silent", "--no-warn-unused-ignores"]
    flags.append(f"--cache-dir={os.devnull}")
    extensions = mypycify([*flags, *COMPILED], opt_level="3", debug_level="0", group_name="trajlab")
    for ext in extensions:
        ext.optional = True  # no working C compiler: a warning, and these modules stay plain Python
    return extensions


setup(ext_modules=ext_modules())
