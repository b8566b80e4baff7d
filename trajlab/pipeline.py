"""The demo pipeline: every stage of trajlab on the generated example runs, end to end.

`trajlab demo` calls `run_demo`. Each stage is a plain function over the lab so that the notebook,
the tests and the CLI run exactly the same code.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .examples import generate_examples
from .ingest import ingest
from .store import Lab, query


@dataclass
class StageResult:
    name: str
    seconds: float
    summary: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class DemoResult:
    out: Path
    lab: Path
    stages: list[StageResult] = field(default_factory=list)

    def format(self) -> str:
        lines = [f"demo output: {self.out}", f"lab: {self.lab}"]
        for s in self.stages:
            lines.append(f"\n== {s.name} ({s.seconds:.1f}s)\n{s.summary}")
        return "\n".join(lines)


def _stage(result: DemoResult, name: str, fn: Callable[[], tuple[str, dict[str, Any]]], echo: Callable[[str], None]) -> None:
    echo(f"[demo] {name} ...")
    t0 = time.perf_counter()
    summary, data = fn()
    sr = StageResult(name, time.perf_counter() - t0, summary, data)
    result.stages.append(sr)
    echo(f"[demo] {name} done in {sr.seconds:.1f}s\n{summary}\n")


def run_demo(
    out: str | Path = "demo-out",
    n_tasks: int = 40,
    seed: int = 7,
    workers: int | None = None,
    echo: Callable[[str], None] = print,
    progress: bool = True,
) -> DemoResult:
    out = Path(out).absolute()
    examples = out / "examples"
    lab_path = out / "lab"
    result = DemoResult(out=out, lab=lab_path)

    def gen() -> tuple[str, dict[str, Any]]:
        if (examples / "ground_truth.jsonl").exists():
            return f"reusing example runs in {examples}", {}
        r = generate_examples(examples, n_tasks=n_tasks, seed=seed)
        cats = ", ".join(f"{k}={v}" for k, v in sorted(r.by_category.items()))
        return (
            f"{r.runs} runs of {r.tasks} tasks ({r.successes} successes, {r.failures} failures; planted causes: {cats})\n"
            f"runners: {r.by_runner}",
            {"runs": r.runs},
        )

    def ing() -> tuple[str, dict[str, Any]]:
        rep = ingest([examples / "runs"], lab_path, workers=workers, progress=progress)
        return rep.format(), {"trajectories": rep.totals.trajectories}

    def overview() -> tuple[str, dict[str, Any]]:
        lab = Lab.open(lab_path)
        t = query(
            lab,
            """
            SELECT runner, model, count(*) AS runs,
                   round(avg(CASE WHEN outcome = 'success' THEN 1.0 ELSE 0.0 END), 3) AS accuracy,
                   round(avg(n_tool_calls), 1) AS calls, CAST(round(avg(total_tokens)) AS BIGINT) AS tokens
            FROM trajectories GROUP BY ALL ORDER BY runner, model
            """,
        )
        from .tabular import render

        return render(t), {}

    _stage(result, "generate example runs", gen, echo)
    _stage(result, "ingest", ing, echo)
    _stage(result, "overview (SQL)", overview, echo)
    return result
