"""`trajlab distill`, `trajlab iterate` and `trajlab skills ...` (validate, new, install, compare, history)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..distill import (
    TARGETS,
    Budget,
    JudgeChat,
    MineParams,
    SkillStore,
    check_name,
    compare,
    distill,
    install,
    iterate,
    load_corpus,
    new_skill_dir,
    pattern_recovery,
    read_eval_tasks,
    read_tasks,
    rehash,
    validate_path,
)
from ._inputs import read_ground_truth
from ._output import check_creatable, check_outside_lab

F = TypeVar("F", bound=Callable[..., Any])


def _plain_prefix(value: str) -> str:
    """A name prefix, not a path: `../x` or `a/b` is refused rather than quietly turned into `x-general`."""
    if "/" in value or "\\" in value or ".." in value or not value.strip():
        raise click.BadParameter(
            f"{value!r} is a skill name prefix, not a path (use letters, digits and hyphens)"
        )
    return value


def _client(
    llm: bool,
    model: str | None,
    base_url: str | None,
    config: str | None,
    cache: Path,
    seed: int | None = None,
) -> JudgeChat | None:
    if not llm and not model:
        return None
    return JudgeChat.resolve(model=model, base_url=base_url, config=config, cache_dir=cache, seed=seed)


def _llm_options(f: F) -> F:
    f = click.option(
        "--config",
        type=click.Path(dir_okay=False),
        default=None,
        help="trajlab.yaml with `llm:`/`judge:` settings.",
    )(f)
    f = click.option(
        "--base-url", default=None, help="OpenAI-compatible endpoint (e.g. a local llama.cpp server)."
    )(f)
    f = click.option("--model", default=None, help="Model for the LLM writer/editor (implies --llm).")(f)
    f = click.option(
        "--llm", is_flag=True, help="Write with the LLM endpoint of the judge settings (default: templates)."
    )(f)
    return f


@click.command("distill")
@click.option(
    "--logs",
    "logs",
    multiple=True,
    type=click.Path(path_type=str),
    help="Run folders to ingest first (repeatable).",
)
@click.option(
    "--lab", default=None, type=click.Path(path_type=str), help="Lab to read (and ingest --logs into)."
)
@click.option(
    "--out",
    "-o",
    required=True,
    type=click.Path(path_type=str),
    help="Skills folder to write (one sub-folder per skill).",
)
@click.option(
    "--name",
    "prefix",
    default="distilled",
    show_default=True,
    callback=lambda ctx, param, v: _plain_prefix(v),
    help="Skill name prefix (letters, digits, hyphens; other characters become hyphens).",
)
@click.option(
    "--group-by",
    default="domain",
    show_default=True,
    help="Trajectory column that splits skills (`none` for one skill).",
)
@click.option(
    "--min-support",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="Runs that must show a feature.",
)
@click.option("--min-lift", default=1.2, show_default=True, type=click.FloatRange(min=0))
@click.option(
    "--max-p",
    default=0.05,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True),
    help="Largest one-sided Fisher p-value kept.",
)
@click.option(
    "--max-items", default=12, show_default=True, type=click.IntRange(min=1), help="Rules per skill."
)
@click.option(
    "--budget-bytes",
    default=8000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Size budget of SKILL.md (Codex injects at most 8000 bytes).",
)
@click.option("--condition", "conditions", multiple=True, help="Only runs of this condition (repeatable).")
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--no-merge", is_flag=True, help="Do not merge with the rules of an existing skill of the same name."
)
@click.option(
    "--ground-truth",
    type=click.Path(exists=True, path_type=str),
    default=None,
    help="Example-set folder (ground_truth.jsonl): report which planted patterns were recovered.",
)
@click.option(
    "--eval-tasks",
    type=click.Path(exists=True, dir_okay=False, path_type=str),
    default=None,
    help="JSONL of evaluation tasks (task_id, task/question, answer) the skills must not leak.",
)
@_llm_options
@click.option("--quiet", "-q", is_flag=True)
def distill_cmd(
    logs: tuple[str, ...],
    lab: str | None,
    out: str,
    prefix: str,
    group_by: str,
    min_support: int,
    min_lift: float,
    max_p: float,
    max_items: int,
    budget_bytes: int,
    conditions: tuple[str, ...],
    seed: int,
    no_merge: bool,
    ground_truth: str | None,
    eval_tasks: str | None,
    llm: bool,
    model: str | None,
    base_url: str | None,
    config: str | None,
    quiet: bool,
) -> None:
    """Distil skills from successful vs failed runs (log-driven self-distillation).

    Ingests --logs (into --lab, or OUT/.trajlab-lab), never reads eval/held-out runs, mines rules
    with support, lift and run ids, writes OUT/<name>/SKILL.md with references/, and keeps every
    version under OUT/.history/. A skill that would contain an eval task's id or gold answer is refused.
    """
    if lab:
        check_outside_lab(out, lab)
    truth_rows = read_ground_truth(ground_truth, "--ground-truth") if ground_truth else None
    params = MineParams(
        min_support=min_support,
        min_lift=min_lift,
        max_p=max_p,
        group_by=None if group_by.lower() == "none" else group_by,
    )
    client = _client(llm, model, base_url, config, Path(out) / ".llm-cache", seed)
    res = distill(
        out,
        lab=lab,
        logs=logs,
        prefix=prefix,
        params=params,
        budget=Budget(max_bytes=budget_bytes),
        client=client,
        max_items=max_items,
        seed=seed,
        conditions=conditions or None,
        merge=not no_merge,
        progress=not quiet,
        eval_tasks=read_eval_tasks(eval_tasks) if eval_tasks else (),
    )
    click.echo(res.format())
    if client is not None:
        click.echo(f"LLM: {client.requests} requests, {client.cached} cached answers")
    if truth_rows is not None:  # (--ground-truth given)
        from ..store import Lab

        the_lab = Lab.open(res.lab)
        from ..examples import load_patterns

        rep = pattern_recovery(
            the_lab,
            load_corpus(the_lab, conditions=conditions or None),
            res.rules,
            truth_rows,
            descriptions=load_patterns(ground_truth) if ground_truth else None,
        )
        click.echo("\n" + rep.format())
    if any(s.refused for s in res.skills):
        raise click.ClickException("some skills were refused by the contamination guard (see above)")


@click.command("iterate")
@click.option(
    "--calibration",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=str),
    help="Calibration task ids (one per line, or JSONL with task_id).",
)
@click.option(
    "--heldout",
    type=click.Path(exists=True, dir_okay=False, path_type=str),
    default=None,
    help="Held-out task ids: a new version must not lower their score.",
)
@click.option(
    "--runner",
    required=True,
    help="Command run per task: placeholders {task} {skills_dir} {out_dir} {skill_dir}.",
)
@click.option(
    "--scorer",
    default=None,
    help="Optional command per task ({task} {out_dir}): exit 0 = correct, 1 = wrong.",
)
@click.option(
    "--rounds",
    default=3,
    show_default=True,
    type=click.IntRange(min=0),
    help="Edit rounds after the baseline round.",
)
@click.option(
    "--work",
    required=True,
    type=click.Path(path_type=str),
    help="Work folder (resumable state, skills, lab).",
)
@click.option(
    "--skill",
    "start",
    type=click.Path(exists=True, file_okay=False, path_type=str),
    default=None,
    help="Starting skill folder (default: an empty skill).",
)
@click.option("--name", default="calibrated", show_default=True, help="Skill name when starting empty.")
@click.option("--max-ops", default=2, show_default=True, type=click.IntRange(min=1), help="Edits per round.")
@click.option(
    "--timeout",
    "timeout_s",
    default=1800.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds per runner call.",
)
@_llm_options
@click.option("--quiet", "-q", is_flag=True)
def iterate_cmd(
    calibration: str,
    heldout: str | None,
    runner: str,
    scorer: str | None,
    rounds: int,
    work: str,
    start: str | None,
    name: str,
    max_ops: int,
    timeout_s: float,
    llm: bool,
    model: str | None,
    base_url: str | None,
    config: str | None,
    quiet: bool,
) -> None:
    """Improve a skill by calibration-set self-iteration (resumable: rerun the same command)."""
    client = _client(llm, model, base_url, config, Path(work) / ".llm-cache")
    res = iterate(
        work,
        read_tasks(calibration),
        runner,
        rounds,
        heldout=read_tasks(heldout) if heldout else None,
        scorer=scorer,
        name=name,
        start=start,
        client=client,
        max_ops=max_ops,
        timeout_s=timeout_s,
        progress=not quiet,
        echo=click.echo if not quiet else None,
    )
    click.echo(res.format())
    click.echo(f"curve: {Path(work) / 'curve.json'}")


@click.group("skills")
def skills_group() -> None:
    """Validate, scaffold, install and compare skills."""


@skills_group.command("validate")
@click.argument("path", type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True)
def validate_cmd(path: str, as_json: bool) -> None:
    """Check skills at or under PATH against the Agent Skills spec and Codex's limits."""
    reps = validate_path(path)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "path": str(r.path),
                        "name": r.name,
                        "ok": r.ok,
                        "issues": [i.__dict__ for i in r.issues],
                    }
                    for r in reps
                ],
                indent=2,
            )
        )
    else:
        for r in reps:
            click.echo(f"{'ok  ' if r.ok else 'FAIL'} {r.path}")
            for i in r.issues:
                click.echo(f"     {i.severity}: {i.message} [{i.code}]")
    bad = [r for r in reps if not r.ok]
    if bad:
        raise click.ClickException(f"{len(bad)} of {len(reps)} skills are invalid")


