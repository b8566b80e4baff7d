"""Hand-built labs for the distillation tests: runs whose tool orders we choose."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from trajlab.normalize import analyze_command
from trajlab.store import Lab

T0 = datetime(2026, 10, 1, tzinfo=timezone.utc)


def traj(tid: str, outcome: str, **kw: Any) -> dict[str, Any]:
    row = {
        "trajectory_id": tid,
        "runner": "codex",
        "format": "codex-rollout",
        "source_path": f"/runs/{tid}.jsonl",
        "source_digest": f"xxh3_128:{tid}",
        "task_id": kw.pop("task_id", f"task-{tid}"),
        "task": kw.pop("task", f"Answer the question about clip_{tid}.mp4"),
        "split": kw.pop("split", "train"),
        "outcome": outcome,
        "ingested_at": T0,
        "started_at": T0 + timedelta(minutes=int.from_bytes(tid.encode(), "little") % 1000),
    }
    row.update(kw)
    return row


def steps(tid: str, commands: list[str | tuple[str, int]]) -> list[dict[str, Any]]:
    """Tool-call rows; a (command, exit_code) tuple marks a failed call."""
    out = [{"trajectory_id": tid, "step_index": 0, "step_id": f"{tid}:0", "kind": "user", "text": "task"}]
    for i, c in enumerate(commands, 1):
        cmd, code = (c, 0) if isinstance(c, str) else c
        info = analyze_command(cmd)
        out.append(
            {
                "trajectory_id": tid,
                "step_index": i,
                "step_id": f"{tid}:{i}",
                "kind": "tool_call",
                "tool_name": "exec_command",
                "tool": info.tool,
                "programs": list(info.programs),
                "command": cmd,
                "output": "ok" if code == 0 else "error: failed",
                "exit_code": code,
                "is_error": code != 0,
                "modality": info.modality,
            }
        )
    return out


def make_lab(path: Path, runs: list[tuple[dict[str, Any], list[str | tuple[str, int]]]]) -> Lab:
    lab = Lab.create(path)
    with lab.write("test") as txn:
        txn.append("trajectories", [t for t, _ in runs])
        txn.append("steps", [s for t, cmds in runs for s in steps(t["trajectory_id"], cmds)])
        n = {t["trajectory_id"]: len(cmds) for t, cmds in runs}
        del n
    return Lab.open(path)


PROBE = "ffprobe -v error -show_streams clip.mp4"
EXTRACT = "ffmpeg -i clip.mp4 -vf fps=1 frames/%04d.png"
OCR = "tesseract frames/0001.png -"


def probe_lab(path: Path, eval_runs: bool = True) -> tuple[Lab, dict[str, list[str]]]:
    """12 train runs: every success probes before extracting; 2 of 6 failures probe too.

    Eval runs (which must never be read) do the opposite: failures that probe, successes that do not.
    """
    runs: list[tuple[dict[str, Any], list[str | tuple[str, int]]]] = []
    ids: dict[str, list[str]] = {"succ": [], "fail_probe": [], "fail": [], "eval": []}
    for i in range(6):
        tid = f"s{i}"
        runs.append((traj(tid, "success", domain="video"), [PROBE, EXTRACT, OCR]))
        ids["succ"].append(tid)
    for i in range(6):
        tid = f"f{i}"
        cmds: list[str | tuple[str, int]] = [PROBE, EXTRACT, OCR] if i < 2 else [EXTRACT, OCR]
        runs.append((traj(tid, "failure", domain="video"), cmds))
        ids["fail_probe" if i < 2 else "fail"].append(tid)
    if eval_runs:
        for i in range(8):
            tid = f"e{i}"
            ok = i % 2 == 0
            runs.append(
                (
                    traj(
                        tid,
                        "success" if ok else "failure",
                        domain="video",
                        split="eval",
                        task_id=f"evtask-{i}",
                        expected_answer=f"GOLD-{i}{i}{i}",
                    ),
                    [EXTRACT, OCR] if ok else [PROBE, EXTRACT, OCR],
                )
            )
            ids["eval"].append(tid)
    return make_lab(path, runs), ids
