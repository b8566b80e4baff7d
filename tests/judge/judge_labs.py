"""Build small labs for the judge tests from the JSON fixtures in tests/fixtures/judge/."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trajlab.store import Lab

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "judge"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def rows_of(trajectories: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    traj_rows, step_rows = [], []
    for t in trajectories:
        t = dict(t)
        steps = t.pop("steps")
        tid = t["trajectory_id"]
        if isinstance(t.get("metadata"), dict):
            t["metadata"] = json.dumps(t["metadata"])
        t.setdefault("source_path", f"/fixtures/{tid}.jsonl")
        t.setdefault("source_digest", f"xxh3_128:{tid}")
        t.setdefault("ingested_at", NOW)
        t["n_steps"] = len(steps)
        t["n_tool_calls"] = sum(s["kind"] == "tool_call" for s in steps)
        t["n_errors"] = sum(bool(s.get("is_error")) for s in steps)
        traj_rows.append(t)
        for i, s in enumerate(steps):
            row = {"trajectory_id": tid, "step_index": i, "step_id": f"{tid}:{i}", **s}
            if isinstance(row.get("metadata"), dict):
                row["metadata"] = json.dumps(row["metadata"])
            step_rows.append(row)
    return traj_rows, step_rows


def load_fixture(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / f"{name}.json").read_text())["trajectories"]


def make_lab(path: Path, *names: str, extra: list[dict[str, Any]] | None = None) -> Lab:
    trajs: list[dict[str, Any]] = []
    for n in names:
        trajs += load_fixture(n)
    trajs += extra or []
    lab = Lab.create(path)
    t, s = rows_of(trajs)
    with lab.write("fixture") as txn:
        txn.append("trajectories", t)
        txn.append("steps", s)
    return lab


def long_trajectory(
    tid: str = "t_long", n_steps: int = 400, out_chars: int = 1500, n_errors: int = 6
) -> dict[str, Any]:
    """A video run over 100k tokens: many noisy tool calls, a few erroring steps spread through it."""
    steps: list[dict[str, Any]] = [
        {"kind": "user", "text": "In dashcam_drive_009.mp4, how many red cars pass? Answer a number."}
    ]
    err_every = max(1, n_steps // (n_errors + 1))
    for i in range(1, n_steps):
        if i % err_every == 0 and i // err_every <= n_errors:
            steps.append(
                {
                    "kind": "tool_call",
                    "tool_name": "exec_command",
                    "tool": "ffmpeg",
                    "modality": "video",
                    "command": f"ffmpeg -i dashcam_drive_009.mp4 -vf fps=1 /data/frames_{i}/%04d.png",
                    "output": f"[error {i}] /data/frames_{i}/%04d.png: Permission denied\nConversion failed!",
                    "exit_code": 1,
                    "is_error": True,
                }
            )
        elif i % 7 == 0:
            steps.append(
                {
                    "kind": "reasoning",
                    "text": f"Thinking about segment {i}. " + "Let me look more carefully. " * 40,
                }
            )
        else:
            noise = "".join(
                f"frame {i}-{k}: objects=car,tree,sign conf=0.{k % 10}{i % 10}\n"
                for k in range(out_chars // 45)
            )
            steps.append(
                {
                    "kind": "tool_call",
                    "tool_name": "exec_command",
                    "tool": "python",
                    "modality": "compute",
                    "command": f"python3 detect.py --segment {i}",
                    "output": noise,
                    "exit_code": 0,
                }
            )
    steps.append({"kind": "assistant", "text": "The answer is 7."})
    return {
        "trajectory_id": tid,
        "runner": "codex",
        "format": "codex-rollout",
        "model": "gpt-test",
        "benchmark": "omni-test",
        "domain": "video",
        "outcome": "failure",
        "task": steps[0]["text"],
        "final_answer": "The answer is 7.",
        "steps": steps,
    }
