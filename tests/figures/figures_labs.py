"""A hand-built lab with known numbers for the figure tests (imported as `figures_labs`).

40 trajectories `t00`..`t39`; `t00`-`t19` succeed, `t20`-`t39` fail.

- model `m-a` for even i, `m-b` for odd i; harness `h`; reasoning effort `high` when i % 3 == 0, else `low`
- total_tokens = 1000 (m-a) / 3000 (m-b), + 500 for effort high
- difficulty str(1 + i % 3); condition `skill` when (i // 2) % 2 == 1 else `no-skill`
- tool calls: every run calls python (compute); ffprobe in 16 of the 20 successes (i % 5 != 4) and 4
  of the 20 failures (i % 5 == 0); `cat notes.txt` (file) when i % 4 == 0; `curl` (external) when i % 8 == 0
- failures j = i - 20: judge (rules) category audio_perception for j < 10, tool_infrastructure for
  10 <= j < 16, reasoning_calculation for j >= 16; gold = judge except j = 0 (video_perception);
  human annotator `ann1` = gold except j = 1 (knowledge_retrieval)
- every run's closing assistant message but t20's records `prompt_tokens(i)` input tokens (one model
  call with prompt tokens per run): 1200 for runs that call ffprobe, 800 for the others (t20 has none:
  with usage on a trajectory's steps the DAG reads consecutive calls without it as one response)
- `t20` has a real omni-modal step sequence (audio extraction, whisper, a web search, the answer) with
  gold decisive step 4, whose command line carries a secret and markup
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trajlab.normalize import normalize_call
from trajlab.store import Lab

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
N = 40
SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
TAX = {"taxonomy_id": "omni-failure", "taxonomy_version": "1.0.0"}


def model(i: int) -> str:
    return "m-a" if i % 2 == 0 else "m-b"


def effort(i: int) -> str:
    return "high" if i % 3 == 0 else "low"


def tokens(i: int) -> int:
    return (1000 if model(i) == "m-a" else 3000) + (500 if effort(i) == "high" else 0)


def prompt_tokens(i: int) -> int:
    return 1200 if uses_ffprobe(i) else 800


def difficulty(i: int) -> str:
    return str(1 + i % 3)


def condition(i: int) -> str:
    return "skill" if (i // 2) % 2 == 1 else "no-skill"


def uses_ffprobe(i: int) -> bool:
    return i % 5 != 4 if i < 20 else i % 5 == 0


def judge_category(j: int) -> str:
    return "audio_perception" if j < 10 else "tool_infrastructure" if j < 16 else "reasoning_calculation"


def gold_category(j: int) -> str:
    return "video_perception" if j == 0 else judge_category(j)


def human_category(j: int) -> str:
    return "knowledge_retrieval" if j == 1 else gold_category(j)


def _call(tid: str, idx: int, tool_name: str, args: Any, output: str = "ok", **extra: Any) -> dict[str, Any]:
    info = normalize_call(tool_name, args)
    return {
        "trajectory_id": tid,
        "step_index": idx,
        "step_id": f"{tid}:{idx}",
        "kind": "tool_call",
        "tool_name": tool_name,
        "tool": info.tool,
        "programs": list(info.programs),
        "modality": info.modality,
        "command": info.command,
        "arguments": None,
        "output": output,
        "exit_code": 0,
        "call_id": f"c{idx}",
        **extra,
    }


def _msg(tid: str, idx: int, kind: str, text: str) -> dict[str, Any]:
    return {"trajectory_id": tid, "step_index": idx, "step_id": f"{tid}:{idx}", "kind": kind, "text": text}


def exemplar_steps(tid: str) -> list[dict[str, Any]]:
    return [
        _msg(tid, 0, "system", "You are an agent with ffmpeg and whisper."),
        _msg(tid, 1, "user", "What number does the narrator say in clip.mp4?"),
        _call(tid, 2, "Bash", {"command": "ffmpeg -i clip.mp4 -vn -ac 1 audio.wav"}, "wrote audio.wav"),
        _call(tid, 3, "Bash", {"command": "whisper audio.wav --model tiny"}, "the number is forty two"),
        _call(
            tid, 4, "Bash", {"command": f"OPENAI_API_KEY={SECRET} python3 -c 'print(\"<a href=x>41</a>\")'"}
        ),
        _call(tid, 5, "web_search", {"query": "clip.mp4 narrator number"}, "no results"),
        _msg(tid, 6, "assistant", "The answer is 41."),
    ]


def build_lab(
    root: Path,
    tokens_on: bool = True,
    difficulty_on: bool = True,
    labels_on: bool = True,
    evil: bool = False,
) -> Lab:
    """The lab described above; `evil` puts markup into model, condition and difficulty values."""
    tag = "<img src=x onerror=alert(1)>" if evil else ""
    trajectories, steps = [], []
    judge, gold, human = [], [], []
    for i in range(N):
        tid = f"t{i:02d}"
        outcome = "success" if i < 20 else "failure"
        if i == 20:
            rows = exemplar_steps(tid)
        else:
            rows, k = [], 0
            cmds = ["python3 solve.py"]
            if uses_ffprobe(i):
                cmds.append("ffprobe -v error -show_streams clip.mp4")
            if i % 4 == 0:
                cmds.append("cat notes.txt")
            if i % 8 == 0:
                cmds.append("curl -sL https://example.org/a.mp4 -o a.mp4")
            rows.append(_msg(tid, k, "user", f"task {i}"))
            for cmd in cmds:
                k += 1
                rows.append(_call(tid, k, "Bash", {"command": cmd}))
            rows.append(_msg(tid, k + 1, "assistant", "done"))
        if i != 20:
            rows[-1]["input_tokens"] = prompt_tokens(i) if tokens_on else None
        steps += rows
        trajectories.append(
            {
                "trajectory_id": tid,
                "runner": "test",
                "format": "test",
                "source_path": f"/fixtures/{tid}.jsonl",
                "source_digest": f"xxh3_128:{tid}",
                "outcome": outcome,
                "model": model(i) + tag,
                "harness": "h",
                "reasoning_effort": effort(i),
                "benchmark": "bench",
                "domain": "audio",
                "total_tokens": tokens(i) if tokens_on else None,
                "difficulty": (difficulty(i) + tag if evil and i % 3 == 2 else difficulty(i))
                if difficulty_on
                else None,
                "condition": f"<b>{condition(i)}</b>" if evil else condition(i),
                "n_steps": len(rows),
                "n_tool_calls": sum(1 for r in rows if r["kind"] == "tool_call"),
                "ingested_at": NOW,
            }
        )
        if outcome == "failure" and labels_on:
            j = i - 20
            judge.append(
                {
                    "label_id": f"jl_{tid}",
                    "trajectory_id": tid,
                    "judge": "rules",
                    "model": "rules-1",
                    "status": "labeled",
                    "category": judge_category(j),
                    "decisive_step_index": 4 if i == 20 else 1,
                    "created_at": NOW,
                    **TAX,
                }
            )
            gold.append(
                {
                    "trajectory_id": tid,
                    "category": gold_category(j),
                    "decisive_step_index": 4 if i == 20 else 1,
                    "method": "unanimous",
                    "created_at": NOW,
                    **TAX,
                }
            )
            human.append(
                {
                    "record_id": f"hr_{tid}",
                    "trajectory_id": tid,
                    "annotator": "ann1",
                    "category": human_category(j),
                    "decisive_step_index": 4 if i == 20 else 1,
                    "created_at": NOW,
                    "source_file": "annotations/default/ann1.jsonl",
                    "source_line": j + 1,
                    **TAX,
                }
            )
    lab = Lab.open(root, create=True)
    with lab.write("figures test fixture") as txn:
        txn.append("trajectories", trajectories)
        txn.append("steps", steps)
        if judge:
            txn.append("judge_labels", judge)
            txn.append("gold_labels", gold)
            txn.append("human_labels", human)
    return lab
