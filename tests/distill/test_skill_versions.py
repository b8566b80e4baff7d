"""Versions (immutable snapshots with diffs), edits within a size budget, and the skill model."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from trajlab.distill import (
    Budget,
    Op,
    SkillStore,
    apply_ops,
    content_hash,
    empty_skill,
    load_skill,
    validate_skill,
)
from trajlab.distill._skill import parse_body
from trajlab.errors import LabError


def test_parse_render_roundtrip() -> None:
    body = "# Title\n\nIntro text.\n\n## Do\n\n1. First **step**.\n2. Second\n   continued.\n\n## Notes\n\nSome prose.\n\n- a bullet\n"
    title, intro, secs = parse_body(body)
    assert title == "Title" and intro == "Intro text."
    assert [(s.title, [i.text for i in s.items], s.numbered) for s in secs] == [
        ("Do", ["First **step**.", "Second\ncontinued."], True),
        ("Notes", ["a bullet"], False),
    ]
    assert secs[1].prose == "Some prose."


def test_budget_rejects_never_truncates() -> None:
    sk = empty_skill("cal")
    small = Budget(max_bytes=len(sk.render().encode()) + 150)
    ok = Op("add", "Do", "Run `ffprobe` first.", rule="r1")
    big = Op("add", "Do", "x" * 400, rule="r2")
    res = apply_ops(sk, [ok, big], small)
    assert [o.rule for o in res.applied] == ["r1"]
    assert res.rejected[0][0].rule == "r2" and "over the size budget" in res.rejected[0][1]
    texts = [it.text for _, it in res.skill.items()]
    assert texts == ["Run `ffprobe` first."]  # the big edit is absent, not cut short
    assert not any("x" * 10 in t for t in texts)


def test_edit_and_remove_by_id() -> None:
    sk = empty_skill("cal")
    res = apply_ops(sk, [Op("add", "Do", "A"), Op("add", "Avoid", "B")])
    sk = res.skill
    a = sk.items()[0][1].id
    res = apply_ops(
        sk,
        [
            Op("edit", item_id=a, text="A2"),
            Op("remove", item_id=sk.items()[1][1].id),
            Op("remove", item_id="nope"),
            Op("add", "Do", "A2"),
        ],
    )
    assert [it.text for _, it in res.skill.items()] == ["A2"]
    assert [w for _, w in res.rejected] == ["no item with id 'nope'", "duplicate of an existing item"]


def test_versions_snapshots_and_diffs(tmp_path: Path) -> None:
    store = SkillStore(tmp_path)
    sk = empty_skill("cal")
    v1 = store.commit(sk, "start")
    assert (v1.version, v1.created) == (1, True)
    assert store.commit(sk.copy(), "again").created is False
    sk2 = apply_ops(sk, [Op("add", "Do", "Probe with `ffprobe` first.")]).skill
    v2 = store.commit(sk2, "add probe", [{"kind": "add"}])
    assert v2.version == 2 and v2.parent == 1
    snap = tmp_path / ".history" / "cal" / "v0002"
    diff = (snap / "diff.patch").read_text(encoding="utf-8")
    assert "+1. Probe with `ffprobe` first." in diff and "-  version: '1'" in diff
    assert not (snap / "skill" / "SKILL.md").stat().st_mode & stat.S_IWUSR  # frozen
    live = load_skill(tmp_path / "cal")
    assert live.metadata["version"] == "2" and live.metadata["content-hash"] == content_hash(tmp_path / "cal")
    assert (
        validate_skill(tmp_path / "cal").ok and validate_skill(snap / "skill").ok is False
    )  # folder name differs
    assert store.get("cal", 1).items() == []
    # a hand edit of the live folder is recorded before the next version
    p = tmp_path / "cal" / "SKILL.md"
    p.write_text(p.read_text(encoding="utf-8") + "\n- Hand-written tip.\n", encoding="utf-8")
    sk3 = apply_ops(load_skill(tmp_path / "cal"), [Op("add", "Avoid", "Guessing.")]).skill
    v4 = store.commit(sk3, "next")
    assert [(v.version, v.reason) for v in store.versions("cal")] == [
        (1, "start"),
        (2, "add probe"),
        (3, "edited by hand"),
        (4, "next"),
    ]
    assert v4.version == 4


def test_snapshots_are_immutable(tmp_path: Path) -> None:
    store = SkillStore(tmp_path)
    store.commit(empty_skill("cal"), "start")
    latest = store.latest("cal")
    assert latest is not None
    with pytest.raises(LabError, match="immutable"):
        store._snapshot(empty_skill("cal"), None, "again", [])


def test_binary_assets_survive_versions(tmp_path: Path) -> None:
    store = SkillStore(tmp_path)
    store.commit(empty_skill("cal"), "start")
    (tmp_path / "cal" / "assets").mkdir()
    (tmp_path / "cal" / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\x00")
    sk = load_skill(tmp_path / "cal")
    assert sk.binaries == {"assets/logo.png": b"\x89PNG\r\n\x1a\n\xff\x00"}
    v = store.commit(apply_ops(sk, [Op("add", "Do", "Probe first.")]).skill, "edit")
    assert (v.path / "assets" / "logo.png").read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "cal" / "assets" / "logo.png").exists()
    assert load_skill(tmp_path / "cal").metadata["content-hash"] == content_hash(tmp_path / "cal")


def test_a_new_lab_generation_alone_makes_no_new_version(tmp_path: Path) -> None:
    """Rerunning a stage rewrites the lab (new generation) without changing what distillation mines:
    the skill keeps its version; a real change of provenance still makes one."""
    import json

    store = SkillStore(tmp_path)
    sk = empty_skill("gen")
    prov = {"skill": "gen", "lab_generation": 6, "rules": [{"key": "a"}]}
    sk.references["references/provenance.json"] = json.dumps(prov)
    assert store.commit(sk, "first").version == 1
    again = sk.copy()
    again.references["references/provenance.json"] = json.dumps({**prov, "lab_generation": 10})
    v = store.commit(again, "rerun")
    assert (v.version, v.created) == (1, False)
    changed = sk.copy()
    changed.references["references/provenance.json"] = json.dumps({**prov, "rules": [{"key": "b"}]})
    assert store.commit(changed, "new rules").version == 2


def test_a_version_that_could_not_be_made_live_is_made_live_by_the_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`trajlab distill` on a disk that filled up between the snapshot and the live copy failed (fine:
    the live skill stayed v1), but rerunning it once there was space said `v2 (unchanged)` and left
    v1 live for good: a commit whose content matched the latest version published it only when the
    live folder was missing."""
    from tmpfs import fill, tmpfs

    with tmpfs(tmp_path / "fs", 2) as fs:
        store = SkillStore(fs / "skills")
        sk = empty_skill("cal")
        v1 = store.commit(sk, "start")
        sk2 = apply_ops(sk, [Op("add", "Do", "Probe with `ffprobe` first.")]).skill
        publish = SkillStore._publish
        fillers: list[Path] = []

        def disk_fills_first(self: SkillStore, skill, live_dir: Path) -> None:  # type: ignore[no-untyped-def]
            fillers.append(fill(fs))
            publish(self, skill, live_dir)

        with monkeypatch.context() as m:
            m.setattr(SkillStore, "_publish", disk_fills_first)
            with pytest.raises(OSError, match="No space left on device"):
                store.commit(sk2, "add probe")
        live = fs / "skills" / "cal"
        assert content_hash(live) == v1.content_hash  # the previous live skill is intact
        assert sorted(p.name for p in live.parent.iterdir()) == [".history", "cal"]  # no half copy
        fillers[0].unlink()
        v = store.commit(sk2, "add probe")
        assert (v.version, v.created) == (2, False)
        assert content_hash(live) == v.content_hash and load_skill(live).metadata["version"] == "2"
        assert store.commit(sk2, "again").created is False and content_hash(live) == v.content_hash
