"""Labs for the dashboard tests: a synthetic runs lab with known counts, long runs with sub-agents,
and the example runs (which plant a `<script>`/`<img onerror>` output and an env dump of secrets)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from trajlab.store import Lab

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
RUNNERS = ("codex", "claude_code", "atif")
MODELS = ("model-a", "model-b", "model-c", None)
TOOLS = (
    ("ffmpeg", "video"),
    ("whisper", "audio"),
    ("tesseract", "image"),
    ("curl", "web"),
    ("python", "compute"),
)
CATEGORIES = ("audio_perception", "video_perception", "tool_infrastructure")


def traj_row(tid: str, i: int, n_steps: int, **extra: Any) -> dict[str, Any]:
    return {
        "trajectory_id": tid,
        "runner": RUNNERS[i % 3],
        "format": "synthetic",
        "source_path": f"/synthetic/{tid}.jsonl",
        "source_digest": f"xxh3_128:{tid}",
        "task": f"Task {i}: count the frames in clip_{i}.mp4",
        "model": MODELS[i % 4],
        "harness": "h-one" if i % 2 else "h-two",
        "benchmark": "bench-x" if i < 30 else "bench-y",
        "domain": ("video", "audio", "image")[i % 3],
        "outcome": "failure" if i % 5 in (0, 1) else "success",
        "n_steps": n_steps,
        "n_tool_calls": n_steps - 2,
        "total_tokens": 1000 + 37 * i,
        "duration_s": float(i),
        "started_at": T0 + timedelta(minutes=i),
        "ingested_at": T0,
        **extra,
    }


def tools_of(i: int) -> list[tuple[str, str]]:
    """The tools trajectory i calls: TOOLS[i % 5] and, for even i, also TOOLS[(i + 1) % 5]."""
    out = [TOOLS[i % 5]]
    if i % 2 == 0:
        out.append(TOOLS[(i + 1) % 5])
    return out


def runs_rows(
    n: int = 40,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Trajectories, steps, judge labels and lab human labels of the synthetic runs lab.

    Failures (i % 5 in 0, 1) get an LLM judge label CATEGORIES[i % 3] (i % 3 != 2) or a rules label
    (i % 3 == 2); failures with i % 10 == 0 also have a lab human label `video_perception` (dataset
    `other`), which wins over the judge's.
    """
    trajs, steps, judges, humans = [], [], [], []
    for i in range(n):
        tid = f"t_{i:04d}"
        tools = tools_of(i)
        rows = [
            {"trajectory_id": tid, "step_index": 0, "step_id": f"{tid}:0", "kind": "user", "text": "do it"}
        ]
        for tool, modality in tools:
            k = len(rows)
            rows.append(
                {
                    "trajectory_id": tid,
                    "step_index": k,
                    "step_id": f"{tid}:{k}",
                    "kind": "tool_call",
                    "tool_name": "Bash",
                    "tool": tool,
                    "modality": modality,
                    "command": f"{tool} input_{i}",
                    "output": "ok",
                    "exit_code": 0,
                }
            )
        k = len(rows)
        rows.append(
            {
                "trajectory_id": tid,
                "step_index": k,
                "step_id": f"{tid}:{k}",
                "kind": "assistant",
                "text": "42",
            }
        )
        trajs.append(traj_row(tid, i, len(rows)))
        steps += rows
        if trajs[-1]["outcome"] == "failure":
            judge = "rules" if i % 3 == 2 else "llm"
            judges.append(
                {
                    "label_id": f"jl_{judge}_{tid}",
                    "trajectory_id": tid,
                    "judge": judge,
                    "model": "judge-model" if judge == "llm" else "rules-1",
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1.0.0",
                    "status": "labeled",
                    "category": CATEGORIES[i % 3],
                    "decisive_step_index": 1,
                    "evidence_steps": [1],
                    "confidence": 0.5 + (i % 4) / 10,
                    "rationale": "synthetic",
                    "created_at": T0,
                }
            )
            if i % 10 == 0:
                humans.append(
                    {
                        "record_id": f"hr_{tid}",
                        "trajectory_id": tid,
                        "annotator": "carol",
                        "dataset": "other",
                        "taxonomy_id": "omni-failure",
                        "taxonomy_version": "1.0.0",
                        "category": "video_perception",
                        "decisive_step_index": 1,
                        "created_at": T0,
                        "source_file": "annotations/other/carol.jsonl",
                        "source_line": 1,
                    }
                )
    return trajs, steps, judges, humans


def runs_lab(path: Path, n: int = 40) -> Lab:
    trajs, steps, judges, humans = runs_rows(n)
    lab = Lab.create(path)
    with lab.write("synthetic") as txn:
        txn.append("trajectories", trajs)
        txn.append("steps", steps)
        txn.append("judge_labels", judges)
        txn.append("human_labels", humans)
    return lab


