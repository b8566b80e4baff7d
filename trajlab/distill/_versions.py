"""Skill versions: every version an immutable snapshot with a diff from the previous one.

    OUT/<name>/                       the live skill (what gets installed)
    OUT/.history/<name>/v0001/skill/  snapshot of version 1 (files made read-only)
    OUT/.history/<name>/v0001/version.json   version, content hash, parent, reason, operations
    OUT/.history/<name>/v0002/diff.patch     unified diff from v0001

Hidden folders are skipped by Codex's loader and by `trajlab skills validate`, so the history never
shows up as a skill. A live folder edited by hand is recorded as its own version before the next one.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import stat
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import InputFileError, LabError
from ..fsutil import removing_new_dirs_on_error
from ..store import utcnow
from ._skill import Skill, content_hash, content_hash_of, load_skill

HISTORY = ".history"


@dataclass
class Version:
    name: str
    version: int
    content_hash: str
    path: Path  # the snapshot's skill folder
    parent: int | None = None
    reason: str = ""
    created: bool = True  # False when the content was unchanged and no version was made
    operations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"v{self.version:04d}"


def _files(d: Path) -> dict[str, str]:
    out = {}
    if d.is_dir():
        for p in sorted(d.rglob("*")):
            if p.is_file():
                try:
                    out[p.relative_to(d).as_posix()] = p.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    out[p.relative_to(d).as_posix()] = "(binary file)\n"
    return out


def diff_dirs(old: Path | None, new: Path, old_label: str = "a", new_label: str = "b") -> str:
    a = _files(old) if old else {}
    b = _files(new)
    chunks: list[str] = []
    for rel in sorted(set(a) | set(b)):
        chunks += difflib.unified_diff(
            a.get(rel, "").splitlines(keepends=True),
            b.get(rel, "").splitlines(keepends=True),
            fromfile=f"{old_label}/{rel}" if rel in a else "/dev/null",
            tofile=f"{new_label}/{rel}" if rel in b else "/dev/null",
        )
    return "".join(chunks)


def _freeze(d: Path) -> None:
    for p in sorted(d.rglob("*"), reverse=True):
        mode = p.stat().st_mode
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    d.chmod(d.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def remove_tree(p: Path) -> None:
    """Remove a file, a symlink (not its target) or a folder tree, if there."""
    if p.is_symlink() or p.is_file():
        p.unlink(missing_ok=True)
    elif p.is_dir():
        shutil.rmtree(p, ignore_errors=True)


class SkillStore:
    """A folder of skills with their version history."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def live(self, name: str) -> Path:
        return self.root / name

    def history(self, name: str) -> Path:
        return self.root / HISTORY / name

    def versions(self, name: str) -> list[Version]:
        out: list[Version] = []
        h = self.history(name)
        if not h.is_dir():
            return out
        for d in sorted(h.glob("v[0-9][0-9][0-9][0-9]")):
            info_file = d / "version.json"
            if not info_file.exists():
                continue  # an interrupted commit: ignored
            info = json.loads(info_file.read_text(encoding="utf-8"))
            out.append(
                Version(
                    name=name,
                    version=int(info["version"]),
                    content_hash=info["content_hash"],
                    path=d / "skill",
                    parent=info.get("parent"),
                    reason=info.get("reason", ""),
                    operations=info.get("operations", []),
                )
            )
        return out

    def latest(self, name: str) -> Version | None:
        v = self.versions(name)
        return v[-1] if v else None

    def current(self, name: str) -> Skill | None:
        d = self.live(name)
        return load_skill(d) if (d / "SKILL.md").exists() else None

    def get(self, name: str, version: int) -> Skill:
        for v in self.versions(name):
            if v.version == version:
                return load_skill(v.path)
        raise InputFileError(str(self.history(name)), f"no version {version} of skill {name!r}")

    def commit(
        self,
        skill: Skill,
        reason: str,
        operations: list[dict[str, Any]] | None = None,
        live: bool = True,
        base: int | None = None,
    ) -> Version:
        """Record `skill` as the next version (unless its content is unchanged) and make it live.

        `base` is the version the edit started from (default: the latest); the diff is taken from it.
        A commit that fails (a full disk) leaves none of the folders it made (`.history/<name>/`, the
        skills folder itself) behind empty.
        """
        with removing_new_dirs_on_error(self.root):
            return self._commit(skill, reason, operations, live, base)

    def _commit(
        self,
        skill: Skill,
        reason: str,
        operations: list[dict[str, Any]] | None,
        live: bool,
        base: int | None,
    ) -> Version:
        name = skill.name
        latest = self.latest(name)
        live_dir = self.live(name)
        live_hash = content_hash(live_dir) if (live_dir / "SKILL.md").exists() else None
        if latest is not None and live_hash is not None:
            if live_hash not in {
                v.content_hash for v in self.versions(name)
            }:  # hand edits since the last version: keep them on record
                latest = self._snapshot(load_skill(live_dir), latest, "edited by hand", [])
                live_hash = latest.content_hash
        elif latest is None and live_hash is not None:
            latest = self._snapshot(load_skill(live_dir), None, "existing skill adopted", [])
            live_hash = latest.content_hash
        new_hash = content_hash_of(skill)
        if latest is not None and new_hash == latest.content_hash:
            v = Version(name, latest.version, latest.content_hash, latest.path, latest.parent, reason, False)
            # also when an earlier version is live: the commit that made this one could not publish it
            if live and live_hash != latest.content_hash:
                self._publish(load_skill(latest.path), live_dir)
            return v
        v = self._snapshot(skill, latest, reason, operations or [], base)
        if live:
            self._publish(load_skill(v.path), live_dir)
        return v

    def _snapshot(
        self,
        skill: Skill,
        latest: Version | None,
        reason: str,
        ops: list[dict[str, Any]],
        base: int | None = None,
    ) -> Version:
        number = (latest.version if latest else 0) + 1
        parent = latest
        if base is not None and latest is not None and base != latest.version:
            parent = next((v for v in self.versions(skill.name) if v.version == base), latest)
        sk = skill.copy()
        sk.metadata["version"] = str(number)
        sk.metadata["content-hash"] = content_hash_of(sk)
        h = self.history(sk.name)
        final = h / f"v{number:04d}"
        if final.exists():
            raise LabError(f"{final}: snapshot exists already; versions are immutable")
        tmp = h / f".tmp-{uuid.uuid4().hex[:8]}"
        try:
            return self._write_snapshot(sk, tmp, final, parent, number, reason, ops)
        except BaseException:
            remove_tree(tmp)  # an interrupted or failed snapshot leaves no half-written folder
            raise

    def _write_snapshot(
        self,
        sk: Skill,
        tmp: Path,
        final: Path,
        parent: Version | None,
        number: int,
        reason: str,
        ops: list[dict[str, Any]],
    ) -> Version:
        sk.write(tmp / "skill")
        diff = diff_dirs(
            parent.path if parent else None,
            tmp / "skill",
            parent.label if parent else "empty",
            f"v{number:04d}",
        )
        (tmp / "diff.patch").write_text(diff, encoding="utf-8")
        content_hash = sk.metadata["content-hash"]
        parent_version = parent.version if parent else None
        info = {
            "name": sk.name,
            "version": number,
            "content_hash": content_hash,
            "parent": parent_version,
            "reason": reason,
            "operations": ops,
            "created_at": utcnow().isoformat(),
            "trajlab_version": __version__,
        }
        (tmp / "version.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, final)
        _freeze(final)
        return Version(sk.name, number, content_hash, final / "skill", parent_version, reason, True, ops)

    def _publish(self, skill: Skill, live_dir: Path) -> None:
        tmp = live_dir.with_name(f".{live_dir.name}.tmp-{uuid.uuid4().hex[:8]}")
        try:
            skill.write(tmp)
        except BaseException:
            remove_tree(tmp)
            raise
        old = None
        if live_dir.exists() or live_dir.is_symlink():
            old = live_dir.with_name(f".{live_dir.name}.old-{uuid.uuid4().hex[:8]}")
            os.replace(live_dir, old)
        os.replace(tmp, live_dir)
        if old is not None:
            remove_tree(old)

    def publish_version(self, name: str, version: int) -> None:
        """Make an existing version the live skill (used by `iterate` to install the chosen one)."""
        self._publish(self.get(name, version), self.live(name))
