"""A skill as data: frontmatter, titled sections of guidance items, reference files.

Distilled and human-written skills share one shape so that edits (add / edit / remove one item)
work on both. SKILL.md renders as `# title`, an intro paragraph, then `## section` blocks whose
bullets are the items; any other prose in a section is kept as is.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputFileError
from ..fsutil import make_dirs
from ._spec import (
    BODY_MAX_LINES,
    BODY_MAX_TOKENS,
    CODEX_PROMPT_BYTES,
    SKILL_FILE,
    approx_tokens,
    split_frontmatter,
)

HASH_EXCLUDED_META = ("version", "content-hash")


class _FrontmatterDumper(yaml.SafeDumper):
    """Writes a string with a line break double-quoted, on one line (`\\n` escapes).

    PyYAML's default style folds such a string over several lines; a folded line that is just `---`
    closes the frontmatter for every reader that looks for the closing fence line by line (Codex's
    loader and `split_frontmatter`), so the rest of the YAML would be cut off."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if any(c in value for c in "\n\r\x85\u2028\u2029"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


_FrontmatterDumper.add_representer(str, _represent_str)
_BULLET = re.compile(r"^(?:[-*]|\d+[.)])\s+(.*)$")


def item_id(text: str) -> str:
    """Stable id of a guidance item: 8 hex digits of the SHA-256 of its whitespace-normalised text."""
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:8]


@dataclass
class Item:
    text: str
    rule: str | None = None

    @property
    def id(self) -> str:
        return item_id(self.text)


@dataclass
class Section:
    title: str
    items: list[Item] = field(default_factory=list)
    prose: str = ""
    numbered: bool = False


@dataclass
class Skill:
    name: str
    description: str
    title: str = ""
    intro: str = ""
    sections: list[Section] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: str | None = None
    references: dict[str, str] = field(default_factory=dict)  # relative path -> text
    binaries: dict[str, bytes] = field(default_factory=dict)  # relative path -> bytes (assets, images)

    # -- items ---------------------------------------------------------------------------------

    def items(self) -> list[tuple[Section, Item]]:
        return [(s, it) for s in self.sections for it in s.items]

    def find(self, iid: str) -> tuple[Section, Item] | None:
        return next(((s, it) for s, it in self.items() if it.id == iid), None)

    def section(self, title: str, create: bool = True) -> Section | None:
        for s in self.sections:
            if s.title.lower() == title.lower():
                return s
        if not create:
            return None
        s = Section(title, numbered=title.lower() == "do")
        # New sections go before a trailing references section.
        at = len(self.sections)
        if self.sections and self.sections[-1].title.lower() == "references":
            at -= 1
        self.sections.insert(at, s)
        return s

    def rule_keys(self) -> set[str]:
        return {it.rule for _, it in self.items() if it.rule}

    # -- rendering -----------------------------------------------------------------------------

    def frontmatter(self) -> dict[str, Any]:
        fm: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.license:
            fm["license"] = self.license
        if self.compatibility:
            fm["compatibility"] = self.compatibility
        if self.metadata:
            fm["metadata"] = {str(k): str(v) for k, v in self.metadata.items()}
        if self.allowed_tools:
            fm["allowed-tools"] = self.allowed_tools
        return fm

    def body(self) -> str:
        out: list[str] = []
        if self.title:
            out += [f"# {self.title}", ""]
        if self.intro.strip():
            out += [self.intro.strip(), ""]
        for s in self.sections:
            if not s.items and not s.prose.strip():
                continue
            out += [f"## {s.title}", ""]
            if s.prose.strip():
                out += [s.prose.strip(), ""]
            for k, it in enumerate(s.items, 1):
                lead = f"{k}." if s.numbered else "-"
                lines = it.text.strip().split("\n")
                out.append(f"{lead} {lines[0]}")
                out += [f"   {ln}" if ln.strip() else "" for ln in lines[1:]]
            if s.items:
                out.append("")
        return "\n".join(out).rstrip("\n") + "\n"

    def render(self) -> str:
        fm = yaml.dump(
            self.frontmatter(),
            Dumper=_FrontmatterDumper,
            sort_keys=False,
            allow_unicode=True,
            width=100_000,
            default_flow_style=False,
        )
        return f"---\n{fm}---\n\n{self.body()}"

    def copy(self) -> Skill:
        return Skill(
            name=self.name,
            description=self.description,
            title=self.title,
            intro=self.intro,
            sections=[
                Section(s.title, [Item(i.text, i.rule) for i in s.items], s.prose, s.numbered)
                for s in self.sections
            ],
            metadata=dict(self.metadata),
            license=self.license,
            compatibility=self.compatibility,
            allowed_tools=self.allowed_tools,
            references=dict(self.references),
            binaries=dict(self.binaries),
        )

    # -- files ---------------------------------------------------------------------------------

    def write(self, d: Path) -> None:
        """Write SKILL.md and the reference files into folder `d` (created; existing files replaced)."""
        make_dirs(d)
        for rel, text in self.references.items():
            p = d / rel
            make_dirs(p.parent)
            p.write_text(text, encoding="utf-8")
        for rel, data in self.binaries.items():
            p = d / rel
            make_dirs(p.parent)
            p.write_bytes(data)
        (d / SKILL_FILE).write_text(self.render(), encoding="utf-8")


