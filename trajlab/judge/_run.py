"""Judge runs over a lab: selection, resume, dry-run plans, bounded concurrency, batched commits."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
from tqdm import tqdm

from ..errors import ConfigError
from ..schema import short_id
from ..store import Lab, utcnow
from ..taxonomy import Taxonomy, load_taxonomy
from ._cache import CACHE_DIRNAME, ResponseCache
from ._client import LLMClient
from ._llm import LLMJudge, Outcome
from ._prompt import prompt_hash
from ._rules import CAPABILITIES, RULES_VERSION, RulesVerdict, decide
from ._settings import LLMSettings
from ._view import TrajectoryView, ensure_dag, iter_views

DONE_STATUSES = ("labeled", "unjudgeable")
"""A label with one of these statuses is final: resumed and repeated runs skip the trajectory."""


@dataclass
class JudgeRunReport:
    judge: str
    model: str | None
    taxonomy_id: str
    taxonomy_version: str
    prompt_hash: str
    run_id: str
    dry_run: bool = False
    selected: int = 0
    skipped_done: int = 0
    judged: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    categories: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    cache_hits: int = 0
    cache_write_errors: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    est_requests: int = 0
    est_cached_requests: int = 0
    est_prompt_tokens: int = 0
    est_completion_tokens: int = 0
    est_cost_usd: float | None = None
    windowed: int = 0
    rules_fired: Counter[str] = field(default_factory=Counter)
    capabilities: str | None = None
    seconds: float = 0.0
    interrupted: bool = False
    plan: list[dict[str, Any]] = field(default_factory=list)

    @property
    def coverage(self) -> float | None:
        """Share of judged trajectories that got a label (the rules judge abstains on the rest)."""
        return self.statuses["labeled"] / self.judged if self.judged else None

    def as_dict(self) -> dict[str, Any]:
        d = {k: (dict(v) if isinstance(v, Counter) else v) for k, v in self.__dict__.items() if k != "plan"}
        d["coverage"] = self.coverage
        return d

    def format(self) -> str:
        who = f"{self.judge} judge" + (f" ({self.model})" if self.model else "")
        head = f"{who}, taxonomy {self.taxonomy_id} v{self.taxonomy_version}, prompt {self.prompt_hash}"
        lines = [head]
        if self.dry_run:
            lines.append(
                f"DRY RUN (nothing sent): {self.selected} trajectories selected, {self.skipped_done} already "
                f"labeled; would send {self.est_requests} requests ({self.est_cached_requests} more answered "
                f"from the cache), ~{self.est_prompt_tokens:,} prompt tokens + up to "
                f"{self.est_completion_tokens:,} completion tokens"
            )
            cost = f"${self.est_cost_usd:.4f}" if self.est_cost_usd is not None else "unknown (give prices)"
            lines.append(
                f"estimated cost: {cost}; unjudgeable before sending: {self.statuses['unjudgeable']}"
            )
            if self.windowed:
                lines.append(f"judged in windows: {self.windowed} trajectories")
            return "\n".join(lines)
        lines.append(
            f"{self.selected} selected, {self.skipped_done} already done (skipped), {self.judged} judged in "
            f"{self.seconds:.1f}s" + (" -- INTERRUPTED, rerun to resume" if self.interrupted else "")
        )
        lines.append("status: " + (", ".join(f"{k}={v}" for k, v in sorted(self.statuses.items())) or "-"))
        if not self.selected:
            lines.append(
                "nothing to judge: no trajectory matched the selection (--only failed, the default, takes "
                "runs whose outcome is failure; --only all adds runs not graded a success; --only ID,ID "
                "picks runs)"
            )
        if self.judge == "llm":
            lines.append(
                f"requests: {self.requests} sent ({self.retries} retries), {self.cache_hits} from cache; "
                f"tokens: {self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion"
            )
            if self.cache_write_errors:
                lines.append(
                    f"cache: {self.cache_write_errors} answers could not be written to the response cache "
                    "(a full disk or a read-only folder?); they were used, and will be asked for again"
                )
        if self.categories:
            lines.append("categories: " + ", ".join(f"{k}={v}" for k, v in self.categories.most_common()))
        if self.judge == "rules" and self.judged:
            lines.append(
                f"coverage: {self.coverage:.0%} labeled; rules fired: "
                + (", ".join(f"{k}={v}" for k, v in self.rules_fired.most_common()) or "none")
            )
            lines.append(f"the rules judge {CAPABILITIES}")
        for reason, n in self.reasons.most_common(8):
            lines.append(f"  {n} x {reason}")
        return "\n".join(lines)


# -- selection -----------------------------------------------------------------------------------


def select_trajectories(lab: Lab, selection: str | Sequence[str] = "failed") -> list[str]:
    """Trajectory ids: `failed` (outcome failure), `all` (every run not graded a success), or ids."""
    t = lab.read("trajectories", ["trajectory_id", "outcome"])
    ids = t.column("trajectory_id").to_pylist()
    outcomes = t.column("outcome").to_pylist()
    if isinstance(selection, str) and selection in ("failed", "all"):
        keep = ("failure",) if selection == "failed" else ("failure", "unknown")
        return sorted(i for i, o in zip(ids, outcomes) if o in keep)
    wanted = [s.strip() for s in ([selection] if isinstance(selection, str) else selection)]
    wanted = [w for part in wanted for w in part.split(",") if w.strip()]
    known = set(ids)
    unknown = [w for w in wanted if w not in known]
    if unknown:
        more = f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else ""
        raise ConfigError(f"unknown trajectory ids: {', '.join(unknown[:5])}{more}")
    return list(dict.fromkeys(wanted))


def _existing_labels(lab: Lab, label_ids: Iterable[str]) -> dict[str, str]:
    """label_id -> status of the labels that already exist among `label_ids`."""
    if not lab.has("judge_labels"):
        return {}
    wanted = list(label_ids)
    if not wanted:  # an empty selection (pyarrow cannot type an empty `isin` list)
        return {}
    t = lab.read("judge_labels", ["label_id", "status"], pc.field("label_id").isin(wanted))
    return dict(zip(t.column("label_id").to_pylist(), t.column("status").to_pylist()))


class JudgeInterrupted(KeyboardInterrupt):
    """Ctrl-C during a judge run, carrying the run's report (labels finished before it are committed)."""

    def __init__(self, report: JudgeRunReport):
        super().__init__("judge run interrupted")
        self.report = report


