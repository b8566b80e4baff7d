"""`skills new`, `skills install` (claude, codex/.agents, legacy ~/.codex, prompt) and `skills rehash`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from trajlab.cli import cli
from trajlab.distill import content_hash, install, load_skill, new_skill_dir, rehash, validate_skill
from trajlab.errors import ConfigError, InputFileError


def test_new_skill_is_spec_valid(tmp_path: Path) -> None:
    d = new_skill_dir("video-probing", tmp_path, author="ana")
    rep = validate_skill(d)
    assert rep.ok and rep.issues == []
    sk = load_skill(d)
    assert sk.metadata == {
        "origin": "human",
        "author": "ana",
        "version": "1",
        "content-hash": content_hash(d),
    }
    assert [s.title for s in sk.sections] == ["Do", "Avoid", "References"]
    with pytest.raises(ConfigError, match="exists"):
        new_skill_dir("video-probing", tmp_path)
    with pytest.raises(ConfigError, match="single hyphens"):
        new_skill_dir("Bad--Name", tmp_path)


def test_rehash_after_hand_edit(tmp_path: Path) -> None:
    d = new_skill_dir("tips", tmp_path)
    p = d / "SKILL.md"
    p.write_text(p.read_text(encoding="utf-8").replace("First step", "Probe first"), encoding="utf-8")
    assert {i.code for i in validate_skill(d).issues} == {"content-hash-stale"}
    h = rehash(d)
    assert h == content_hash(d) and validate_skill(d).issues == []


def test_install_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = new_skill_dir("tips", tmp_path / "skills")
    proj = tmp_path / "proj"
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert install(src, "claude", proj) == proj / ".claude" / "skills" / "tips"
    assert install(src, "codex", proj) == proj / ".agents" / "skills" / "tips"
    assert install(src, "agents") == home / ".agents" / "skills" / "tips"
    assert install(src, "codex", legacy=True) == home / ".codex" / "skills" / "tips"
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    assert install(src, "codex", legacy=True) == tmp_path / "ch" / "skills" / "tips"
    for d in (proj / ".claude" / "skills" / "tips", proj / ".agents" / "skills" / "tips"):
        assert (d / "SKILL.md").read_bytes() == (src / "SKILL.md").read_bytes()
        assert (d / "references" / "provenance.json").exists()
    prompt = install(src, "prompt", proj)
    assert prompt == proj / "tips.prompt.md"
    text = prompt.read_text(encoding="utf-8")
    assert text.startswith('<skill name="tips">') and "---" not in text and "1. First step" in text
    with pytest.raises(ConfigError, match="--legacy"):
        install(src, "agents", legacy=True)


def test_install_refuses_invalid_and_changed(tmp_path: Path) -> None:
    src = new_skill_dir("tips", tmp_path / "skills")
    proj = tmp_path / "proj"
    dest = install(src, "claude", proj)
    assert install(src, "claude", proj) == dest  # same content: nothing to do
    (dest / "SKILL.md").write_text((dest / "SKILL.md").read_text() + "\nlocal change\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="differs"):
        install(src, "claude", proj)
    install(src, "claude", proj, force=True)
    assert (dest / "SKILL.md").read_bytes() == (src / "SKILL.md").read_bytes()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: other\ndescription: D.\n---\nbody\n", encoding="utf-8")
    with pytest.raises(InputFileError, match="must equal the folder name"):
        install(bad, "claude", proj)


def test_cli_new_validate_install(tmp_path: Path) -> None:
    r = CliRunner()
    out = r.invoke(cli, ["skills", "new", "my-skill", "--dir", str(tmp_path)])
    assert out.exit_code == 0 and "created" in out.output
    out = r.invoke(cli, ["skills", "validate", str(tmp_path)])
    assert out.exit_code == 0 and out.output.startswith("ok ")
    out = r.invoke(
        cli,
        [
            "skills",
            "install",
            str(tmp_path / "my-skill"),
            "--target",
            "agents",
            "--project",
            str(tmp_path / "p"),
        ],
    )
    assert out.exit_code == 0 and ".agents/skills/my-skill" in out.output
    (tmp_path / "my-skill" / "SKILL.md").write_text("no frontmatter", encoding="utf-8")
    out = r.invoke(cli, ["skills", "validate", str(tmp_path / "my-skill")])
    assert out.exit_code == 1 and "FAIL" in out.output and "[frontmatter]" in out.output


def test_repository_skills_are_valid() -> None:
    from trajlab.distill import validate_path

    root = Path(__file__).resolve().parents[2] / "skills"
    reps = validate_path(root)
    assert [r.path.name for r in reps] == ["probe-media-first"]
    assert all(r.ok and not r.issues for r in reps), [i.format() for r in reps for i in r.issues]


def test_install_killed_between_its_two_renames_is_undone_by_the_next_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill after the installed copy was moved aside and before the new one moved in left the skill
    missing (the old copy under .tips.old-*): the next install puts it back first."""
    import os

    import trajlab.distill._install as inst

    src = new_skill_dir("tips", tmp_path / "skills")
    proj = tmp_path / "proj"
    dest = install(src, "claude", proj)
    before = (dest / "SKILL.md").read_bytes()
    p = src / "SKILL.md"
    p.write_text(p.read_text(encoding="utf-8").replace("First step", "Probe first"), encoding="utf-8")
    rehash(src)
    real = os.replace
    calls: list[str] = []

    def killed(a, b):  # type: ignore[no-untyped-def]
        calls.append(Path(a).name)
        if len(calls) == 2:  # the new copy's move into place
            raise KeyboardInterrupt
        return real(a, b)

    monkeypatch.setattr(inst.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        install(src, "claude", proj, force=True)
    monkeypatch.setattr(inst.os, "replace", real)
    assert not dest.exists() and [x.name[:10] for x in dest.parent.iterdir() if ".old-" in x.name] == [
        ".tips.old-"
    ]
    # without --force the next install first restores the copy moved aside, then sees it differs
    with pytest.raises(ConfigError, match="differs"):
        install(src, "claude", proj)
    assert (dest / "SKILL.md").read_bytes() == before
    assert install(src, "claude", proj, force=True) == dest
    assert (dest / "SKILL.md").read_bytes() == p.read_bytes()
    assert sorted(x.name for x in dest.parent.iterdir()) == ["tips"]  # no .old- or half-made .tmp- copy
