"""A lab with some tables hidden: what a blind reviewer's dashboard reads.

Blind review hides the judge's labels from the reviewer, not only on the label form but in every
figure, analysis and SQL panel. Rather than teach each of them about blind mode, they get a `Lab`
whose manifest does not list the hidden tables: reads, row counts, `has()` and DuckDB views all see
those tables as absent (empty, with their schema). Such a lab cannot write: a writer re-reads the
real manifest, and one that only saw part of it must not commit anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from ..errors import LabError
from ..schema import TABLES
from ._lab import Lab, Transaction
from ._manifest import Manifest, read_manifest


def _without(manifest: Manifest, hidden: frozenset[str]) -> Manifest:
    return dataclasses.replace(manifest, tables={k: v for k, v in manifest.tables.items() if k not in hidden})


class HidingLab(Lab):
    """`lab.hiding(tables)`: the lab at its current generation with `tables` read as empty."""

    def __init__(self, root: Path, manifest: Manifest, hidden: Iterable[str]):
        self.hidden = frozenset(hidden)
        unknown = sorted(self.hidden - set(TABLES))
        if unknown:
            raise LabError(
                f"unknown table(s) to hide: {', '.join(unknown)}; known tables: {', '.join(TABLES)}"
            )
        super().__init__(root, _without(manifest, self.hidden))

    def refresh(self) -> HidingLab:
        self.manifest = _without(read_manifest(self.root), self.hidden)
        return self

    def hiding(self, tables: Iterable[str]) -> HidingLab:
        return HidingLab(self.root, self.manifest, self.hidden | frozenset(tables))

    def _refuse(self, operation: str) -> NoReturn:
        raise LabError(
            f"{self.root}: {operation!r} cannot run on a view of the lab with "
            f"{', '.join(sorted(self.hidden))} hidden (open the lab itself to write)"
        )

    @contextmanager
    def exclusive(self, wait_s: float | None = None) -> Iterator[Lab]:
        self._refuse("exclusive")
        yield self  # pragma: no cover

    @contextmanager
    def write(self, operation: str, wait_s: float | None = None) -> Iterator[Transaction]:
        self._refuse(operation)
        yield  # pragma: no cover
