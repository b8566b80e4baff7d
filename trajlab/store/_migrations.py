"""Ordered, named schema migrations, applied when an older lab is opened.

Each migration upgrades a lab from one schema version to the next inside a write transaction and
is recorded by name in the manifest. Parquet parts written by older versions stay readable: readers
always use the current schema, so columns added later read as nulls. A version that only adds columns
(v2: `steps.tool_seq`) needs no migration: opening such a lab writes nothing (it may be read-only), and
its next write records the current version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from ._lab import Transaction

Migration = tuple[int, str, "Callable[[Transaction], None]"]

MIGRATIONS: list[Migration] = [
    # (from_version, name, function) -- none yet: v1 is the first released schema.
]


def pending_migrations(version: int, done: list[str]) -> list[Migration]:
    """The migrations a lab at schema `version` that already ran `done` still needs, in order."""
    return [m for m in MIGRATIONS if m[0] >= version and m[1] not in done]


def apply_migrations(txn: Transaction) -> list[str]:
    manifest = txn.lab.manifest
    applied = []
    version = manifest.schema_version
    for _, name, fn in pending_migrations(version, manifest.migrations):
        fn(txn)
        manifest.migrations.append(name)
        applied.append(name)
    manifest.schema_version = SCHEMA_VERSION
    txn.summary["migrations"] = applied
    return applied