def parse_body(body: str) -> tuple[str, str, list[Section]]:
    """(title, intro, sections) of a SKILL.md body."""
    title, intro_lines, sections = "", [], []
    cur: Section | None = None
    prose: list[str] = []
    item_lines: list[str] | None = None

    def flush_item() -> None:
        nonlocal item_lines
        if cur is not None and item_lines is not None:
            cur.items.append(Item("\n".join(item_lines).strip()))
        item_lines = None

    def flush_section() -> None:
        flush_item()
        if cur is not None:
            cur.prose = "\n".join(prose).strip()
            sections.append(cur)

    for line in body.split("\n"):
        if line.startswith("# ") and not title and cur is None:
            title = line[2:].strip()
            continue
        if line.startswith("## "):
            flush_section()
            cur, prose = Section(line[3:].strip()), []
            continue
        if cur is None:
            intro_lines.append(line)
            continue
        m = _BULLET.match(line)
        if m:
            flush_item()
            cur.numbered = cur.numbered or line[:1].isdigit()
            item_lines = [m.group(1)]
        elif item_lines is not None and (line.startswith("  ") or not line.strip()):
            if line.strip():
                item_lines.append(line.strip())
            else:
                flush_item()
        else:
            flush_item()
            prose.append(line)
    flush_section()
    return title, "\n".join(intro_lines).strip(), sections