@skills_group.command("new")
@click.argument("name")
@click.option("--dir", "parent", default="skills", show_default=True, type=click.Path(path_type=str))
@click.option("--author", default=None)
def new_cmd(name: str, parent: str, author: str | None) -> None:
    """Scaffold a spec-valid skill NAME for a person to write."""
    d = new_skill_dir(name, parent, author)
    click.echo(
        f"created {d}/SKILL.md (edit it, then `trajlab skills rehash {d}` and `trajlab skills validate {d}`)"
    )


@skills_group.command("rehash")
@click.argument("skill_dir", type=click.Path(exists=True, file_okay=False, path_type=str))
def rehash_cmd(skill_dir: str) -> None:
    """Update metadata.content-hash after editing a skill by hand."""
    click.echo(rehash(skill_dir))


@skills_group.command("install")
@click.argument("skill_dir", type=click.Path(exists=True, file_okay=False, path_type=str))
@click.option("--target", required=True, type=click.Choice(TARGETS))
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    help="Project folder (default: your home folder; the current folder for --target prompt).",
)
@click.option(
    "--legacy", is_flag=True, help="With --target codex: the legacy ~/.codex/skills (or $CODEX_HOME/skills)."
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Prompt file (--target prompt).",
)
@click.option("--force", is_flag=True, help="Replace an existing different copy.")
def install_cmd(
    skill_dir: str, target: str, project: str | None, legacy: bool, output: str | None, force: bool
) -> None:
    """Install SKILL_DIR for Claude Code, Codex / .agents, or as a prompt prefix file."""
    if output:
        check_creatable(output, "--output")
    click.echo(f"installed -> {install(skill_dir, target, project, legacy, output, force)}")


