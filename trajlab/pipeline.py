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


def _stage(
    result: DemoResult, name: str, fn: Callable[[], tuple[str, dict[str, Any]]], echo: Callable[[str], None]
) -> None:
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

    def dag() -> tuple[str, dict[str, Any]]:
        from .dag import build_lab

        rep = build_lab(lab_path, progress=progress, workers=workers)
        return rep.format(), {"built": rep.built}

    def judge() -> tuple[str, dict[str, Any]]:
        from .judge import LLMSettings, judge_lab, rules_judge

        rep = rules_judge(lab_path, "omni-failure", progress=progress)
        text = rep.format()
        settings = LLMSettings.resolve()
        if settings.configured:
            llm = judge_lab(lab_path, "omni-failure", settings, progress=progress)
            text += "\n" + llm.format()
        else:
            text += "\n(no LLM endpoint configured: set TRAJLAB_JUDGE_MODEL/TRAJLAB_JUDGE_BASE_URL to add the LLM judge)"
        return text, {"labeled": rep.statuses.get("labeled", 0)}

    def review() -> tuple[str, dict[str, Any]]:
        from .review import review_stage

        summary, data = review_stage(Lab.open(lab_path), examples, out / "annotations")
        note = (
            "(no humans in a demo: the generator's recorded failure causes stand in for human annotations,\n"
            " so the agreement below measures the judge against the planted ground truth)\n"
        )
        return note + summary, data

    def analyses() -> tuple[str, dict[str, Any]]:
        from . import analysis
        from .tabular import render

        lab = Lab.open(lab_path)
        adir = out / "analysis"
        g = analysis.gaps(lab, n_boot=1000, seed=seed, progress=False)
        g.write(adir / "gaps.csv")
        cols = [
            "tool",
            "share_success",
            "share_failure",
            "gap",
            "usage_success",
            "usage_failure",
            "usage_gap",
            "usage_gap_ci_low",
            "usage_gap_ci_high",
            "p_adjusted",
            "significant",
            "favors",
        ]
        top = g.table.filter(g.table.column("supported")).select(cols)
        # printed: `gap` is the gap in shares of calls, and `favors` follows the tested usage gap: say so
        # in the headers, or a negative gap next to "success" reads as a contradiction
        shown = top.rename_columns(
            ["share_gap" if c == "gap" else "favors (usage)" if c == "favors" else c for c in cols]
        )
        gd = analysis.gaps(lab, by="domain", key="tool_modality", n_boot=1000, seed=seed, progress=False)
        gd.write(adir / "gaps_by_domain.csv")
        sig = gd.table.filter(gd.table.column("significant")).select(
            ["domain", "tool", "usage_success", "usage_failure", "usage_gap", "p_adjusted", "favors"]
        )
        lines = [
            "tool-usage gaps with enough support (share = share of calls; usage = share of runs using the tool;",
            "95% bootstrap CI over runs; Fisher test on usage, Holm-corrected):",
            render(shown),
            "significant gaps within a task domain (tool:modality, e.g. python:video = ad-hoc OpenCV scripts):",
            render(sig),
        ]
        for name, fn in (
            ("capability", lambda: analysis.capability_usage(lab)),
            ("tokens", lambda: analysis.token_efficiency(lab)),
            ("media", lambda: analysis.media_strategy(lab)),
            # the adjudicated (gold) labels cover every failure the review saw; the judge's alone cover
            # only the failures its rules or model labeled (the rules judge: 28 of the demo's 64)
            ("failures", lambda: analysis.failure_distribution(lab, source="gold")),
            ("failures_judge", lambda: analysis.failure_distribution(lab, source="judge")),
            ("funnel", lambda: analysis.step_funnel(lab)),
        ):
            r = fn()
            r.write(adir / f"{name}.csv")
            lines.append(
                f"{name}: {r.table.num_rows} rows -> {adir / (name + '.csv')}"
                + (f" (missing: {', '.join(r.missing)})" if r.missing else "")
            )
        n_sig = sum(1 for v in top.column("significant").to_pylist() if v)
        return "\n".join(lines), {"significant_gaps": n_sig}

    def distill() -> tuple[str, dict[str, Any]]:
        from .distill import demo_distill

        return demo_distill(lab_path, out / "distill", examples)

    def figures() -> tuple[str, dict[str, Any]]:
        from .figures import export_figures, export_tables

        lab = Lab.open(lab_path)
        # the same seed as the gaps printed above (their bootstrap intervals agree), and the judge's
        # failure categories beside the adjudicated ones
        options: dict[str, dict[str, Any]] = {
            "tool_gaps": {"seed": seed},
            "failure_distribution": {"source": "judge,gold"},
        }
        report = export_figures(
            lab, out / "figures", formats=("pdf", "png", "svg"), progress=progress, options=options
        )
        tables = export_tables(lab, out / "tables", results=report.results)
        return f"{report.format()}\n{len(tables)} table files in {out / 'tables'}", {}

    def dashboard() -> tuple[str, dict[str, Any]]:
        from .dashboard import check_pages, create_app
        from .review import ReviewQueue

        # The ground truth already reviewed every failure as one reviewer: with 2 reviewers per item a
        # person opening the dashboard still finds every failure in their queue (with 1, nothing is left).
        reviewers = 2
        app = create_app(lab_path, annotations=out / "annotations", dataset="examples", reviewers=reviewers)
        ctx = app.trajlab
        checks = check_pages(ctx, trajectories=3)
        bad = [c for c in checks if not c.ok]
        queue = ReviewQueue(
            ctx.source.lab, ctx.source.taxonomy, "you", reviewers_per_item=reviewers, store=ctx.source.store
        )
        to_review = len(queue.items())
        lines = [
            f"rendered every dashboard page on the server: {len(checks) - len(bad)} of {len(checks)} "
            "panels and trajectory pages ok",
            *("  " + c.line() for c in bad),
            f"{to_review} failed runs wait in a new reviewer's queue (the ground truth was the first reviewer)",
            f"browse it: trajlab dash {lab_path} --annotations {out / 'annotations'} --dataset examples "
            f"--reviewers {reviewers}",
        ]
        return "\n".join(lines), {"panels": len(checks), "failed": len(bad), "to_review": to_review}

    _stage(result, "generate example runs", gen, echo)
    _stage(result, "ingest", ing, echo)
    _stage(result, "overview (SQL)", overview, echo)
    _stage(result, "step DAGs", dag, echo)
    _stage(result, "judge (rules; LLM when configured)", judge, echo)
    _stage(result, "human review, agreement, propagation", review, echo)
    _stage(result, "tool-usage analytics (DuckDB SQL)", analyses, echo)
    _stage(result, "skill distillation", distill, echo)
    _stage(result, "paper figures and tables", figures, echo)
    _stage(result, "dashboard (every page rendered on the server)", dashboard, echo)
    return result
