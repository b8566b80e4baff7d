"""Synthetic labs for the review tests: trajectories whose steps carry a known failure signal."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from trajlab.store import Lab

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
CATEGORIES = (
    "audio_perception",
    "video_perception",
    "insufficient_exploration",
    "knowledge_retrieval",
    "reasoning_calculation",
    "tool_infrastructure",
)


@dataclass
class Tax:
    """A tiny stand-in with the Taxonomy attributes review uses."""

    id: str = "omni-failure"
    version: str = "1.0.0"
    categories: list[Any] = field(default_factory=list)

    @property
    def category_ids(self) -> list[str]:
        return list(CATEGORIES)


# (tool, command, output, is_error) per category: the planted signal of each failure cause.
SIGNALS: dict[str, list[tuple[str, str, str, bool]]] = {
    "audio_perception": [
        ("whisper", "whisper clip.wav --model tiny", "[00:00] the number is fourty (inaudible)", False)
    ],
    "video_perception": [
        ("ffmpeg", "ffmpeg -i clip.mp4 -vframes 1 frame.png", "frame=1 written, blurry", False)
    ],
    "insufficient_exploration": [("ls", "ls media/", "clip.mp4 clip.wav notes.txt", False)],
    "knowledge_retrieval": [("curl", "curl -s https://example.org/facts", "Founded in 1887 by", False)],
    "reasoning_calculation": [("python", "python -c 'print(17*23)'", "391", False)],
    "tool_infrastructure": [("bash", "whisperx clip.wav", "bash: whisperx: command not found", True)],
}
NOISE = [
    ("cat", "cat task.txt", "Answer the question about the media file.", False),
    ("ls", "ls -la", "total 12\nclip.mp4", False),
    ("python", "python -c 'print(1)'", "1", False),
    ("grep", "grep -i answer notes.txt", "answer: maybe", False),
]


def traj_row(tid: str, n_steps: int, outcome: str = "failure", **extra: Any) -> dict[str, Any]:
    return {
        "trajectory_id": tid,
        "runner": "synthetic",
        "format": "synthetic",
        "source_path": f"/synthetic/{tid}.jsonl",
        "source_digest": f"xxh3_128:{tid}",
        "task": f"Task of {tid}: what is said in the clip?",
        "outcome": outcome,
        "n_steps": n_steps,
        "ingested_at": T0,
        **extra,
    }


def step_rows(tid: str, acts: list[tuple[str, str, str, bool]]) -> list[dict[str, Any]]:
    rows = [
        {"trajectory_id": tid, "step_index": 0, "step_id": f"{tid}:0", "kind": "user", "text": "Do the task"}
    ]
    for i, (tool, command, output, err) in enumerate(acts, start=1):
        rows.append(
            {
                "trajectory_id": tid,
                "step_index": i,
                "step_id": f"{tid}:{i}",
                "kind": "tool_call",
                "tool_name": "Bash",
                "tool": tool,
                "command": command,
                "output": output,
                "is_error": err,
                "exit_code": 127 if err else 0,
            }
        )
    n = len(rows)
    rows.append(
        {
            "trajectory_id": tid,
            "step_index": n,
            "step_id": f"{tid}:{n}",
            "kind": "assistant",
            "text": "The answer is 42.",
        }
    )
    return rows


def judge_row(
    tid: str,
    category: str | None,
    judge: str = "llm",
    confidence: float | None = 0.9,
    step: int | None = 1,
    **kw: Any,
) -> dict[str, Any]:
    return {
        "label_id": f"jl_{judge}_{tid}",
        "trajectory_id": tid,
        "judge": judge,
        "model": "m" if judge == "llm" else "rules-1",
        "taxonomy_id": "omni-failure",
        "taxonomy_version": "1.0.0",
        "status": "labeled",
        "category": category,
        "decisive_step_index": step,
        "evidence_steps": [step] if step is not None else [],
        "confidence": confidence,
        "rationale": f"{judge} thinks {category}",
        "created_at": T0,
        **kw,
    }


def make_lab(
    path: Path, trajs: list[tuple[dict[str, Any], list[dict[str, Any]]]], judges: list[dict[str, Any]] = ()
) -> Lab:
    lab = Lab.create(path)
    with lab.write("synthetic") as txn:
        txn.append("trajectories", [t for t, _ in trajs])
        txn.append("steps", [s for _, steps in trajs for s in steps])
        if judges:
            txn.append("judge_labels", list(judges))
    return lab


def signal_lab(
    path: Path, n_per_class: int = 20, seed: int = 0, noise_steps: int = 3
) -> tuple[Lab, dict[str, str]]:
    """A lab where each failed run's category is planted as its decisive tool step among noise steps.

    Returns the lab and trajectory -> true category. Every run also gets an LLM judge label whose
    decisive step is the planted step (as a good judge would point at), with a random category.
    """
    rng = random.Random(seed)
    trajs, judges, truth = [], [], {}
    for c in CATEGORIES:
        for i in range(n_per_class):
            tid = f"t_{c[:5]}_{i:03d}"
            acts = [rng.choice(NOISE) for _ in range(noise_steps)]
            pos = rng.randint(0, len(acts))
            acts.insert(pos, rng.choice(SIGNALS[c]))
            trajs.append(
                (
                    traj_row(tid, len(acts) + 2, domain=rng.choice(["audio", "video", "image"])),
                    step_rows(tid, acts),
                )
            )
            judges.append(
                judge_row(tid, rng.choice(CATEGORIES), step=pos + 1, created_at=T0 + timedelta(seconds=i))
            )
            truth[tid] = c
    return make_lab(path, trajs, judges), truth