def long_run(
    tid: str, n_steps: int, n_subagents: int = 2, seed: int = 0
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A long run: bursts of near-identical frame extractions, reasoning, a few errors and retries, and
    `n_subagents` sub-agents spawned by a Task call, ending in an answer; `n_steps` rows."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    clock = T0

    def add(kind: str, agent: str = "main", depth: int = 0, parent: int | None = None, **f: Any) -> int:
        nonlocal clock
        clock += timedelta(seconds=2)
        i = len(rows)
        rows.append(
            {
                "trajectory_id": tid,
                "step_index": i,
                "step_id": f"{tid}:{i}",
                "agent_id": agent,
                "depth": depth,
                "parent_step_index": parent,
                "kind": kind,
                "timestamp": clock,
                **f,
            }
        )
        return i

    add("user", text="Count how often the sign appears in clip.mp4 and read its code.")
    spawn_every = max(1, (n_steps - 10) // (n_subagents + 1)) if n_subagents else n_steps
    sub = 0
    frame = 0
    while len(rows) < n_steps - 1:
        if n_subagents and sub < n_subagents and len(rows) >= spawn_every * (sub + 1):
            sub += 1
            agent = f"sub-{sub}"
            spawn = add(
                "tool_call",
                tool_name="Task",
                tool="task",
                modality="compute",
                command=None,
                arguments='{"prompt": "read the frames"}',
                output="sub-agent report: code ORBIT-42",
                exit_code=0,
            )
            for _ in range(min(25, n_steps - 1 - len(rows))):
                frame += 1
                add(
                    "tool_call",
                    agent=agent,
                    depth=1,
                    parent=spawn,
                    tool_name="Bash",
                    tool="tesseract",
                    modality="image",
                    command=f"tesseract frames/{frame:05d}.png -",
                    output=f"frame {frame}: no text",
                    exit_code=0,
                    duration_s=0.4,
                )
            continue
        burst = rng.randint(6, 14)
        for _ in range(min(burst, n_steps - 1 - len(rows))):
            frame += 1
            add(
                "tool_call",
                tool_name="Bash",
                tool="ffmpeg",
                modality="video",
                command=f"ffmpeg -ss {frame} -i clip.mp4 -frames:v 1 frames/{frame:05d}.png",
                output="frame written",
                exit_code=0,
                duration_s=0.3,
            )
        if len(rows) < n_steps - 1:
            if rng.random() < 0.2:
                add(
                    "tool_call",
                    tool_name="Bash",
                    tool="whisper",
                    modality="audio",
                    command="whisper clip.wav",
                    output="",
                    stderr="whisper: command not found",
                    exit_code=127,
                    is_error=True,
                )
            else:
                add("reasoning", text=f"Checked frames up to {frame}; no sign yet.")
    add("assistant", text="The code is ORBIT-42 and the sign appears 3 times.")
    traj = {
        "trajectory_id": tid,
        "runner": "synthetic",
        "format": "synthetic",
        "source_path": f"/synthetic/{tid}.jsonl",
        "source_digest": f"xxh3_128:{tid}",
        "task": rows[0]["text"],
        "model": "model-long",
        "harness": "h-long",
        "benchmark": "bench-long",
        "domain": "video",
        "outcome": "failure",
        "final_answer": rows[-1]["text"],
        "n_steps": len(rows),
        "n_tool_calls": sum(r["kind"] == "tool_call" for r in rows),
        "n_subagents": sub,
        "started_at": T0,
        "ingested_at": T0,
    }
    return traj, rows


@dataclass
class ExampleLab:
    root: Path
    lab: Path
    annotations: Path
    failed_tid: str  # a failed run with an LLM judge label (decisive step, evidence, rationale)
    failed_model: str
    judge_category: str
    xss_tid: str
    secrets_tid: str
    long_tid: str
    long_steps: int


def example_lab(root: Path, long_steps: int = 2000) -> ExampleLab:
    """The example runs (6 tasks, seed 3), a long run with sub-agents, DAGs, rules labels, and one
    hand-written LLM judge label."""
    from trajlab.dag import build_lab
    from trajlab.examples import generate_examples
    from trajlab.ingest import ingest
    from trajlab.judge import rules_judge

    generate_examples(root / "ex", n_tasks=6, seed=3)
    lab_path = root / "lab"
    ingest([root / "ex" / "runs"], lab_path, progress=False, workers=1)
    lab = Lab.open(lab_path)
    traj, rows = long_run("t_longrun0000001", long_steps, n_subagents=3)
    with lab.write("fixture") as txn:
        txn.append("trajectories", [traj])
        txn.append("steps", rows)
    build_lab(lab_path, progress=False, workers=1)
    rules_judge(lab_path, progress=False)
    lab.refresh()
    con = lab.connect()

    def one(sql: str) -> Any:
        r = con.execute(sql).fetchone()
        assert r is not None, sql
        return r

    xss = one("SELECT trajectory_id FROM steps WHERE output LIKE '%<script>alert%'")[0]
    secrets = one("SELECT trajectory_id FROM steps WHERE output LIKE '%OPENAI_API_KEY=sk-%'")[0]
    failed, model, n = one(
        "SELECT trajectory_id, model, n_steps FROM trajectories WHERE outcome = 'failure' AND runner = 'codex' "
        "AND n_steps >= 6 ORDER BY trajectory_id LIMIT 1"
    )
    with lab.write("fixture-judge") as txn:
        txn.append(
            "judge_labels",
            [
                {
                    "label_id": "jl_fixture_llm",
                    "trajectory_id": failed,
                    "judge": "llm",
                    "model": "fixture-judge",
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1.0.0",
                    "status": "labeled",
                    "category": "reasoning_calculation",
                    "decisive_step_index": n - 1,
                    "evidence_steps": [3],
                    "evidence_quotes": ["<b>quoted</b> output"],
                    "evidence_verified": [False],
                    "rationale": "The final sum is wrong <img src=x onerror=alert(2)>.",
                    "confidence": 0.4,
                    "created_at": datetime.now(timezone.utc),
                }
            ],
        )
    return ExampleLab(
        root=root,
        lab=lab_path,
        annotations=root / "annotations",
        failed_tid=failed,
        failed_model=model,
        judge_category="reasoning_calculation",
        xss_tid=xss,
        secrets_tid=secrets,
        long_tid=traj["trajectory_id"],
        long_steps=len(rows),
    )
