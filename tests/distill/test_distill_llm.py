"""The LLM skill writer and editor against a local scripted Chat Completions server (127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from distill_labs import probe_lab

from trajlab.distill import JudgeChat, MineParams, distill, empty_skill, load_skill
from trajlab.distill._writer import llm_edit_ops
from trajlab.judge import LLMSettings

pytestmark = pytest.mark.llm
P = MineParams(min_support=3)


def writer_answer(req: dict, n: int) -> str:
    payload = json.loads(req["messages"][-1]["content"])
    items = [
        {
            "rule": r["key"],
            "section": "Do",
            "text": f"Always start with `{r['feature'].split(':')[1]}` to see the streams.",
        }
        for r in payload["rules"]
    ]
    items.append({"rule": "do|all|use:made-up", "text": "Invented rule."})  # must be dropped
    return json.dumps(
        {"description": "Probe media before extracting. Use for video questions.", "items": items}
    )


def client(server, tmp_path: Path) -> JudgeChat:
    s = LLMSettings(model="scripted", base_url=server.base_url, max_retries=1, backoff_s=0.01)
    return JudgeChat(s, tmp_path / "cache")


def test_llm_writer_with_cache_and_redaction(tmp_path: Path, scripted_llm) -> None:
    _, ids = probe_lab(tmp_path / "lab")
    server = scripted_llm(responder=writer_answer)
    c = client(server, tmp_path)
    res = distill(tmp_path / "out", lab=tmp_path / "lab", params=P, client=c, progress=False)
    assert server.n_requests == 1
    sk = load_skill(tmp_path / "out" / "distilled-general")
    assert sk.description == "Probe media before extracting. Use for video questions."
    [(_, item)] = [(s, i) for s, i in sk.items() if s.title == "Do"]
    assert item.text.startswith("Always start with `ffprobe`") and "75% of 8 runs" in item.text  # our numbers
    assert item.rule == "do|all|use:ffprobe"
    prov = json.loads((tmp_path / "out" / "distilled-general" / "references" / "provenance.json").read_text())
    assert prov["distiller"]["kind"] == "llm" and prov["distiller"]["model"] == "scripted"
    assert prov["distiller"]["prompt_hash"].startswith("sha256:")
    # what was sent: rule evidence and generalized commands, no eval run, no gold answer
    sent = json.dumps(server.requests[0])
    assert "GOLD-" not in sent and all(f'"{e}"' not in sent for e in ids["eval"])
    assert "input.mp4" in sent and "clip.mp4" not in sent
    # a rerun is served from the cache: no request, same bytes
    before = (tmp_path / "out" / "distilled-general" / "SKILL.md").read_bytes()
    c2 = client(server, tmp_path)
    res2 = distill(tmp_path / "out", lab=tmp_path / "lab", params=P, client=c2, progress=False)
    assert server.n_requests == 1 and c2.cached == 1
    assert res2.skills[0].created is False and res.skills[0].version == 1
    assert (tmp_path / "out" / "distilled-general" / "SKILL.md").read_bytes() == before


def test_unusable_llm_answer_falls_back_to_templates(tmp_path: Path, scripted_llm) -> None:
    probe_lab(tmp_path / "lab")
    server = scripted_llm(responder=lambda req, n: "I think you should probe the media.")
    res = distill(
        tmp_path / "out", lab=tmp_path / "lab", params=P, client=client(server, tmp_path), progress=False
    )
    assert res.skills[0].writer["kind"] == "template"
    assert "no JSON object" in res.skills[0].writer["fallback_reason"]
    assert "**Run `ffprobe`**" in (tmp_path / "out" / "distilled-general" / "SKILL.md").read_text()


def test_llm_editor_ops_are_validated(tmp_path: Path, scripted_llm) -> None:
    sk = empty_skill("cal")
    answer = {
        "ops": [
            {
                "kind": "add",
                "section": "Do",
                "text": "Transcribe audio with `whisper` before answering.",
                "rule": None,
            },
            {"kind": "add", "section": "Nowhere", "text": "x" * 500},
            {"kind": "explode"},
            {"kind": "remove", "item_id": "deadbeef"},
        ]
    }
    server = scripted_llm(responder=lambda req, n: json.dumps(answer))
    ops = llm_edit_ops(
        client(server, tmp_path), sk, [{"task": "audio-02", "commands": ["strings a.wav"]}], [], 4
    )
    assert [(o.kind, o.section) for o in ops] == [("add", "Do"), ("remove", "Do")]
    assert "audio-02" in server.requests[0]["messages"][-1]["content"]


@pytest.mark.slow
def test_iterate_with_llm_editor(tmp_path: Path, scripted_llm) -> None:
    import sys

    from trajlab.distill import iterate

    runner = Path(__file__).resolve().parents[1] / "fixtures" / "distill" / "toy_runner.py"
    cmd = f"{sys.executable} {runner} {{task}} {{skills_dir}} {{out_dir}}"
    edit = {
        "ops": [
            {
                "kind": "add",
                "section": "Do",
                "text": "Probe every video with `ffprobe` before `ffmpeg`.",
                "reason": "failed video tasks never probed",
            }
        ]
    }
    server = scripted_llm(responder=lambda req, n: json.dumps(edit))
    res = iterate(
        tmp_path / "w",
        ["video-01", "video-02", "video-03"],
        cmd,
        rounds=1,
        max_ops=2,
        client=client(server, tmp_path),
        progress=False,
    )
    assert [r.cal_score for r in res.rounds] == pytest.approx([1 / 3, 1.0])
    assert res.rounds[1].ops[0]["reason"] == "failed video tasks never probed"
    sent = server.requests[0]["messages"][-1]["content"]
    assert "video-02" in sent and "ffmpeg -i input.mp4" in sent  # failed runs, generalized
    prov = json.loads((res.chosen_path / "references" / "provenance.json").read_text())
    assert prov["iterate"]["editor"] == "scripted" and prov["iterate"]["editor_prompt_hash"].startswith(
        "sha256:"
    )


@pytest.mark.slow
def test_writer_with_real_local_model(tmp_path: Path, smollm2_server) -> None:
    """SmolLM2-135M rarely writes usable JSON; whatever it answers, the skill must stay valid."""
    from trajlab.distill import validate_path

    probe_lab(tmp_path / "lab")
    s = LLMSettings(model="smollm2", base_url=smollm2_server.base_url, max_retries=0, timeout_s=120)
    chat = JudgeChat(s, tmp_path / "c", max_tokens=16)  # kept short: the machine has 2 cores
    res = distill(tmp_path / "out", lab=tmp_path / "lab", params=P, client=chat, progress=False, max_items=1)
    assert chat.requests == 1  # one answer (no retry), usable or not
    assert res.skills[0].writer["kind"] in ("llm", "template")
    assert all(r.ok for r in validate_path(tmp_path / "out"))
    text = (tmp_path / "out" / "distilled-general" / "SKILL.md").read_text()
    assert "75% of 8 runs" in text  # the evidence line is ours, whoever wrote the sentence