class _Writer:
    """Buffers label rows and commits them every `every` rows or `seconds` seconds.

    Only labels that already exist are deleted before their replacement is appended, so a first run
    never rewrites Parquet parts. An interrupt loses at most the uncommitted buffer, whose model
    answers are in the response cache anyway.
    """

    def __init__(self, lab: Lab, every: int, seconds: float, existing: set[str] | None = None):
        self.lab, self.every, self.seconds = lab, every, seconds
        self.existing = set(existing or ())
        self.rows: list[dict[str, Any]] = []
        self.last = time.monotonic()
        self.written = 0

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.every or time.monotonic() - self.last >= self.seconds:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        replaced = [r["label_id"] for r in self.rows if r["label_id"] in self.existing]
        with self.lab.write("judge") as txn:
            if replaced:
                txn.delete("judge_labels", "label_id", replaced)
            txn.append("judge_labels", self.rows)
        self.existing.difference_update(replaced)
        self.written += len(self.rows)
        self.rows = []
        self.last = time.monotonic()


def _base_row(tid: str, judge: str, model: str, phash: str, tax: Taxonomy, run_id: str) -> dict[str, Any]:
    return {
        "label_id": short_id("jl", judge, model, phash, tid),
        "trajectory_id": tid,
        "judge": judge,
        "model": model,
        "prompt_hash": phash,
        "taxonomy_id": tax.id,
        "taxonomy_version": tax.version,
        "run_id": run_id,
        "created_at": utcnow(),
    }


# -- LLM judge -----------------------------------------------------------------------------------


def _llm_row(o: Outcome, base: dict[str, Any]) -> dict[str, Any]:
    row = {
        **base,
        "status": o.status,
        "status_reason": o.reason,
        "n_requests": o.requests,
        "prompt_tokens": o.prompt_tokens,
        "completion_tokens": o.completion_tokens,
    }
    a = o.answer
    if a is not None:
        row.update(
            category=a.primary,
            secondary_categories=a.secondary,
            decisive_step_index=a.decisive_step,
            evidence_steps=a.evidence_steps,
            evidence_quotes=a.evidence_quotes,
            evidence_verified=a.evidence_verified,
            rationale=a.rationale,
            confidence=a.confidence,
        )
    return row


