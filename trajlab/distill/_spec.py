"""The Agent Skills format (agentskills.io) plus Codex's loader limits: parsing and validation.

Sources (see docs/distill.md): the agentskills.io specification (frontmatter keys, `name` and
`description` rules, `compatibility` <= 500 chars, `metadata` string map, body < 500 lines / ~5k
tokens) and openai/codex `codex-rs/core/src/skills/loader.rs` (name <= 64 and description <= 1024
characters after whitespace collapsing, `metadata.short-description` <= 1024, frontmatter opened by
`---` on the first line) and `codex-rs/ext/skills/src/render.rs` (`MAX_SKILL_PROMPT_BYTES = 8000`:
a SKILL.md longer than that is cut when injected).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputFileError

SKILL_FILE = "SKILL.md"
ALLOWED_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
BODY_MAX_LINES = 500
BODY_MAX_TOKENS = 5000
CHARS_PER_TOKEN = 4
CODEX_NAME_MAX = 64
CODEX_DESCRIPTION_MAX = 1024
CODEX_SHORT_DESCRIPTION_MAX = 1024
CODEX_PROMPT_BYTES = 8000
NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def approx_tokens(text: str) -> int:
    """A model-free token estimate (about four characters per token), rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


@dataclass
class Issue:
    severity: str  # error | warning
    code: str
    message: str
    path: str = ""

    def format(self) -> str:
        return f"{self.severity}: {self.path}: {self.message} [{self.code}]"


@dataclass
class SkillReport:
    path: Path
    name: str | None = None
    issues: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(i.severity == "error" for i in self.issues)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    def codes(self) -> set[str]:
        return {i.code for i in self.issues}

    def add(self, severity: str, code: str, message: str) -> None:
        self.issues.append(Issue(severity, code, message, str(self.path)))


