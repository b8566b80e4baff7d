"""trajlab: process-level trajectory analysis for AI coding agents."""

import os as _os

from ._version import __version__

if _os.environ.get("TRAJLAB_PURE_PYTHON"):  # run the mypyc-compiled modules from their Python source
    from ._compiled import use_python_source

    use_python_source()

__all__ = ["__version__"]