@skills_group.command("compare")
@click.argument("lab_a", type=click.Path(path_type=str))
@click.argument("lab_b", type=click.Path(path_type=str))
@click.option("--condition-a", default=None, help="Only runs of this condition in LAB_A (e.g. no-skill).")
@click.option("--condition-b", default=None, help="Only runs of this condition in LAB_B (e.g. skill).")
@click.option("--json", "as_json", is_flag=True)
def compare_cmd(
    lab_a: str, lab_b: str, condition_a: str | None, condition_b: str | None, as_json: bool
) -> None:
    """Paired comparison of the same tasks in LAB_A (without) and LAB_B (with a skill): McNemar, categories, cost."""
    c = compare(lab_a, lab_b, condition_a, condition_b)
    click.echo(json.dumps(c.to_dict(), indent=2, default=str) if as_json else c.format())


@skills_group.command("history")
@click.argument("skills_root", type=click.Path(exists=True, file_okay=False, path_type=str))
@click.argument("name")
@click.option("--diff", "show", type=int, default=None, help="Print the diff that made this version.")
def history_cmd(skills_root: str, name: str, show: int | None) -> None:
    """List the versions of skill NAME under SKILLS_ROOT (or print one version's diff)."""
    why = check_name(name)
    if why:
        raise click.ClickException(f"NAME: {why}")
    store = SkillStore(skills_root)
    vs = store.versions(name)
    if not vs:
        raise click.ClickException(f"no versions of {name!r} under {skills_root}")
    if show is not None:
        v = next((x for x in vs if x.version == show), None)
        if v is None:
            raise click.ClickException(f"no version {show}")
        click.echo((v.path.parent / "diff.patch").read_text(encoding="utf-8"), nl=False)
        return
    for v in vs:
        click.echo(f"v{v.version:<4} {v.content_hash}  parent={v.parent}  {v.reason}")
