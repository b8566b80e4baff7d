"""`trajlab distill`: log-driven self-distillation, from runs (or a lab) to versioned skills."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import ConfigError
from ..fsutil import os_reason as fs_reason
from ..store import Lab
from ._features import Corpus, load_corpus
from ._guard import ContaminationError, EvalIndex
from ._llm import ChatClient, LLMError
from ._mine import MineParams, Rule, category_summary, merge_rules, mine_rules, scopes_of
from ._ops import Op, apply_ops
from ._render import (
    SECTION_MODES,
    describe,
    failure_mode_items,
    new_skill,
    rules_markdown,
    skill_name,
    skill_names,
)
from ._skill import Budget, Skill
from ._versions import SkillStore, Version
from ._writer import WriterInfo, llm_ops, template_ops, writer_prompt_hash

LAB_DIRNAME = ".trajlab-lab"
CACHE_DIRNAME = ".llm-cache"


@dataclass
class SkillOutcome:
    name: str
    scope: str
    path: Path | None
    version: int | None = None
    created: bool = False
    rules: int = 0
    items: int = 0
    rejected: list[dict[str, str]] = field(default_factory=list)
    refused: str | None = None
    writer: dict[str, Any] = field(default_factory=dict)


@dataclass
class DistillResult:
    out: Path
    lab: Path
    runs: int
    successes: int
    failures: int
    excluded_eval: int
    excluded_unknown: int
    rules: list[Rule]
    skills: list[SkillOutcome]

    def format(self) -> str:
        lines = [
            f"lab {self.lab}: {self.runs} runs used ({self.successes} successes, {self.failures} failures); "
            f"{self.excluded_eval} eval/held-out runs excluded, {self.excluded_unknown} without an outcome",
            f"{len(self.rules)} rules mined",
        ]
        for s in self.skills:
            if s.refused:
                lines.append(f"  REFUSED {s.name}: {s.refused}")
                continue
            state = f"v{s.version} (new)" if s.created else f"v{s.version} (unchanged)"
            lines.append(
                f"  {s.name:<28} {state:<16} {s.items} items from {s.rules} rules"
                + (f", {len(s.rejected)} left out" if s.rejected else "")
                + f"  -> {s.path}"
            )
            if s.writer.get("fallback_reason"):
                lines.append(f"    (written from templates: {s.writer['fallback_reason']})")
        return "\n".join(lines)


def _previous_rules(store: SkillStore, name: str) -> list[Rule]:
    f = store.live(name) / "references" / "provenance.json"
    if not f.exists():
        return []
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
        return [Rule.from_dict(d) for d in data.get("rules", [])]
    except (ValueError, TypeError, KeyError):
        return []


def _group(rules: list[Rule], params: MineParams) -> dict[str, list[Rule]]:
    groups: dict[str, list[Rule]] = {}
    for r in rules:
        groups.setdefault(r.scope if params.group_by else "all", []).append(r)
    return groups


def build_skill(
    name: str,
    scope: str,
    rules: list[Rule],
    corpus: Corpus,
    scope_runs: list[Any],
    params: MineParams,
    budget: Budget,
    client: ChatClient | None,
    max_items: int,
    seed: int,
    benchmark: str | None,
) -> tuple[Skill, list[dict[str, str]], WriterInfo, list[dict[str, Any]]]:
    n_s = sum(r.outcome == "success" for r in scope_runs)
    n_f = len(scope_runs) - n_s
    chosen, extra = rules[:max_items], rules[max_items:]
    # Shown in the order the steps happen in successful runs, so the Do list reads as a procedure.
    chosen = sorted(chosen, key=lambda r: (r.position, r.p_value, r.key))
    desc = describe(scope, n_s, n_f, chosen, benchmark)
    info = WriterInfo("template")
    ops: list[Op] = template_ops(chosen)
    if client is not None and chosen:
        try:
            ops, llm_desc = llm_ops(client, chosen, scope)
            desc = llm_desc or desc
            info = WriterInfo("llm", client.model, writer_prompt_hash())
        except LLMError as e:
            info = WriterInfo("template", client.model, writer_prompt_hash(), f"LLM answer unusable: {e}")
    sk = new_skill(name, scope, desc, n_s, n_f, Path(corpus.lab_root).name)
    sk.metadata = {"origin": "log-distilled", "generator": f"trajlab {__version__}"}
    res = apply_ops(sk, ops, budget)
    rejected = [{"rule": op.rule or "", "reason": why} for op, why in res.rejected]
    rejected += [{"rule": r.key, "reason": f"beyond the first {max_items} rules"} for r in extra]
    sk = res.skill
    modes = category_summary(corpus, scope_runs)
    mode_ops = [Op("add", SECTION_MODES, it.text, reason="labels") for it in failure_mode_items(modes)]
    res2 = apply_ops(sk, mode_ops, budget)
    sk = res2.skill
    rejected += [{"rule": "failure mode", "reason": why} for _, why in res2.rejected]
    kept_keys = {op.rule for op in res.applied}
    prov = {
        "skill": name,
        "scope": scope,
        "generator": "trajlab.distill",
        "trajlab_version": __version__,
        "source_lab": corpus.lab_root,
        "lab_generation": corpus.lab_generation,
        "runs_used": len(corpus.runs),
        "runs_in_scope": len(scope_runs),
        "successes_in_scope": n_s,
        "failures_in_scope": n_f,
        "excluded_eval_or_heldout": corpus.excluded_eval,
        "excluded_unknown_outcome": corpus.excluded_unknown,
        "label_sources": corpus.label_sources,
        "seed": seed,
        "params": asdict(params),
        "budget": asdict(budget),
        "distiller": info.to_dict(),
        "rules": [r.to_dict() for r in rules if r.key in kept_keys],
        "items": [{"id": it.id, "section": s.title, "rule": it.rule} for s, it in sk.items()],
        "rejected": rejected,
        "failure_modes": modes,
    }
    kept = [r for r in rules if r.key in kept_keys]
    sk.references = {
        "references/provenance.json": json.dumps(prov, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        "references/rules.md": rules_markdown(name, kept, rejected),
    }
    return sk, rejected, info, modes


GROUPABLE = ("domain", "condition", "category", "task_id", "split")
"""Run columns `--group-by` can split skills by."""


def check_out_dir(out: Path, option: str) -> None:
    """An output folder must be a folder (or not exist yet, under a folder)."""
    for anc in [out, *out.parents]:
        if anc.exists():
            if not anc.is_dir():
                raise ConfigError(f"{option} {out}: {anc} is a file, not a folder")
            return


def os_reason(e: OSError) -> str:
    why = fs_reason(e)
    return f"{e.filename}: {why}" if e.filename else why


def distill(
    out: str | Path,
    lab: str | Path | None = None,
    logs: Iterable[str | Path] | None = None,
    prefix: str = "distilled",
    params: MineParams | None = None,
    budget: Budget | None = None,
    client: ChatClient | None = None,
    max_items: int = 12,
    seed: int = 0,
    conditions: Iterable[str] | None = None,
    merge: bool = True,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
    eval_tasks: Iterable[tuple[str | None, str | None, str | None]] = (),
) -> DistillResult:
    """Mine rules from a lab (ingesting `logs` first when given) and write one skill per scope into `out`."""
    params = params or MineParams()
    budget = budget or Budget()
    conditions = list(conditions) if conditions else None
    out = Path(out).absolute()
    log_dirs = [Path(p) for p in logs or []]
    if lab is None and not log_dirs:
        raise ConfigError("give runs to distil from (--logs DIR) or a lab (--lab LAB)")
    check_out_dir(out, "--out")
    if params.group_by and params.group_by not in GROUPABLE:
        raise ConfigError(
            f"--group-by {params.group_by!r} is not a run column; use one of {', '.join(GROUPABLE)} or none"
        )
    lab_path = Path(lab).absolute() if lab is not None else out / LAB_DIRNAME
    if log_dirs:
        from ..ingest import ingest

        missing = [str(p) for p in log_dirs if not p.exists()]
        if missing:
            raise ConfigError(f"no such runs folder: {', '.join(missing)}")
        ingest(log_dirs, lab_path, progress=progress)
    the_lab = Lab.open(lab_path)
    corpus = load_corpus(the_lab, conditions=conditions)
    if not corpus.runs:
        raise ConfigError(
            f"{lab_path}: no runs to distil from ({corpus.excluded_eval} eval/held-out runs are never used, "
            f"{corpus.excluded_unknown} runs have no success/failure outcome"
            + (f", condition filter {sorted(conditions)}" if conditions else "")
            + ")"
        )
    if corpus.successes == 0 or corpus.failures == 0:
        raise ConfigError(
            f"{lab_path}: distillation contrasts successes and failures, but all {len(corpus.runs)} usable "
            f"runs are {'failures' if corpus.successes == 0 else 'successes'}"
        )
    rules = mine_rules(corpus, params)
    guard = EvalIndex.from_lab(the_lab, eval_tasks)
    store = SkillStore(out)
    scopes = scopes_of(corpus, params)
    benchmarks = {b for b in the_lab.read("trajectories", ["benchmark"]).column(0).to_pylist() if b}
    benchmark = next(iter(benchmarks)) if len(benchmarks) == 1 else None
    outcomes: list[SkillOutcome] = []
    down: str | None = None  # an endpoint that failed once is not retried for every skill
    groups = sorted(_group(rules, params).items())
    names = skill_names(prefix, [sc for sc, _ in groups])
    for scope, srules in groups:
        name = names[scope] if params.group_by else skill_name(prefix, "all").removesuffix("-general")
        if merge:
            srules = merge_rules(_previous_rules(store, name), srules, corpus, params)
        sk, rejected, info, _ = build_skill(
            name,
            scope,
            srules,
            corpus,
            scopes.get(scope, corpus.runs),
            params,
            budget,
            None if down else client,
            max_items,
            seed,
            benchmark,
        )
        if down:
            info.fallback_reason = down
        elif info.fallback_reason and "endpoint error" in info.fallback_reason:
            down = info.fallback_reason + " (not retried for the other skills)"
        oc = SkillOutcome(
            name,
            scope,
            None,
            rules=len(srules),
            items=len(sk.items()),
            rejected=rejected,
            writer=info.to_dict(),
        )
        hits = guard.scan({"SKILL.md": sk.render(), **sk.references})
        if hits:
            oc.refused = str(ContaminationError(name, hits))
            outcomes.append(oc)
            continue
        try:
            v: Version = store.commit(
                sk, reason=f"distilled from {lab_path} (generation {corpus.lab_generation})"
            )
        except OSError as e:
            raise ConfigError(f"cannot write skill {name} into {out}: {os_reason(e)}") from None
        oc.path, oc.version, oc.created = store.live(name), v.version, v.created
        outcomes.append(oc)
        if echo:
            echo(f"{name}: v{v.version}{' (new)' if v.created else ' (unchanged)'}")
    return DistillResult(
        out,
        lab_path,
        len(corpus.runs),
        corpus.successes,
        corpus.failures,
        corpus.excluded_eval,
        corpus.excluded_unknown,
        rules,
        outcomes,
    )


def write_checked(
    store: SkillStore,
    skill: Skill,
    guard: EvalIndex,
    reason: str,
    ops: list[dict[str, Any]],
    base: int | None = None,
) -> Version:
    """Commit a skill after the contamination scan; raises ContaminationError on a hit."""
    hits = guard.scan({"SKILL.md": skill.render(), **skill.references})
    if hits:
        raise ContaminationError(skill.name, hits)
    return store.commit(skill, reason, ops, base=base)
