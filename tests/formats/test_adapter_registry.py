"""Adapter registration: every built-in adapter is listed; a broken built-in fails loudly, a broken
third-party plugin is reported and leaves the others available."""

from __future__ import annotations

from collections.abc import Callable

import pluggy
import pytest
from click.testing import CliRunner

from trajlab.cli import cli
from trajlab.formats import Adapter, _builtins, adapters, hookimpl, load_errors
from trajlab.formats._registry import BUILTINS, AdapterSpecs, collect_adapters

EXPECTED = [
    "atif",
    "chat-messages",
    "claude-code",
    "claude-stream-json",
    "codex-exec-json",
    "codex-rollout",
    "inspect-eval",
    "inspect-json",
    "kira",
    "llm-in-sandbox",
    "mini-swe-agent",
    "openhands",
    "otel-genai",
    "swe-agent",
    "terminal-bench",
    "who-and-when",
]


def _hookimpls(*plugins: tuple[object, str]) -> list[pluggy.HookImpl]:
    pm = pluggy.PluginManager("trajlab")
    pm.add_hookspecs(AdapterSpecs)
    pm.register(_builtins, name=BUILTINS)
    for plugin, name in plugins:
        pm.register(plugin, name=name)
    return pm.hook.register_adapters.get_hookimpls()


def test_every_builtin_adapter_is_registered_and_listed() -> None:
    assert sorted(a.name for a in adapters()) == EXPECTED
    assert sum(len(c) for c in _builtins.BUILTIN_ADAPTERS.values()) == len(EXPECTED)
    assert load_errors() == []
    out = CliRunner().invoke(cli, ["formats"])
    assert out.exit_code == 0, out.output
    listed = [line.split()[0] for line in out.output.splitlines()]
    assert sorted(listed) == EXPECTED


def test_a_missing_builtin_module_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_builtins.BUILTIN_ADAPTERS, "no_such_adapter", ("NoSuchAdapter",))
    with pytest.raises(ModuleNotFoundError, match=r"trajlab\.formats\.no_such_adapter"):
        collect_adapters(_hookimpls(), [])


def test_a_missing_builtin_class_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_builtins.BUILTIN_ADAPTERS, "kira", ("KiraAdapter", "KiraTypoAdapter"))
    with pytest.raises(AttributeError, match="KiraTypoAdapter"):
        collect_adapters(_hookimpls(), [])


class _BrokenPlugin:
    @hookimpl
    def register_adapters(self, register: Callable[[type[Adapter]], None]) -> None:
        raise ImportError("cannot import name 'Thing' from 'someone_elses_plugin'")


def test_a_broken_third_party_plugin_is_reported_not_fatal() -> None:
    errors: list[str] = []
    with pytest.warns(RuntimeWarning, match=r"'broken-plugin' failed to register"):
        found = collect_adapters(_hookimpls((_BrokenPlugin(), "broken-plugin")), errors)
    assert sorted(a.name for a in found) == EXPECTED
    assert errors == [
        "adapter plugin 'broken-plugin' failed to register: ImportError: "
        "cannot import name 'Thing' from 'someone_elses_plugin'"
    ]
