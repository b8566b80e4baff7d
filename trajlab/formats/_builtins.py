"""Registers the built-in adapters, exactly as a third-party plugin would."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ._base import Adapter
from ._registry import hookimpl

# module (trajlab.formats.<module>) -> adapter classes it defines; one module per runner format.
BUILTIN_ADAPTERS: dict[str, tuple[str, ...]] = {
    "codex_rollout": ("CodexRolloutAdapter",),
    "codex_exec_json": ("CodexExecJsonAdapter",),
    "claude_code": ("ClaudeCodeAdapter",),
    "claude_stream_json": ("ClaudeStreamJsonAdapter",),
    "atif": ("AtifAdapter",),
    "terminal_bench": ("TerminalBenchAdapter",),
    "openhands": ("OpenHandsAdapter",),
    "swe_agent": ("SweAgentAdapter",),
    "mini_swe_agent": ("MiniSweAgentAdapter",),
    "inspect_ai": ("InspectEvalAdapter", "InspectJsonAdapter"),
    "chat_messages": ("ChatMessagesAdapter",),
    "otel_genai": ("OtelGenAiAdapter",),
    "llm_in_sandbox": ("LlmInSandboxAdapter",),
    "kira": ("KiraAdapter",),
    "who_and_when": ("WhoAndWhenAdapter",),
}


@hookimpl
def register_adapters(register: Callable[[type[Adapter]], None]) -> None:
    """Import every built-in adapter module; a broken or missing one raises (the registry re-raises
    built-in failures instead of downgrading them to a plugin warning)."""
    for module, classes in BUILTIN_ADAPTERS.items():
        mod = importlib.import_module(f"trajlab.formats.{module}")
        for cls in classes:
            register(getattr(mod, cls))
