"""Registers the built-in adapters, exactly as a third-party plugin would."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ._base import Adapter
from ._registry import hookimpl

# module name -> adapter class name; one module per runner format.
BUILTIN_ADAPTERS: dict[str, str] = {
    "codex_rollout": "CodexRolloutAdapter",
    "claude_code": "ClaudeCodeAdapter",
}


@hookimpl
def register_adapters(register: Callable[[type[Adapter]], None]) -> None:
    for module, cls in BUILTIN_ADAPTERS.items():
        mod = importlib.import_module(f"trajlab.formats.{module}")
        register(getattr(mod, cls))