def judge_lab(
    lab: Lab | str | Path,
    taxonomy: Taxonomy | str = "omni-failure",
    settings: LLMSettings | None = None,
    selection: str | Sequence[str] = "failed",
    dry_run: bool = False,
    force: bool = False,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    commit_every: int = 256,
    commit_seconds: float = 10.0,
    client: LLMClient | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> JudgeRunReport:
    """Label the selected trajectories with an LLM judge; resumable, cached, bounded concurrency.

    Every judged trajectory ends with a `judge_labels` row: labeled, error (with reason) or
    unjudgeable (with reason). Trajectories already labeled with the same model, prompt and taxonomy
    are skipped unless `force`; errors are retried on the next run.
    """
    lab = lab if isinstance(lab, Lab) else Lab.open(lab)
    tax = load_taxonomy(taxonomy)
    settings = settings or LLMSettings.resolve()
    if not settings.configured:
        raise ConfigError("no judge model configured: give --model (and --base-url), or use the rules judge")
    cache = ResponseCache(cache_dir or lab.root / CACHE_DIRNAME)
    if client is None:
        if dry_run and not settings.api_key:
            try:
                settings.resolved_api_key()
            except ConfigError:
                settings = settings.with_(api_key="dry-run-no-key")
        client = LLMClient(settings, cache=cache)
    judge = LLMJudge(tax, settings, client)
    phash = prompt_hash(tax, settings.taxonomy_detail, judge.render_settings(), settings.short_answers)
    run_id = "jr_" + uuid.uuid4().hex[:12]
    model = str(settings.model)
    report = JudgeRunReport("llm", model, tax.id, tax.version, phash, run_id, dry_run=dry_run)
    t0 = time.perf_counter()
    tids = select_trajectories(lab, selection)
    report.selected = len(tids)
    label_of = {t: short_id("jl", "llm", model, phash, t) for t in tids}
    existing = _existing_labels(lab, label_of.values())
    done = set() if force else {lid for lid, st in existing.items() if st in DONE_STATUSES}
    todo = [t for t in tids if label_of[t] not in done]
    report.skipped_done = len(tids) - len(todo)
    if dry_run:
        _plan(lab, judge, todo, report, settings, progress, use_cache)
        report.seconds = time.perf_counter() - t0
        return report
    writer = _Writer(lab, commit_every, commit_seconds, set(existing))
    stats0 = client.stats.as_dict()
    bar = tqdm(total=len(todo), desc="judge", unit="traj", disable=not progress, leave=False)
    limit = settings.max_concurrency * 2
    pool = ThreadPoolExecutor(max_workers=settings.max_concurrency, thread_name_prefix="judge")
    pending: set[Future[Outcome]] = set()

    def collect(done_futs: Iterable[Future[Outcome]], notify: bool = True) -> None:
        for f in done_futs:
            o = f.result()
            base = _base_row(o.trajectory_id, "llm", model, phash, tax, run_id)
            writer.add(_llm_row(o, base))
            report.judged += 1
            report.statuses[o.status] += 1
            if o.reason and o.status != "labeled":
                report.reasons[f"{o.status}: {_reason_key(o.reason)}"] += 1
            if o.answer is not None:
                report.categories[o.answer.primary] += 1
            if o.windows > 1:
                report.windowed += 1
            if on_outcome is not None and notify:
                on_outcome(o)
            bar.update(1)

    def work(view: TrajectoryView) -> Outcome:
        return judge.judge(ensure_dag(view), use_cache)  # DAG built in the worker, not the feeding thread

    try:
        for view in iter_views(lab, todo, chunk=128, build=False):
            pending.add(pool.submit(work, view))
            if len(pending) >= limit:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                collect(finished)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            collect(finished)
    except KeyboardInterrupt:
        report.interrupted = True
        for f in pending:
            f.cancel()
        collect([f for f in pending if f.done() and not f.cancelled()], notify=False)  # keep finished work
        raise JudgeInterrupted(report) from None
    finally:
        pool.shutdown(wait=not report.interrupted, cancel_futures=True)
        writer.flush()
        bar.close()
        stats = client.stats.as_dict()
        report.requests = stats["requests"] - stats0["requests"]
        report.retries = stats["retries"] - stats0["retries"]
        report.cache_hits = stats["cache_hits"] - stats0["cache_hits"]
        report.cache_write_errors = stats["cache_write_errors"] - stats0["cache_write_errors"]
        report.prompt_tokens = stats["prompt_tokens"] - stats0["prompt_tokens"]
        report.completion_tokens = stats["completion_tokens"] - stats0["completion_tokens"]
        report.seconds = time.perf_counter() - t0
    return report


def _reason_key(reason: str) -> str:
    """Group similar reasons in the report (numbers and step ids vary)."""
    import re

    # Step numbers (#12) and counts vary; HTTP status codes ("HTTP 404" is not "HTTP 401") and digits
    # inside names (a model called judge-9, a key) stay.
    return re.sub(r"#\d[\d,]*|(?<!HTTP )(?<!Error code: )(?<![\w.,-])\d[\d,]*", "N", reason)[:120]


def _plan(
    lab: Lab,
    judge: LLMJudge,
    todo: list[str],
    report: JudgeRunReport,
    settings: LLMSettings,
    progress: bool,
    use_cache: bool = True,
) -> None:
    for view in tqdm(iter_views(lab, todo), total=len(todo), desc="plan", disable=not progress, leave=False):
        r, reqs = judge.plan(view, use_cache)
        entry = {
            "trajectory_id": view.trajectory_id,
            "raw_tokens": r.raw_tokens,
            "windows": len(r.windows) or 1,
        }
        if r.too_long:
            report.statuses["unjudgeable"] += 1
            report.reasons[f"unjudgeable: {_reason_key(r.too_long)}"] += 1
            entry["unjudgeable"] = r.too_long
        else:
            send = [q for q in reqs if not q.cached]
            report.est_requests += len(send)
            report.est_cached_requests += len(reqs) - len(send)
            report.est_prompt_tokens += sum(q.tokens for q in send)
            report.est_completion_tokens += settings.max_completion_tokens * len(send)
            report.windowed += 1 if r.windowed else 0
            entry.update(
                requests=len(send), cached=len(reqs) - len(send), prompt_tokens=sum(q.tokens for q in reqs)
            )
        report.plan.append(entry)
    report.est_cost_usd = settings.estimate_cost(report.est_prompt_tokens, report.est_completion_tokens)


# -- rules judge ---------------------------------------------------------------------------------


def rules_prompt_hash(tax: Taxonomy) -> str:
    return short_id("rh", RULES_VERSION, tax.id, tax.version, tax.content_hash)


def _rules_row(v: RulesVerdict, base: dict[str, Any]) -> dict[str, Any]:
    row = {**base, "n_requests": 0, "coverage": v.coverage}
    if v.category is None:
        row.update(status="unjudgeable", status_reason="rules: " + v.coverage.split(". ")[0])
        return row
    row.update(
        status="labeled",
        category=v.category,
        secondary_categories=v.secondary,
        decisive_step_index=v.decisive_step,
        evidence_steps=[h.step_index for h in v.used if h.step_index is not None][:5],
        evidence_quotes=[h.quote for h in v.used if h.step_index is not None][:5],
        rationale=v.rationale,
        confidence=v.confidence,
    )
    return row


def rules_judge(
    lab: Lab | str | Path,
    taxonomy: Taxonomy | str = "omni-failure",
    selection: str | Sequence[str] = "failed",
    force: bool = True,
    write: bool = True,
    progress: bool = True,
    dry_run: bool = False,
) -> JudgeRunReport:
    """Label the selected trajectories with the offline rules judge (no model, no network).

    Writes one `judge_labels` row per trajectory (judge `rules`): labeled with the deciding rule in
    `coverage`, or unjudgeable with why the rules cannot decide. Reports coverage and rule counts.
    """
    lab = lab if isinstance(lab, Lab) else Lab.open(lab)
    tax = load_taxonomy(taxonomy)
    dmap = tax.detector_map()
    phash = rules_prompt_hash(tax)
    run_id = "jr_" + uuid.uuid4().hex[:12]
    report = JudgeRunReport("rules", RULES_VERSION, tax.id, tax.version, phash, run_id, dry_run=dry_run)
    report.capabilities = CAPABILITIES
    t0 = time.perf_counter()
    tids = select_trajectories(lab, selection)
    report.selected = len(tids)
    label_of = {t: short_id("jl", "rules", RULES_VERSION, phash, t) for t in tids}
    existing = _existing_labels(lab, label_of.values())
    done = set() if force else {lid for lid, st in existing.items() if st in DONE_STATUSES}
    todo = [t for t in tids if label_of[t] not in done]
    report.skipped_done = len(tids) - len(todo)
    writer = _Writer(lab, 4096, 60.0, set(existing)) if write and not dry_run else None
    for view in tqdm(iter_views(lab, todo), total=len(todo), desc="rules", disable=not progress, leave=False):
        verdict = judge_rules_view(view, dmap)
        row = _rules_row(verdict, _base_row(view.trajectory_id, "rules", RULES_VERSION, phash, tax, run_id))
        report.judged += 1
        report.statuses[row["status"]] += 1
        if verdict.category:
            report.categories[verdict.category] += 1
            report.rules_fired[verdict.used[0].detector] += 1
        else:
            report.reasons[f"unjudgeable: {_reason_key(row['status_reason'])}"] += 1
        report.plan.append(
            {
                k: row.get(k)
                for k in ("trajectory_id", "status", "category", "decisive_step_index", "coverage")
            }
        )
        if writer is not None:
            writer.add(row)
    if writer is not None:
        writer.flush()
    report.seconds = time.perf_counter() - t0
    return report


def judge_rules_view(view: TrajectoryView, detector_map: dict[str, str]) -> RulesVerdict:
    """The rules verdict for one trajectory view (no lab writes)."""
    return decide(view, detector_map)
