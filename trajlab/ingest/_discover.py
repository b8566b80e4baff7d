"""Walk input paths and group files into source units, each claimed by exactly one adapter."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..formats import SourceUnit, adapters, candidate_extensions, detect, head
from ._meta import is_meta_file

_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "_staging", ".ipynb_checkpoints"}


@dataclass
class Discovery:
    units: list[SourceUnit] = field(default_factory=list)
    unknown: list[tuple[Path, list[str]]] = field(default_factory=list)  # (file, what was tried)
    skipped: list[Path] = field(default_factory=list)  # not a candidate extension and not a companion
    missing: list[Path] = field(default_factory=list)  # input paths that do not exist
    meta: list[Path] = field(default_factory=list)  # trajlab-meta.jsonl sidecars


def _walk(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        if (d / "lab.json").exists() and d != root:
            dirnames[:] = []  # a lab inside the input folder is not input
            continue
        dirnames[:] = sorted(n for n in dirnames if n not in _SKIP_DIRS and not n.startswith("."))
        out.extend(d / f for f in sorted(filenames) if not f.startswith("."))
    return out


def discover(paths: list[Path | str]) -> Discovery:
    result = Discovery()
    files: list[Path] = []
    seen: set[Path] = set()
    for p in paths:
        root = Path(p).expanduser().absolute()
        if not root.exists():
            result.missing.append(root)
            continue
        for f in _walk(root):
            if f not in seen:
                seen.add(f)
                files.append(f)
    exts = candidate_extensions()
    primaries: dict[Path, SourceUnit] = {}
    undetected: list[tuple[Path, list[str]]] = []
    for f in files:
        if is_meta_file(f):
            result.meta.append(f)
            continue
        if not f.name.lower().endswith(exts):
            continue
        adapter, tried = detect(f, head(f))
        if adapter is None:
            undetected.append((f, tried))
        else:
            primaries[f] = SourceUnit(primary=f, adapter=adapter.name)
    by_name = {a.name: a for a in adapters()}
    companion_of: dict[Path, Path] = {}
    for f, unit in primaries.items():
        unit.companions = [c.absolute() for c in by_name[unit.adapter].companions(f) if c.absolute() != f]
        for c in unit.companions:
            companion_of.setdefault(c, f)
    for f, unit in primaries.items():
        # A file that another unit reads as a companion is not a unit of its own.
        if companion_of.get(f, f) != f:
            continue
        result.units.append(unit)
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