def load_skill(d: str | Path) -> Skill:
    """Read a skill folder (SKILL.md plus every text file under it) into a Skill."""
    d = Path(d)
    f = d / SKILL_FILE
    if not f.is_file():
        raise InputFileError(str(f), "no SKILL.md here")
    fm, body = split_frontmatter(read_skill_md(f), str(f))
    title, intro, sections = parse_body(body)
    refs: dict[str, str] = {}
    bins: dict[str, bytes] = {}
    for p in sorted(d.rglob("*")):
        if p.is_file() and p != f:
            data = p.read_bytes()
            try:
                refs[p.relative_to(d).as_posix()] = data.decode("utf-8")
            except UnicodeDecodeError:
                bins[p.relative_to(d).as_posix()] = data
    meta = fm.get("metadata") or {}
    sk = Skill(
        name=str(fm.get("name", d.name)),
        description=str(fm.get("description", "")),
        title=title,
        intro=intro,
        sections=sections,
        metadata={str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {},
        license=fm.get("license"),
        compatibility=fm.get("compatibility"),
        allowed_tools=fm.get("allowed-tools"),
        references=refs,
        binaries=bins,
    )
    # Re-attach rule keys recorded in the provenance file.
    prov = refs.get("references/provenance.json")
    if prov:
        try:
            by_id = {i["id"]: i.get("rule") for i in json.loads(prov).get("items", [])}
        except (ValueError, AttributeError, KeyError, TypeError):
            by_id = {}
        for _, it in sk.items():
            it.rule = by_id.get(it.id)
    return sk


def content_hash_text(skill_md: str, references: dict[str, str], path: str = SKILL_FILE) -> str:
    """SHA-256 over SKILL.md (frontmatter less metadata version and content-hash) and the reference files."""
    fm, body = split_frontmatter(skill_md, path)
    meta = dict(fm.get("metadata") or {}) if isinstance(fm.get("metadata"), dict) else fm.get("metadata")
    if isinstance(meta, dict):
        for k in HASH_EXCLUDED_META:
            meta.pop(k, None)
        fm["metadata"] = meta
    h = hashlib.sha256()
    h.update(json.dumps(fm, sort_keys=True, ensure_ascii=False, default=str).encode())
    h.update(b"\0" + body.encode())
    for rel in sorted(references):
        h.update(b"\0" + rel.encode() + b"\0" + _stable_reference(rel, references[rel]).encode())
    return "sha256:" + h.hexdigest()[:32]


HASH_EXCLUDED_PROVENANCE = ("lab_generation",)
"""Provenance keys that change when the lab is rewritten with the same content (a rerun of the judge
bumps the generation): they are recorded but do not make a new version."""


def _stable_reference(rel: str, text: str) -> str:
    if not rel.endswith("provenance.json"):
        return text
    try:
        prov = json.loads(text)
    except ValueError:
        return text
    if not isinstance(prov, dict) or not any(k in prov for k in HASH_EXCLUDED_PROVENANCE):
        return text
    for k in HASH_EXCLUDED_PROVENANCE:
        prov.pop(k, None)
    return json.dumps(prov, sort_keys=True, ensure_ascii=False)


def content_hash_of(skill: Skill) -> str:
    files = dict(skill.references)
    files.update({k: "sha256:" + hashlib.sha256(v).hexdigest() for k, v in skill.binaries.items()})
    return content_hash_text(skill.render(), files)


def content_hash(d: Path) -> str:
    """Content hash of a skill folder as written on disk."""
    d = Path(d)
    refs: dict[str, str] = {}
    for p in sorted(d.rglob("*")):
        if p.is_file() and p != d / SKILL_FILE:
            data = p.read_bytes()
            try:
                refs[p.relative_to(d).as_posix()] = data.decode("utf-8")
            except UnicodeDecodeError:
                refs[p.relative_to(d).as_posix()] = "sha256:" + hashlib.sha256(data).hexdigest()
    f = d / SKILL_FILE
    return content_hash_text(read_skill_md(f), refs, str(f))


def read_skill_md(f: Path) -> str:
    """The text of a SKILL.md; InputFileError when it is not UTF-8."""
    try:
        return f.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputFileError(str(f), f"not UTF-8 ({e.reason} at byte {e.start})") from None


@dataclass(frozen=True)
class Budget:
    """Size budget of SKILL.md: an edit that would exceed it is rejected, never truncated."""

    max_bytes: int = CODEX_PROMPT_BYTES
    max_lines: int = BODY_MAX_LINES - 1
    max_tokens: int = BODY_MAX_TOKENS

    def violations(self, skill: Skill) -> list[str]:
        text = skill.render()
        body = skill.body()
        out = []
        n = len(text.encode())
        if n > self.max_bytes:
            out.append(f"SKILL.md would be {n} bytes (budget {self.max_bytes})")
        lines = len(body.strip("\n").split("\n"))
        if lines > self.max_lines:
            out.append(f"body would be {lines} lines (budget {self.max_lines})")
        toks = approx_tokens(body.strip("\n"))
        if toks > self.max_tokens:
            out.append(f"body would be about {toks} tokens (budget {self.max_tokens})")
        return out
