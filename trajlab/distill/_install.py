"""Scaffold human-written skills and install skills where agents look for them.

Targets: `claude` -> PROJECT/.claude/skills/<name>/ (or ~/.claude/skills), `codex` / `agents` ->
PROJECT/.agents/skills/<name>/ (or ~/.agents/skills; Codex's current location), `codex` with
`legacy=True` -> ~/.codex/skills/<name>/, and `prompt` -> a plain-text prefix file for harnesses
that take guidance as text. Only valid skills are installed; an existing different copy is replaced
only with `force`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path

from .. import __version__
from ..errors import ConfigError, InputFileError
from ..fsutil import WHOLE_DISK_ERRNOS, atomic_write_text, make_dirs, os_reason, removing_new_dirs_on_error
from ._skill import Skill, content_hash, content_hash_of, load_skill
from ._spec import check_name, split_frontmatter, validate_skill

TARGETS = ("claude", "codex", "agents", "prompt")


def new_skill_dir(name: str, parent: str | Path = "skills", author: str | None = None) -> Path:
    """Create PARENT/NAME/ with a spec-valid SKILL.md template for a person to write."""
    why = check_name(name)
    if why:
        raise ConfigError(why)
    d = Path(parent) / name
    if d.exists():
        raise ConfigError(f"{d} exists already")
    sk = Skill(
        name=name,
        description=(
            f"Human-written guidance ({name}): replace this sentence with what the skill does and when "
            "an agent should use it, e.g. which kinds of tasks or files."
        ),
        title=name.replace("-", " ").capitalize(),
        intro="Write the procedure an agent should follow. Keep it short; put long details in references/.",
        metadata={"origin": "human", **({"author": author} if author else {})},
    )
    do = sk.section("Do")
    assert do is not None
    do.numbered = True
    do.items = []
    from ._skill import Item

    do.items += [
        Item("First step an agent should take (name the tool and the flags)."),
        Item("How to check the result before answering."),
    ]
    av = sk.section("Avoid")
    assert av is not None
    av.items.append(Item("A mistake you have seen agents make."))
    refs = sk.section("References")
    assert refs is not None
    refs.prose = "Longer notes go in [references/notes.md](references/notes.md)."
    sk.references = {
        "references/notes.md": f"# Notes for {name}\n\nDetails, examples and edge cases.\n",
        "references/provenance.json": json.dumps(
            {
                "skill": name,
                "origin": "human",
                "generator": f"trajlab {__version__} (skills new)",
                "author": author,
            },
            indent=2,
        )
        + "\n",
    }
    sk.metadata["version"] = "1"
    sk.metadata["content-hash"] = content_hash_of(sk)
    for anc in [d.parent, *d.parent.parents]:
        if anc.exists():
            if not anc.is_dir():
                raise ConfigError(f"--dir {d.parent}: {anc} is a file, not a folder")
            break
    tmp = d.with_name(f".{name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        with removing_new_dirs_on_error(d.parent):  # and no empty --dir folder left behind
            try:
                sk.write(tmp)
                os.replace(tmp, d)  # the folder appears whole or not at all
            except BaseException:
                _remove(tmp)
                raise
    except OSError as e:
        raise ConfigError(f"cannot create {d}: {_why(e)}") from None
    return d


def rehash(skill_dir: str | Path) -> str:
    """Recompute metadata.content-hash after a hand edit (the version is left as it is)."""
    d = Path(skill_dir)
    f = d / "SKILL.md"
    if not f.is_file():
        raise InputFileError(str(f), "no such file (rehash takes a skill folder)")
    try:
        text = f.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputFileError(str(f), f"not UTF-8 ({e.reason} at byte {e.start})") from None
    fm, _ = split_frontmatter(text, str(f))
    h = content_hash(d)
    meta = fm.get("metadata") if isinstance(fm.get("metadata"), dict) else None
    if meta is None or "content-hash" not in meta:
        raise InputFileError(str(d / "SKILL.md"), "no metadata.content-hash to update")
    old = str(meta["content-hash"])
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip().startswith("content-hash:") and old in line:
            lines[i] = line.replace(old, h)
            break
    try:
        atomic_write_text(f, "\n".join(lines))
    except OSError as e:
        raise InputFileError(str(f), f"cannot write: {e.strerror or e}; the file is unchanged") from None
    return h


def render_prompt(skill: Skill) -> str:
    """The skill as a prompt prefix: a framed plain-text block (frontmatter dropped)."""
    body = skill.body().strip()
    return f'<skill name="{skill.name}">\n{skill.description}\n\n{body}\n</skill>\n'


def _target_dir(target: str, name: str, project: Path | None, legacy: bool) -> Path:
    home = Path(os.environ.get("HOME", "~")).expanduser()
    if target == "claude":
        return (project or home) / ".claude" / "skills" / name
    if target in ("codex", "agents"):
        if legacy:
            if target != "codex":
                raise ConfigError("--legacy applies to --target codex only")
            codex_home = Path(os.environ.get("CODEX_HOME", home / ".codex"))
            return codex_home / "skills" / name
        return (project or home) / ".agents" / "skills" / name
    raise ConfigError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")


def install(
    skill_dir: str | Path,
    target: str,
    project: str | Path | None = None,
    legacy: bool = False,
    output: str | Path | None = None,
    force: bool = False,
) -> Path:
    """Install one valid skill folder for an agent (see the module docstring); returns where it went."""
    src = Path(skill_dir)
    rep = validate_skill(src)
    if not rep.ok:
        raise InputFileError(str(src), "not a valid skill: " + "; ".join(i.message for i in rep.errors))
    skill = load_skill(src)
    proj = Path(project).absolute() if project else None
    if target == "prompt":
        dest = Path(output) if output else (proj or Path.cwd()) / f"{skill.name}.prompt.md"
        if dest.is_dir():
            raise ConfigError(f"{dest} is a folder; the prompt target writes a file (give --output FILE)")
        if dest.exists() and not force and dest.read_bytes() != render_prompt(skill).encode("utf-8"):
            raise ConfigError(f"{dest} exists and differs; use --force to replace it")
        try:
            with removing_new_dirs_on_error(dest.parent):
                atomic_write_text(dest, render_prompt(skill))
        except OSError as e:
            raise ConfigError(f"cannot write {dest}: {os_reason(e)}") from None
        return dest
    dest = _target_dir(target, skill.name, proj, legacy)
    _recover(dest)
    if dest.exists() or dest.is_symlink():
        same = dest.is_dir() and (dest / "SKILL.md").is_file() and _same_content(dest, src)
        if same:
            return dest
        if not force:
            kind = "folder" if dest.is_dir() else "file"
            raise ConfigError(f"{dest} exists (a {kind}) and differs; use --force to replace it")
    for anc in [dest.parent, *dest.parent.parents]:
        if anc.exists():
            if not anc.is_dir():
                raise ConfigError(f"cannot install into {dest.parent}: {anc} is a file, not a folder")
            break
    tmp = dest.with_name(f".{dest.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        with removing_new_dirs_on_error(dest.parent):  # a failed copy leaves no empty .claude/skills/
            _copy_in(src, tmp, dest)
    except (OSError, shutil.Error) as e:
        raise ConfigError(f"cannot install into {dest.parent}: {_why(e)}") from None
    return dest


def _copy_in(src: Path, tmp: Path, dest: Path) -> None:
    """Copy the skill folder `src` to `tmp` beside `dest`, then swap it in (an existing copy moves back
    if that fails); a failed copy is removed."""
    try:
        make_dirs(dest.parent)
        shutil.copytree(src, tmp, symlinks=False)
        for p in tmp.rglob("*"):  # copies are writable even when the source is a read-only snapshot
            p.chmod(p.stat().st_mode | 0o200)
        tmp.chmod(tmp.stat().st_mode | 0o200)
        if dest.exists() or dest.is_symlink():
            old = dest.with_name(f".{dest.name}.old-{uuid.uuid4().hex[:8]}")
            os.replace(dest, old)
            try:
                os.replace(tmp, dest)
            except OSError:
                os.replace(old, dest)  # the previous copy goes back where it was
                raise
            _remove(old)
        else:
            os.replace(tmp, dest)
    except BaseException:
        _remove(tmp)
        raise


def _recover(dest: Path) -> None:
    """Undo a crash between an install's two renames (the installed copy moved aside, the new one not
    yet in place): the copy moved aside goes back, so an agent never finds the skill missing for good.
    Other copies moved aside and half-made copies (`.tmp-`, which an agent scanning the folder could
    load as a second skill) are removed."""
    prefix = f".{dest.name}.old-"
    try:
        siblings = list(dest.parent.iterdir())
    except OSError:
        return  # no parent folder yet (or unreadable: the install reports it)
    for p in siblings:
        if p.name.startswith(f".{dest.name}.tmp-"):
            _remove(p)
    olds = [p for p in siblings if p.name.startswith(prefix)]
    if not olds:
        return
    olds.sort(key=lambda p: p.lstat().st_ctime)  # a rename sets ctime: the last one moved aside
    if not (dest.exists() or dest.is_symlink()):
        try:
            os.replace(olds.pop(), dest)
        except OSError:
            return
    for p in olds:
        _remove(p)


def _same_content(dest: Path, src: Path) -> bool:
    try:
        return content_hash(dest) == content_hash(src)
    except (InputFileError, OSError, UnicodeDecodeError):
        return False  # a damaged installed copy is different


def _remove(p: Path) -> None:
    """Remove a file, link or folder tree if it is there (a failed install leaves nothing behind)."""
    if p.is_symlink() or p.is_file():
        p.unlink(missing_ok=True)
    elif p.is_dir():
        for q in [p, *p.rglob("*")]:  # a read-only copy of a snapshot
            if q.is_dir() and not q.is_symlink():
                q.chmod(q.stat().st_mode | 0o700)
        shutil.rmtree(p, ignore_errors=True)


def _why(e: OSError | shutil.Error) -> str:
    if isinstance(e, shutil.Error):  # copytree's: (source, destination, str(the OSError)) per file
        first = e.args[0][0] if e.args and e.args[0] else None
        if not first:
            return str(e)
        m = re.match(r"\[Errno (\d+)\]", first[2])
        if m and int(m.group(1)) in WHOLE_DISK_ERRNOS:  # the disk, not the file, is at fault
            return os.strerror(int(m.group(1)))
        return f"{first[0]}: {first[2]}"
    why = os_reason(e)
    return f"{e.filename}: {why}" if e.filename else why