def split_frontmatter(text: str, path: str = SKILL_FILE) -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body) of a SKILL.md; raises InputFileError naming the line."""
    if not text.strip():
        raise InputFileError(
            path, "the file is empty (it needs `---` YAML frontmatter, then instructions)", 1
        )
    if text.startswith("\ufeff"):
        raise InputFileError(
            path,
            "starts with a UTF-8 byte-order mark (BOM); save it without one so `---` is the first line",
            1,
        )
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise InputFileError(path, "missing YAML frontmatter: the first line must be `---`", 1)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise InputFileError(path, "frontmatter is not closed by a `---` line", 1)
    if end == 1:
        raise InputFileError(path, "frontmatter is empty", 2)
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as e:
        line = getattr(getattr(e, "problem_mark", None), "line", None)
        raise InputFileError(path, f"invalid YAML in frontmatter: {e}", (line or 0) + 2) from None
    if not isinstance(data, dict):
        raise InputFileError(path, "frontmatter must be a YAML mapping", 2)
    body = "\n".join(lines[end + 1 :])
    return data, body


def check_name(name: Any) -> str | None:
    """None when `name` is a valid skill name, else why not."""
    if not isinstance(name, str):
        return f"name must be a string, got {type(name).__name__}"
    if not 1 <= len(name) <= NAME_MAX:
        return f"name must be 1-{NAME_MAX} characters (got {len(name)})"
    if not NAME_RE.fullmatch(name):
        return f"name {name!r} must use only a-z, 0-9 and single hyphens, and not start or end with a hyphen"
    return None


def _single_line(s: str) -> str:
    return " ".join(s.split())


def validate_skill(skill_dir: str | Path) -> SkillReport:
    """Check one skill folder against the Agent Skills spec and Codex's hard limits."""
    d = Path(skill_dir)
    rep = SkillReport(d)
    f = d / SKILL_FILE
    if f.is_dir():
        rep.add("error", "missing-skill-md", f"{f} is a folder; {SKILL_FILE} must be a file")
        return rep
    if not f.is_file():
        rep.add("error", "missing-skill-md", f"no {SKILL_FILE} in {d}")
        return rep
    if f.is_symlink():
        rep.add("warning", "symlink", f"{SKILL_FILE} is a symlink; installers copy the target")
    _check_symlinks(d, rep)
    raw = f.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        rep.add("error", "not-utf8", f"{SKILL_FILE} is not UTF-8 ({e})")
        return rep
    try:
        fm, body = split_frontmatter(text, str(f))
    except InputFileError as e:
        rep.add("error", "frontmatter", str(e))
        return rep
    unknown = sorted(set(map(str, fm)) - set(ALLOWED_KEYS))
    if unknown:
        rep.add(
            "error",
            "unknown-key",
            f"frontmatter keys {unknown} are not allowed; allowed: {', '.join(ALLOWED_KEYS)}",
        )
    # name
    name = fm.get("name")
    rep.name = name if isinstance(name, str) else None
    if name is None:
        rep.add("error", "name-missing", "frontmatter has no `name`")
    else:
        why = check_name(name)
        if why:
            rep.add("error", "name-invalid", why)
        elif name != d.name:
            rep.add("error", "name-folder", f"name {name!r} must equal the folder name {d.name!r}")
    # description
    desc = fm.get("description")
    if desc is None:
        rep.add("error", "description-missing", "frontmatter has no `description`")
    elif not isinstance(desc, str):
        rep.add("error", "description-type", f"description must be a string, got {type(desc).__name__}")
    else:
        if not desc.strip():
            rep.add("error", "description-empty", "description is empty")
        if len(desc) > DESCRIPTION_MAX:
            rep.add(
                "error", "description-long", f"description has {len(desc)} characters (max {DESCRIPTION_MAX})"
            )
        elif len(_single_line(desc)) > CODEX_DESCRIPTION_MAX:
            rep.add(
                "error",
                "codex-description-long",
                f"description is longer than Codex's {CODEX_DESCRIPTION_MAX}-character limit",
            )
        if "\n" in desc.strip():
            rep.add(
                "warning", "description-multiline", "Codex collapses a multi-line description to one line"
            )
        if "<" in desc or ">" in desc:
            rep.add("warning", "description-angle", "Codex's skill validator rejects < and > in descriptions")
    # optional keys
    lic = fm.get("license")
    if lic is not None and not (isinstance(lic, str) and lic.strip()):
        rep.add("error", "license-type", "license must be a non-empty string")
    comp = fm.get("compatibility")
    if comp is not None:
        if not isinstance(comp, str) or not comp.strip():
            rep.add("error", "compatibility-type", "compatibility must be a non-empty string")
        elif len(comp) > COMPATIBILITY_MAX:
            rep.add(
                "error",
                "compatibility-long",
                f"compatibility has {len(comp)} characters (max {COMPATIBILITY_MAX})",
            )
    meta = fm.get("metadata")
    if meta is not None:
        if not isinstance(meta, dict):
            rep.add("error", "metadata-type", "metadata must be a mapping of string keys to string values")
        else:
            bad = sorted(str(k) for k, v in meta.items() if not isinstance(k, str) or not isinstance(v, str))
            if bad:
                rep.add(
                    "error",
                    "metadata-value-type",
                    f"metadata values must be strings (quote them): {', '.join(bad)}",
                )
            sd = meta.get("short-description")
            if isinstance(sd, str) and len(_single_line(sd)) > CODEX_SHORT_DESCRIPTION_MAX:
                rep.add(
                    "error",
                    "codex-short-description-long",
                    f"metadata.short-description exceeds Codex's {CODEX_SHORT_DESCRIPTION_MAX} characters",
                )
    tools = fm.get("allowed-tools")
    if tools is not None and not isinstance(tools, str):
        rep.add("error", "allowed-tools-type", "allowed-tools must be a space-separated string")
    # body
    if not body.strip():
        rep.add("error", "body-empty", "SKILL.md has no instructions after the frontmatter")
    content = body.strip("\n")  # the blank line after the frontmatter is not content
    n_lines = len(content.split("\n"))
    if n_lines >= BODY_MAX_LINES:
        rep.add(
            "error",
            "body-lines",
            f"body has {n_lines} lines (keep it under {BODY_MAX_LINES}; move details to references/)",
        )
    toks = approx_tokens(content)
    if toks > BODY_MAX_TOKENS:
        rep.add("error", "body-tokens", f"body is about {toks} tokens (keep it under {BODY_MAX_TOKENS})")
    if len(raw) > CODEX_PROMPT_BYTES:
        rep.add(
            "error",
            "codex-prompt-bytes",
            f"SKILL.md is {len(raw)} bytes; Codex injects at most {CODEX_PROMPT_BYTES} bytes and cuts the rest",
        )
    _check_links(d, body, rep)
    _check_hash(d, fm, text, rep)
    return rep


