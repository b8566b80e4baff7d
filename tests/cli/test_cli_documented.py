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


def test_the_registry_summaries_are_the_commands_own_help() -> None:
    """`trajlab --help` lists the registry's summaries without loading the commands: each must be
    its command's own first help sentence, so that the two never drift apart."""
    from trajlab.cli import COMMANDS

    ctx = click.Context(cli)
    for name, (_target, summary) in COMMANDS.items():
        cmd = cli.get_command(ctx, name)
        assert cmd is not None and cmd.get_short_help_str(limit=10_000) == summary, name


def test_top_level_help_loads_no_command_module() -> None:
    """It imported every command module and the libraries behind them (scipy, openai, dash, duckdb):
    about 3 s on this machine for a list of names. (`trajlab.cli._tty`, stdlib only, guards stdout.)"""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from trajlab.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('scipy', 'openai', 'dash', 'duckdb', 'pandas', 'pyarrow', 'trajlab.cli.')\n"
        "loaded = [m for m in sys.modules if m.startswith(heavy) and m != 'trajlab.cli._tty']\n"
        "print(sorted({m if m.startswith('trajlab') else m.split('.')[0] for m in loaded}))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Commands:" in r.stdout and "ingest " in r.stdout and "  skills " in r.stdout
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout.strip().splitlines()[-1]
