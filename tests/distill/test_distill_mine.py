"""`distill` on hand-built labs: the planted pattern must reach the skill with the right provenance."""

from __future__ import annotations

import json
from pathlib import Path

from distill_labs import EXTRACT, OCR, PROBE, make_lab, probe_lab, traj

from trajlab.distill import (
    MineParams,
    command_features,
    distill,
    load_corpus,
    load_skill,
    mine_rules,
    run_features,
    validate_path,
)

P = MineParams(min_support=3)


def test_command_features() -> None:
    assert command_features("ffmpeg -hide_banner -i a.mp4 -vf fps=1/2 out/%04d.png") == [
        "flag:ffmpeg -hide_banner",
        "flag:ffmpeg -i",
        "flag:ffmpeg -vf",
        "flag:ffmpeg -vf fps=",
    ]
    assert "import:cv2" in command_features('python3 -c "import cv2; print(1)"')
    assert command_features("timeout 60 whisper a.wav --model tiny") == [
        "flag:whisper --model",
        "flag:whisper --model tiny",
    ]


def test_run_features_order_recovery_and_error() -> None:
    from distill_labs import steps

    rows = [
        s
        for s in steps(
            "t",
            [
                PROBE,
                ("whisper a.wav", 127),
                "pip install openai-whisper",
                "whisper a.wav",
                ("python3 inspect.py", 2),
                EXTRACT,
            ],
        )
        if s["kind"] == "tool_call"
    ]
    f = run_features(rows)
    assert {"use:ffprobe", "use:whisper", "use:pip", "use:python", "use:ffmpeg"} <= set(f)
    assert "order:ffprobe<ffmpeg" in f and "order:ffmpeg<ffprobe" not in f
    assert f["recover:whisper"].command == "pip install openai-whisper"  # the fix, not the retry
    assert f["error:python"].step_index == 5
    assert "error:whisper" not in f


def test_planted_probe_rule_with_provenance(tmp_path: Path) -> None:
    lab, ids = probe_lab(tmp_path / "lab")
    res = distill(tmp_path / "skills", lab=tmp_path / "lab", params=P, progress=False)
    assert (res.runs, res.successes, res.failures, res.excluded_eval) == (12, 6, 6, 8)
    rule = next(r for r in res.rules if r.feature == "use:ffprobe")
    assert rule.direction == "do" and rule.scope == "all"
    assert sorted(rule.supporting) == sorted(ids["succ"])
    assert sorted(rule.contradicting) == sorted(ids["fail_probe"])
    assert (rule.n_with, rule.n_with_success) == (8, 6)
    assert abs(rule.confidence - 0.75) < 1e-9 and abs(rule.lift - 1.5) < 1e-9
    assert abs(rule.p_value - 0.0303030303) < 1e-6  # one-sided Fisher exact on [[6,2],[0,4]]
    assert "order:ffprobe<ffmpeg" not in rule.merged  # the order never varies here
    d = tmp_path / "skills" / "distilled-general"
    text = (d / "SKILL.md").read_text(encoding="utf-8")
    assert "**Run `ffprobe`**" in text and "75% of 8 runs" in text
    prov = json.loads((d / "references" / "provenance.json").read_text(encoding="utf-8"))
    [pr] = [r for r in prov["rules"] if r["feature"] == "use:ffprobe"]
    assert sorted(pr["supporting"]) == sorted(ids["succ"])
    assert prov["excluded_eval_or_heldout"] == 8 and prov["runs_used"] == 12
    assert prov["source_lab"] == str(lab.root)
    assert prov["distiller"] == {"kind": "template"}
    assert [i["rule"] for i in prov["items"] if i["rule"]] == ["do|all|use:ffprobe"]
    # no eval run is cited anywhere
    blob = json.dumps(prov) + (d / "references" / "rules.md").read_text(encoding="utf-8")
    assert all(f'"{e}"' not in blob for e in ids["eval"])
    assert all(r.ok for r in validate_path(tmp_path / "skills"))
    sk = load_skill(d)
    assert sk.metadata["version"] == "1" and sk.metadata["content-hash"].startswith("sha256:")


def test_eval_runs_would_flip_the_rule(tmp_path: Path) -> None:
    # Sanity check of the guard: if eval runs were read, ffprobe would no longer look good.
    lab, _ = probe_lab(tmp_path / "lab")
    corpus = load_corpus(lab)
    assert {r.split for r in corpus.runs} == {"train"}
    lab2 = make_lab(
        tmp_path / "lab2",
        [(traj(f"x{i}", "failure", domain="video"), [PROBE, EXTRACT]) for i in range(6)]
        + [(traj(f"y{i}", "success", domain="video"), [EXTRACT]) for i in range(6)],
    )
    rules = mine_rules(load_corpus(lab2), P)
    assert [(r.direction, r.feature) for r in rules if r.feature == "use:ffprobe"] == [
        ("avoid", "use:ffprobe")
    ]