def _check_symlinks(d: Path, rep: SkillReport) -> None:
    """Symlinks are copied as their targets by installers: a target outside the skill folder would
    copy a file from elsewhere (a key, a config) into the agent's skills; a linked folder can loop."""
    root = d.resolve()
    for dirpath, dirnames, filenames in os.walk(d):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            if not p.is_symlink():
                continue
            rel = p.relative_to(d).as_posix()
            try:
                target = p.resolve()
            except (OSError, RuntimeError):  # a symlink loop
                rep.add("error", "symlink-dangling", f"{rel} is a symlink loop ({os.readlink(p)})")
                continue
            if not target.exists():
                rep.add(
                    "error", "symlink-dangling", f"{rel} is a symlink to a missing file ({os.readlink(p)})"
                )
            elif not target.is_relative_to(root):
                rep.add(
                    "error",
                    "symlink-outside",
                    f"{rel} is a symlink to {target}, outside the skill folder (installers would copy it)",
                )
            elif target.is_dir():
                rep.add("error", "symlink-dir", f"{rel} is a symlink to a folder; use a real folder")


_LINK_RE = re.compile(r"\]\(([^)\s]+)\)")


def _check_links(d: Path, body: str, rep: SkillReport) -> None:
    for target in _LINK_RE.findall(body):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        p = (d / target.split("#", 1)[0]).resolve()
        if not p.is_relative_to(d.resolve()):
            rep.add("error", "link-outside", f"link {target!r} points outside the skill folder")
        elif not p.exists():
            rep.add("error", "link-missing", f"link {target!r} points to a missing file")
    prov = d / "references" / "provenance.json"
    if prov.exists():
        import json

        try:
            json.loads(prov.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            rep.add("error", "provenance-json", f"references/provenance.json is not valid JSON: {e}")


def _check_hash(d: Path, fm: dict[str, Any], text: str, rep: SkillReport) -> None:
    meta = fm.get("metadata")
    if not isinstance(meta, dict) or "content-hash" not in meta:
        return
    from ._skill import content_hash

    want = content_hash(d)
    if meta["content-hash"] != want:
        rep.add(
            "warning",
            "content-hash-stale",
            "metadata.content-hash does not match the content (edited by hand? run `trajlab skills rehash`)",
        )


def find_skills(root: str | Path) -> list[Path]:
    """Skill folders at or under `root` (a skill folder itself, or a folder of skills), sorted."""
    r = Path(root)
    if (r / SKILL_FILE).exists():
        return [r]
    out = []
    for f in sorted(r.rglob(SKILL_FILE)):
        rel = f.relative_to(r)
        if any(part.startswith(".") for part in rel.parts):
            continue  # snapshots and hidden state, skipped like Codex's loader does
        out.append(f.parent)
    return out


def validate_path(root: str | Path) -> list[SkillReport]:
    r = Path(root)
    if not r.exists():
        raise InputFileError(str(r), "no such file or folder")
    skills = find_skills(r)
    if not skills:
        rep = SkillReport(r)
        rep.add("error", "no-skills", f"no {SKILL_FILE} found at or under {r}")
        return [rep]
    return [validate_skill(s) for s in skills]
