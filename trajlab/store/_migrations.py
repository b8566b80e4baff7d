"""Ordered, named schema migrations, applied when an older lab is opened.

Each migration upgrades a lab from one schema version to the next inside a write transaction and
is recorded by name in the manifest. Parquet parts written by older versions stay readable: readers
always use the current schema, so columns added later read as nulls.
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


def apply_migrations(txn: Transaction) -> list[str]:
    manifest = txn.lab.manifest
    applied = []
    version = manifest.schema_version
    for from_version, name, fn in MIGRATIONS:
        if from_version >= version and name not in manifest.migrations:
            fn(txn)
            manifest.migrations.append(name)
            applied.append(name)
    manifest.schema_version = SCHEMA_VERSION
    txn.summary["migrations"] = applied
    return applied
