"""Publishing a generation so that plain Parquet readers also see each table switch atomically.

Each table generation is an immutable folder `LAB/.gen/<table>/g<generation>/` holding exactly the
table's parts (kept parts are hard links into the new folder, so nothing is copied), and
`LAB/<table>` is a relative symlink to the current one. The manifest lists the parts by their path
inside the generation folders. A commit:

1. builds the new folders next to the old ones (invisible to every reader);
2. replaces `lab.json` with one rename: the commit point for trajlab and anything reading the manifest;
3. swaps each table's symlink with one rename: the commit point for readers that glob
   `LAB/steps/*.parquet`, who see the old table or the new one, never a mix;
4. deletes folders older than the previous generation (the previous one stays until the next write
   starts, so a reader that began just before the switch can finish).

Recovery (run by every writer under the lock before it starts) makes the folders match the manifest:
a crash before step 2 leaves the old generation everywhere and orphan folders that are removed; a
crash between 2 and 3 is rolled forward by pointing the symlinks at the manifest's generations.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LabError
from ..fsutil import fsync_dir
from ._manifest import Manifest
from ._parts import fsync_file

GEN = ".gen"
STAGING = "_staging"
MANIFEST_TMP_PREFIX = ".lab.json."  # `atomic_write_text`'s temporary files of a manifest being written


def gen_dir(root: Path, table: str, generation: int) -> Path:
    return root / GEN / table / f"g{generation:06d}"


def _link_target(table: str, generation: int) -> str:
    return os.path.join(GEN, table, f"g{generation:06d}")


@dataclass
class TablePlan:
    """The parts the table has at the new generation: kept ones (by file name) and new files to move in."""

    table: str
    generation: int
    old_generation: int | None = None  # the table's generation in the current manifest
    kept: list[Path] = field(default_factory=list)  # current part files to link into the new folder
    new: list[Path] = field(default_factory=list)  # staged files to move into the new folder

    def part_path(self, name: str) -> str:
        """A part's path relative to the lab root, as the manifest records it."""
        return os.path.join(GEN, self.table, f"g{self.generation:06d}", name)


def _adopt_legacy(root: Path, table: str, manifest_generation: int) -> None:
    """Turn a real `LAB/<table>` folder into a generation folder behind a symlink."""
    link = root / table
    if link.is_dir() and not link.is_symlink():
        dst = gen_dir(root, table, manifest_generation)
        if dst.exists():
            shutil.rmtree(dst)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(link, dst)
        _swap_link(root, table, manifest_generation)


def _swap_link(root: Path, table: str, generation: int) -> None:
    tmp = root / f".{table}.link-{generation:06d}"
    tmp.unlink(missing_ok=True)
    os.symlink(_link_target(table, generation), tmp)
    os.replace(tmp, root / table)


def build(root: Path, plans: list[TablePlan], durable: bool) -> None:
    """Create each table's new generation folder (hard links + moved-in new parts), not yet visible."""
    for plan in plans:
        dst = gen_dir(root, plan.table, plan.generation)
        if dst.exists():  # leftover of a crashed attempt at the same generation
            shutil.rmtree(dst)
        dst.mkdir(parents=True)
        for src in plan.kept:
            try:
                os.link(src, dst / src.name)
            except FileNotFoundError:
                raise LabError(f"{src}: part of table {plan.table!r} listed in lab.json is missing") from None
            except OSError:  # file systems without hard links
                shutil.copy2(src, dst / src.name)
        for f in plan.new:
            if durable:
                fsync_file(f)
            os.replace(f, dst / f.name)
        if durable:
            fsync_dir(dst)


def switch(root: Path, plans: list[TablePlan], durable: bool) -> None:
    """Point each table's symlink at its new folder (one atomic rename per table)."""
    for plan in plans:
        _swap_link(root, plan.table, plan.generation)
    if durable:
        fsync_dir(root)


def discard(root: Path, plans: list[TablePlan]) -> None:
    """Undo `build` (before the switch): remove the new folders."""
    for plan in plans:
        shutil.rmtree(gen_dir(root, plan.table, plan.generation), ignore_errors=True)


def is_manifest_tmp(name: str) -> bool:
    """A temporary file of a manifest being written (`atomic_write_text`), in the lab root."""
    return name.startswith(MANIFEST_TMP_PREFIX) and name.endswith(".tmp")


def _is_leftover(name: str) -> bool:
    """A temporary file of a dead writer in the lab root: a symlink or a manifest being replaced."""
    return name.startswith(".") and (".link-" in name or is_manifest_tmp(name))


def needs_recovery(root: Path, manifest: Manifest, tables: list[str]) -> bool:
    """Whether a writer died and left something `recover` would fix (cheap: a few stats and readlinks).
    Only meaningful under the lock: a live writer's staging folder looks the same."""
    staging = root / STAGING
    if staging.is_dir() and any(staging.iterdir()):
        return True
    if any(_is_leftover(n) for n in os.listdir(root)):
        return True
    for table in tables:
        entry = manifest.tables.get(table)
        if entry is None:
            continue
        link = root / table
        if not link.is_symlink():
            if entry.parts or link.exists():
                return True
            continue
        if entry.parts and os.readlink(link) != _link_target(table, entry.generation):
            return True
        base = root / GEN / table
        if base.is_dir():
            current = f"g{entry.generation:06d}"
            names = os.listdir(base)
            # a folder built for a generation that never committed, or more than current + previous
            if any(n > current for n in names) or len(names) > 2:
                return True
    return False


def recover(root: Path, manifest: Manifest, tables: list[str]) -> None:
    """Make the folders match the manifest: re-point symlinks, drop staging and unreferenced folders."""
    shutil.rmtree(root / STAGING, ignore_errors=True)
    for name in os.listdir(root):
        if _is_leftover(name):
            (root / name).unlink(missing_ok=True)
    for table in tables:
        entry = manifest.tables.get(table)
        link = root / table
        if entry is None or (not entry.parts and not link.exists()):
            continue
        if link.is_dir() and not link.is_symlink():
            _adopt_legacy(root, table, entry.generation)
        want = gen_dir(root, table, entry.generation)
        target = _link_target(table, entry.generation)
        if want.is_dir() and (not link.is_symlink() or os.readlink(link) != target):
            _swap_link(root, table, entry.generation)
        base = root / GEN / table
        if base.is_dir():
            for d in base.iterdir():
                if d != want:
                    shutil.rmtree(d, ignore_errors=True)


def cleanup(root: Path, plans: list[TablePlan]) -> None:
    """After the manifest switch: delete the changed tables' folders older than the previous one.

    The previous folder stays until the next write starts (see `recover`), so a reader that resolved
    the old symlink just before the switch can finish.
    """
    for plan in plans:
        base = root / GEN / plan.table
        keep = {gen_dir(root, plan.table, plan.generation)}
        if plan.old_generation is not None:
            keep.add(gen_dir(root, plan.table, plan.old_generation))
        if base.is_dir():
            for d in base.iterdir():
                if d not in keep:
                    shutil.rmtree(d, ignore_errors=True)
