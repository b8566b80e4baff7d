"""Every command and subcommand has help text and is shown in the README or docs/ as `trajlab ...`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click

from trajlab.cli import cli

REPO = Path(__file__).resolve().parents[2]


def _commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        full = f"{prefix} {name}".strip()
        yield full, cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, full)


def test_every_command_has_help_and_is_documented() -> None:
    docs = "\n".join(
        p.read_text(encoding="utf-8") for p in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    )
    commands = dict(_commands(cli))
    assert len(commands) > 30  # the lazy group really loaded its command modules
    no_help = [name for name, cmd in commands.items() if not (cmd.help or "").strip()]
    undocumented = [name for name in commands if f"trajlab {name}" not in docs]
    assert no_help == [] and undocumented == [], (no_help, undocumented)
