"""`python -m trajlab.compiled`: which of trajlab's modules run compiled by mypyc (see `_compiled`)."""

import sys

from ._compiled import COMPILED_MODULES, compiled_status, is_compiled, main, use_python_source

__all__ = ["COMPILED_MODULES", "compiled_status", "is_compiled", "use_python_source"]

if __name__ == "__main__":
    sys.exit(main())