def test_reproducible_and_versioned(tmp_path: Path) -> None:
    probe_lab(tmp_path / "lab")
    out = tmp_path / "skills"
    a = distill(out, lab=tmp_path / "lab", params=P, progress=False)
    first = (out / "distilled-general" / "SKILL.md").read_bytes()
    b = distill(out, lab=tmp_path / "lab", params=P, progress=False)
    assert (a.skills[0].version, a.skills[0].created) == (1, True)
    assert (b.skills[0].version, b.skills[0].created) == (1, False)
    assert (out / "distilled-general" / "SKILL.md").read_bytes() == first
    assert [p.name for p in (out / ".history" / "distilled-general").iterdir()] == ["v0001"]


def test_merge_across_runs_keeps_old_rules(tmp_path: Path) -> None:
    probe_lab(tmp_path / "lab")
    out = tmp_path / "skills"
    distill(out, lab=tmp_path / "lab", params=P, progress=False)
    # A second lab where ffprobe no longer separates outcomes but a `--model small` flag does.
    runs = []
    for i in range(6):
        runs.append((traj(f"w{i}", "success", domain="video"), ["whisper a.wav --model small", EXTRACT]))
        runs.append((traj(f"v{i}", "failure", domain="video"), ["whisper a.wav --model tiny", EXTRACT]))
    make_lab(tmp_path / "lab2", runs)
    res = distill(out, lab=tmp_path / "lab2", params=P, progress=False)
    keys = {r.key for r in res.rules}
    assert "do|all|flag:whisper --model small" in keys or "avoid|all|flag:whisper --model tiny" in keys
    prov = json.loads(
        (out / "distilled-general" / "references" / "provenance.json").read_text(encoding="utf-8")
    )
    by_key = {r["key"]: r for r in prov["rules"]}
    assert by_key["do|all|use:ffprobe"]["stale"] is True  # kept from the first run, marked stale
    assert res.skills[0].version == 2
    diff = (out / ".history" / "distilled-general" / "v0002" / "diff.patch").read_text(encoding="utf-8")
    assert "+++ v0002/SKILL.md" in diff and "whisper" in diff


def test_contradicted_old_rule_is_dropped(tmp_path: Path) -> None:
    probe_lab(tmp_path / "lab")
    out = tmp_path / "skills"
    distill(out, lab=tmp_path / "lab", params=P, progress=False)
    runs = [(traj(f"x{i}", "failure"), [PROBE, OCR]) for i in range(5)]
    runs += [(traj(f"y{i}", "success"), [OCR, "grep -n total out.txt"]) for i in range(5)]
    make_lab(tmp_path / "lab2", runs)
    res = distill(out, lab=tmp_path / "lab2", params=P, progress=False)
    assert "do|all|use:ffprobe" not in {r.key for r in res.rules}
    prov = json.loads(
        (out / "distilled-general" / "references" / "provenance.json").read_text(encoding="utf-8")
    )
    assert "do|all|use:ffprobe" not in {r["key"] for r in prov["rules"]}


def test_failure_modes_from_labels_and_flag_dedupe(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from trajlab.store import Lab

    runs = []
    for i in range(6):
        runs.append((traj(f"s{i}", "success"), ["whisper a.wav --model small", OCR]))
        runs.append((traj(f"f{i}", "failure"), ["whisper a.wav --model tiny", OCR]))
    make_lab(tmp_path / "lab", runs)
    now = datetime(2026, 10, 2, tzinfo=timezone.utc)
    with Lab.open(tmp_path / "lab").write("labels") as txn:
        txn.append(
            "judge_labels",
            [
                {
                    "label_id": f"jl{i}",
                    "trajectory_id": f"f{i}",
                    "judge": "rules",
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1",
                    "status": "labeled",
                    "category": "audio_perception",
                    "created_at": now,
                }
                for i in range(6)
            ],
        )
        txn.append(
            "gold_labels",
            [
                {
                    "trajectory_id": "f0",
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1",
                    "category": "tool_infrastructure",
                    "method": "adjudicated",
                    "created_at": now,
                }
            ],
        )
    res = distill(tmp_path / "out", lab=tmp_path / "lab", params=P, progress=False)
    keys = [r.key for r in res.rules]
    # `--model` alone does not separate outcomes; its values do, and each pair is merged into one rule
    assert "do|all|flag:whisper --model small" in keys and "avoid|all|flag:whisper --model tiny" in keys
    assert not any(k.endswith("flag:whisper --model") for k in keys)
    prov = json.loads((tmp_path / "out" / "distilled-general" / "references" / "provenance.json").read_text())
    modes = {m["category"]: m["failures"] for m in prov["failure_modes"]}
    assert modes == {"audio_perception": 5, "tool_infrastructure": 1}  # gold label wins over the judge's
    assert prov["label_sources"] == {"judge": 6, "gold": 1}
    text = (tmp_path / "out" / "distilled-general" / "SKILL.md").read_text()
    assert "## Failure modes seen" in text and "`audio_perception`: 5 of 6 labeled failures" in text
    assert "`whisper --model tiny`" in text
