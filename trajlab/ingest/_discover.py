"""Walk input paths and group files into source units, each claimed by exactly one adapter."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..formats import SourceUnit, adapters, candidate_extensions, detect, head
from ._meta import is_meta_file, norm_path

_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "_staging", ".ipynb_checkpoints"}


@dataclass
class Discovery:
    units: list[SourceUnit] = field(default_factory=list)
    unknown: list[tuple[Path, list[str]]] = field(default_factory=list)  # (file, what was tried)
    skipped: list[Path] = field(default_factory=list)  # not a candidate extension and not a companion
    missing: list[Path] = field(default_factory=list)  # input paths that do not exist
    meta: list[Path] = field(default_factory=list)  # trajlab-meta.jsonl sidecars
    shared: set[Path] = field(default_factory=set)  # companions read by more than one unit
    unreadable: list[tuple[Path, str]] = field(default_factory=list)  # (path, why): not read at all


def _is_lab(d: Path) -> bool:
    try:
        with open(d / "lab.json", "rb") as f:
            return b'"trajlab-lab"' in f.read(256)
    except OSError:
        return False


_SPECIAL = (
    (stat.S_ISFIFO, "a named pipe (FIFO), not a regular file"),
    (stat.S_ISSOCK, "a socket, not a regular file"),
    (stat.S_ISCHR, "a character device, not a regular file"),
    (stat.S_ISBLK, "a block device, not a regular file"),
)


def not_a_file(f: Path) -> str | None:
    """Why `f` is not read as a trajectory file, or None when it is a regular file (or gone: the plan
    reports a file that vanishes). Opening a named pipe would wait for a writer forever."""
    try:
        mode = os.stat(f).st_mode
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(f) else None
    except OSError:
        return None  # unreadable for another reason: reading it reports that
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((what for test, what in _SPECIAL if test(mode)), "not a regular file")


def _walk(root: Path, exclude: set[Path], unlisted: list[tuple[Path, str]]) -> list[Path]:
    """The files under `root`; folders that cannot be listed go to `unlisted` (os.walk would skip them
    without a word)."""
    if not root.is_dir():
        return [root]
    out: list[Path] = []

    def unlistable(e: OSError) -> None:
        unlisted.append((Path(e.filename or root), f"a folder that cannot be listed ({e.strerror or e})"))

    seen: set[tuple[int, int]] = set()
    # Symbolic links to folders are followed (`runs/latest -> 2026-12-01/`); each folder is walked
    # once, so a link loop or a second link to the same folder adds nothing.
    for dirpath, dirnames, filenames in os.walk(root, onerror=unlistable, followlinks=True):
        d = Path(dirpath)
        try:
            st = os.stat(d)
        except OSError:
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen or d in exclude or _is_lab(d):
            dirnames[:] = []  # a lab (the output one included) is not input
            continue
        seen.add((st.st_dev, st.st_ino))
        dirnames[:] = sorted(n for n in dirnames if n not in _SKIP_DIRS and not n.startswith("."))
        out.extend(d / f for f in sorted(filenames) if not f.startswith("."))
    return out


def discover(paths: list[Path | str], exclude: list[Path] | None = None) -> Discovery:
    """Find the source units under `paths` (files or folders); folders in `exclude` are not walked."""
    result = Discovery()
    skip = {Path(norm_path(p)) for p in exclude or []}
    files: list[Path] = []
    seen: set[Path] = set()
    for p in paths:
        root = Path(norm_path(p))
        if not root.exists():
            result.missing.append(root)
            continue
        for f in _walk(root, skip, result.unreadable):
            if f not in seen:
                seen.add(f)
                files.append(f)
    exts = candidate_extensions()
    primaries: dict[Path, SourceUnit] = {}
    undetected: list[tuple[Path, list[str]]] = []
    for f in files:
        meta = is_meta_file(f)
        if not meta and not f.name.lower().endswith(exts):
            continue
        why = not_a_file(f)
        if why is not None:
            result.unreadable.append((f, why))
            continue
        if meta:
            result.meta.append(f)
            continue
        adapter, tried = detect(f, head(f))
        if adapter is None:
            undetected.append((f, tried))
        else:
            primaries[f] = SourceUnit(primary=f, adapter=adapter.name)
    by_name = {a.name: a for a in adapters()}
    companion_of: dict[Path, Path] = {}
    # Shallow files first: a session claims its sub-agent files before they could claim anything.
    # A run-level file (a results.json with every trial's outcome) is a companion of every unit that
    # reads it, so a change to it re-ingests all of them.
    for f in sorted(primaries, key=lambda p: (len(p.parts), str(p))):
        if f in companion_of:
            continue
        unit = primaries[f]
        comps = [Path(norm_path(c)) for c in by_name[unit.adapter].companions(f)]
        unit.companions = []
        for c in dict.fromkeys(comps):
            if c == f:
                continue
            why = not_a_file(c)  # an adapter's glob may find a named pipe
            if why is None:
                unit.companions.append(c)
            elif (c, why) not in result.unreadable:
                result.unreadable.append((c, why))
        for c in unit.companions:
            if companion_of.setdefault(c, f) != f:
                result.shared.add(c)
    # A file that another unit reads as a companion is not a unit of its own.
    result.units = [u for f, u in primaries.items() if f not in companion_of]
    companions = set(companion_of)
    for f, tried in undetected:
        if f not in companions:
            result.unknown.append((f, tried))
    for f in files:
        if (
            f not in primaries
            and f not in companions
            and not f.name.lower().endswith(exts)
            and not is_meta_file(f)
        ):
            result.skipped.append(f)
    return result
