"""Agent Skills spec and Codex limits: every rule of `validate_skill`, on both sides of each limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajlab.distill import CODEX_PROMPT_BYTES, validate_path, validate_skill
from trajlab.errors import InputFileError


def write(root: Path, folder: str, front: str, body: str = "# T\n\nDo the thing.\n") -> Path:
    d = root / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\n{front}---\n\n{body}", encoding="utf-8")
    return d


def codes(d: Path) -> set[str]:
    return {i.code for i in validate_skill(d).issues if i.severity == "error"}


def test_minimal_skill_is_valid(tmp_path: Path) -> None:
    d = write(tmp_path, "ok-skill", "name: ok-skill\ndescription: Does X. Use when Y.\n")
    rep = validate_skill(d)
    assert rep.ok and rep.issues == [] and rep.name == "ok-skill"


@pytest.mark.parametrize(
    "name,ok",
    [
        ("a", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("abc-123", True),
        ("-abc", False),
        ("abc-", False),
        ("ab--c", False),
        ("Abc", False),
        ("ab_c", False),
        ("ab c", False),
    ],
)
def test_name_rules(tmp_path: Path, name: str, ok: bool) -> None:
    folder = name if "/" not in name and name.strip() == name else "x"
    d = write(tmp_path, folder, f"name: '{name}'\ndescription: Does X.\n")
    assert ("name-invalid" not in codes(d)) is ok


def test_name_must_equal_folder(tmp_path: Path) -> None:
    d = write(tmp_path, "folder-name", "name: other-name\ndescription: Does X.\n")
    assert codes(d) == {"name-folder"}


@pytest.mark.parametrize("n,ok", [(1, True), (1024, True), (1025, False)])
def test_description_length(tmp_path: Path, n: int, ok: bool) -> None:
    d = write(tmp_path, "s", f"name: s\ndescription: '{'d' * n}'\n")
    assert ("description-long" not in codes(d)) is ok


def test_description_missing_empty_or_not_text(tmp_path: Path) -> None:
    assert "description-missing" in codes(write(tmp_path, "a", "name: a\n"))
    assert "description-empty" in codes(write(tmp_path, "b", "name: b\ndescription: '  '\n"))
    assert "description-type" in codes(write(tmp_path, "c", "name: c\ndescription: 12\n"))


def test_description_warnings_for_codex(tmp_path: Path) -> None:
    d = write(tmp_path, "w", "name: w\ndescription: |\n  two\n  lines <b>\n")
    rep = validate_skill(d)
    assert rep.ok
    assert {i.code for i in rep.issues} == {"description-multiline", "description-angle"}


def test_only_spec_keys_allowed(tmp_path: Path) -> None:
    d = write(tmp_path, "k", "name: k\ndescription: D.\nversion: 2\nauthor: me\n")
    rep = validate_skill(d)
    assert codes(d) == {"unknown-key"}
    assert "author" in rep.errors[0].message and "version" in rep.errors[0].message


def test_all_optional_keys_valid(tmp_path: Path) -> None:
    front = (
        "name: full\ndescription: D.\nlicense: Apache-2.0\ncompatibility: Needs ffmpeg.\n"
        "metadata:\n  version: '3'\n  content-hash: sha256:00\nallowed-tools: Bash Read\n"
    )
    assert codes(write(tmp_path, "full", front)) == set()


@pytest.mark.parametrize("n,ok", [(500, True), (501, False)])
def test_compatibility_length(tmp_path: Path, n: int, ok: bool) -> None:
    d = write(tmp_path, "c", f"name: c\ndescription: D.\ncompatibility: '{'c' * n}'\n")
    assert ("compatibility-long" not in codes(d)) is ok


def test_metadata_values_must_be_strings(tmp_path: Path) -> None:
    d = write(tmp_path, "m", "name: m\ndescription: D.\nmetadata:\n  version: 1\n  ok: 'x'\n")
    rep = validate_skill(d)
    assert codes(d) == {"metadata-value-type"} and "version" in rep.errors[0].message
    assert "metadata-type" in codes(write(tmp_path, "n", "name: n\ndescription: D.\nmetadata: [a]\n"))


def test_codex_short_description_limit(tmp_path: Path) -> None:
    ok = write(tmp_path, "a", f"name: a\ndescription: D.\nmetadata:\n  short-description: '{'s' * 1024}'\n")
    bad = write(tmp_path, "b", f"name: b\ndescription: D.\nmetadata:\n  short-description: '{'s' * 1025}'\n")
    assert codes(ok) == set() and codes(bad) == {"codex-short-description-long"}


def test_allowed_tools_must_be_a_string(tmp_path: Path) -> None:
    assert codes(write(tmp_path, "t", "name: t\ndescription: D.\nallowed-tools: [Bash]\n")) == {
        "allowed-tools-type"
    }


def test_body_line_limit(tmp_path: Path) -> None:
    ok = write(tmp_path, "a", "name: a\ndescription: D.\n", "x\n" * 499)
    bad = write(tmp_path, "b", "name: b\ndescription: D.\n", "x\n" * 500)
    assert codes(ok) == set() and codes(bad) == {"body-lines"}


def test_body_token_limit(tmp_path: Path) -> None:
    # 5000 tokens ~ 20000 characters; kept under Codex's byte cap check separately
    ok = write(tmp_path, "a", "name: a\ndescription: D.\n", "y" * 20_000)
    bad = write(tmp_path, "b", "name: b\ndescription: D.\n", "y" * 20_004 + "zz")
    assert "body-tokens" not in codes(ok) and "body-tokens" in codes(bad)


def test_codex_prompt_byte_cap(tmp_path: Path) -> None:
    head = "---\nname: a\ndescription: D.\n---\n\n"
    d = tmp_path / "a"
    d.mkdir()
    (d / "SKILL.md").write_text(head + "z" * (CODEX_PROMPT_BYTES - len(head)), encoding="utf-8")
    assert codes(d) == set()
    (d / "SKILL.md").write_text(head + "z" * (CODEX_PROMPT_BYTES - len(head) + 1), encoding="utf-8")
    assert codes(d) == {"codex-prompt-bytes"}


def test_frontmatter_errors(tmp_path: Path) -> None:
    d = tmp_path / "f"
    d.mkdir()
    (d / "SKILL.md").write_text("# no frontmatter\n", encoding="utf-8")
    assert codes(d) == {"frontmatter"}
    (d / "SKILL.md").write_text("---\nname: f\ndescription: D.\n", encoding="utf-8")
    assert codes(d) == {"frontmatter"}
    (d / "SKILL.md").write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    assert codes(d) == {"frontmatter"}
    (d / "SKILL.md").write_bytes(b"---\nname: f\ndescription: \xff\n---\nbody\n")
    assert codes(d) == {"not-utf8"}


def test_links_and_provenance(tmp_path: Path) -> None:
    d = write(tmp_path, "l", "name: l\ndescription: D.\n", "See [r](references/r.md) and [x](../x.md).\n")
    assert codes(d) == {"link-missing", "link-outside"}
    (d / "references").mkdir()
    (d / "references" / "r.md").write_text("r", encoding="utf-8")
    (d / "references" / "provenance.json").write_text("{not json", encoding="utf-8")
    assert codes(d) == {"link-outside", "provenance-json"}


def test_validate_path_finds_skills_and_skips_history(tmp_path: Path) -> None:
    write(tmp_path, "one", "name: one\ndescription: D.\n")
    write(tmp_path, "two", "name: bad\ndescription: D.\n")
    write(tmp_path / ".history" / "one" / "v0001", "skill", "name: wrong\ndescription: D.\n")
    reps = validate_path(tmp_path)
    assert [(r.path.name, r.ok) for r in reps] == [("one", True), ("two", False)]
    with pytest.raises(InputFileError):
        validate_path(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert validate_path(empty)[0].codes() == {"no-skills"}
