"""Adapter registry. Built-in adapters register through the same pluggy hook as plugins do.

A plugin package exposes a module under the `trajlab` entry-point group with::

    from trajlab.formats import hookimpl

    @hookimpl
    def register_adapters(register):
        register(MyAdapter)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pluggy

from ._base import Adapter

hookspec = pluggy.HookspecMarker("trajlab")
hookimpl = pluggy.HookimplMarker("trajlab")
BUILTINS = "trajlab.builtins"  # plugin name of the built-in adapters


class AdapterSpecs:
    @hookspec
    def register_adapters(self, register: Callable[[type[Adapter]], None]) -> None:
        """Call `register(AdapterClass)` once per adapter the plugin provides."""


@cache
def plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("trajlab")
    pm.add_hookspecs(AdapterSpecs)
    from . import _builtins

    pm.register(_builtins, name=BUILTINS)
    pm.load_setuptools_entrypoints("trajlab")
    return pm


_LOAD_ERRORS: list[str] = []


@cache
def adapters() -> tuple[Adapter, ...]:
    """Every registered adapter, most specific first.

    A third-party plugin whose hook fails (a broken import, a missing class) is reported by
    `load_errors()` and a warning; the adapters registered before the failure, and every other
    plugin's, stay available. A failure of the built-in adapters is a bug in trajlab: it raises.
    """
    return collect_adapters(plugin_manager().hook.register_adapters.get_hookimpls(), _LOAD_ERRORS)


def collect_adapters(hookimpls: list[pluggy.HookImpl], errors: list[str]) -> tuple[Adapter, ...]:
    """Run the plugins' hooks; third-party failures are appended to `errors` (and warned about)."""
    found: list[type[Adapter]] = []

    def register(cls: type[Adapter]) -> None:
        if not cls.name or not cls.runner:
            raise ValueError(f"adapter {cls!r} must set name and runner")
        if any(c.name == cls.name for c in found):
            raise ValueError(f"two adapters are named {cls.name!r}")
        found.append(cls)

    for impl in hookimpls:
        if impl.plugin_name == BUILTINS:
            impl.function(register=register)
            continue
        try:
            impl.function(register=register)
        except Exception as e:  # one broken plugin must not disable the others
            msg = f"adapter plugin {impl.plugin_name!r} failed to register: {type(e).__name__}: {e}"
            errors.append(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
    return tuple(sorted((cls() for cls in found), key=lambda a: (a.priority, a.name)))


def load_errors() -> list[str]:
    """Problems met while registering adapter plugins (empty when all loaded)."""
    adapters()
    return list(_LOAD_ERRORS)


def get_adapter(name: str) -> Adapter:
    for a in adapters():
        if a.name == name:
            return a
    raise KeyError(f"no adapter named {name!r}; known: {', '.join(a.name for a in adapters())}")


def candidate_extensions() -> tuple[str, ...]:
    return tuple(sorted({e for a in adapters() for e in a.extensions}))


def detect(path: Path, head_bytes: bytes) -> tuple[Adapter | None, list[str]]:
    """The adapter that recognises the file, or None and the list of what was tried and why not."""
    tried: list[str] = []
    for a in adapters():
        if not a.matches_extension(path):
            continue
        try:
            if a.sniff(path, head_bytes):
                return a, tried
        except Exception as e:  # a buggy sniff must not stop discovery
            tried.append(f"{a.name}: sniff failed ({type(e).__name__}: {e})")
            continue
        tried.append(f"{a.name}: {a.why_not(path, head_bytes)}")
    return None, tried
