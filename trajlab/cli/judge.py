"""`trajlab judge`: label failed trajectories (LLM or rules judge), evaluate, show and render."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from .. import tabular
from ..errors import ConfigError
from ..judge import (
    JudgeInterrupted,
    LLMJudge,
    LLMSettings,
    evaluate,
    evaluate_who_and_when,
    format_eval,
    judge_lab,
    load_view,
    rules_judge,
)
from ..store import Lab
from ..taxonomy import load_taxonomy


class _DefaultGroup(click.Group):
    """`trajlab judge LAB ...` runs the judge; `trajlab judge eval|show|render ...` are subcommands."""

    default_cmd = "run"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = [self.default_cmd, *args]
        return super().parse_args(ctx, args)


@click.group("judge", cls=_DefaultGroup)
def judge_group() -> None:
    """Label failed trajectories with a failure category, decisive step and evidence.

    \b
    trajlab judge LAB --model NAME [--base-url URL]   LLM judge (any OpenAI-compatible endpoint)
    trajlab judge LAB                                  rules judge when no model is configured
    trajlab judge eval LAB --gold FILE                 accuracy, macro-F1, kappa, decisive step
    trajlab judge eval LAB --who-and-when              agent/step accuracy on Who&When
    trajlab judge show LAB [TRAJ]                      the stored labels
    trajlab judge render LAB TRAJ                      exactly what the LLM judge would read
    """


@contextmanager
def _sigterm_as_interrupt() -> Iterator[dict[str, int]]:
    """SIGTERM (`kill`, `timeout`, a batch scheduler or CI cancelling the job) stops a judge run the
    way Ctrl-C does: finished labels are committed and the report is printed (exit 143), instead of
    the process dying with up to `commit_seconds` of finished labels only in the response cache."""
    caught: dict[str, int] = {}
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return

    def on_term(signum: int, frame: object) -> None:
        caught["signal"] = signum
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield caught
    finally:
        signal.signal(signal.SIGTERM, previous)


def _selection(only: str) -> str | list[str]:
    if only.startswith("@"):
        path = Path(only[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise ConfigError(f"--only @{path}: cannot read the file of trajectory ids: {why}") from None
        return [ln.strip() for ln in text.splitlines() if ln.strip()]
    return only


@judge_group.command("run")
@click.argument("lab", type=click.Path(path_type=str))
@click.option("--taxonomy", "-t", default="omni-failure", show_default=True, help="Taxonomy id or YAML file.")
@click.option(
    "--model", "-m", help="Model name (env TRAJLAB_JUDGE_MODEL). Without one, the rules judge runs."
)
@click.option(
    "--base-url",
    help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (env TRAJLAB_JUDGE_BASE_URL).",
)
@click.option(
    "--api-key-env",
    help="Environment variable holding the API key (default TRAJLAB_JUDGE_API_KEY, OPENAI_API_KEY).",
)
@click.option(
    "--config", type=click.Path(path_type=str), help="YAML file with a `judge:` section of settings."
)
@click.option("--rules", is_flag=True, help="Use the offline rules judge (the default without a model).")
@click.option("--dry-run", is_flag=True, help="Print requests, tokens and estimated cost; send nothing.")
@click.option(
    "--only",
    default="failed",
    show_default=True,
    help="failed | all (not graded success) | ID,ID,... | @file-of-ids",
)
@click.option("--concurrency", "-j", type=int, help="Requests in flight at once (default 8).")
@click.option(
    "--max-prompt-tokens", type=int, help="Prompt budget per request, system prompt included (default 16000)."
)
@click.option(
    "--max-windows", type=int, help="Windows allowed for a long trajectory before it is unjudgeable."
)
@click.option("--timeout", type=float, help="Seconds per request before it is retried (default 120).")
@click.option("--retries", type=int, help="Retries on 429/5xx/timeouts (default 5).")
@click.option("--temperature", type=float)
@click.option("--price-in", type=float, help="USD per million prompt tokens (for the dry-run cost).")
@click.option("--price-out", type=float, help="USD per million completion tokens.")
@click.option("--compact", is_flag=True, help="Send only category names and definitions (small models).")
@click.option("--response-format", type=click.Choice(["json_schema", "json_object", "none"]))
@click.option(
    "--force",
    is_flag=True,
    help="Judge again trajectories that already have a label (cache still used). The rules judge always "
    "judges every selected trajectory again: it is deterministic and cheap, so its labels follow the "
    "current steps.",
)
@click.option("--no-cache", is_flag=True, help="Do not answer from the response cache.")
@click.option(
    "--no-redact", is_flag=True, help="Send trajectory text without secret redaction (not recommended)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the run report as JSON.")
@click.option("--progress/--no-progress", default=True)
def run_cmd(
    lab: str,
    taxonomy: str,
    model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    config: str | None,
    rules: bool,
    dry_run: bool,
    only: str,
    concurrency: int | None,
    max_prompt_tokens: int | None,
    max_windows: int | None,
    timeout: float | None,
    retries: int | None,
    temperature: float | None,
    price_in: float | None,
    price_out: float | None,
    compact: bool,
    response_format: str | None,
    force: bool,
    no_cache: bool,
    no_redact: bool,
    as_json: bool,
    progress: bool,
) -> None:
    """Judge the failed (or selected) trajectories of LAB."""
    the_lab = Lab.open(lab)
    tax = load_taxonomy(taxonomy)
    settings = LLMSettings.resolve(
        config,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        max_concurrency=concurrency,
        max_prompt_tokens=max_prompt_tokens,
        max_windows=max_windows,
        timeout_s=timeout,
        max_retries=retries,
        temperature=temperature,
        price_in_per_mtok=price_in,
        price_out_per_mtok=price_out,
        taxonomy_detail="compact" if compact else None,
        response_format=response_format,
        redact=False if no_redact else None,
    )
    if rules or not settings.configured:
        if not rules:
            click.echo(
                "no judge model configured (--model / TRAJLAB_JUDGE_MODEL): using the rules judge", err=True
            )
        report = rules_judge(the_lab, tax, _selection(only), force=True, progress=progress, dry_run=dry_run)
    else:
        if no_redact:
            click.echo("warning: secret redaction is off; trajectory text is sent as is", err=True)
        try:
            with _sigterm_as_interrupt() as caught:
                report = judge_lab(
                    the_lab,
                    tax,
                    settings,
                    _selection(only),
                    dry_run=dry_run,
                    force=force,
                    use_cache=not no_cache,
                    progress=progress,
                )
        except JudgeInterrupted as e:  # Ctrl-C or `kill`: say what was kept, not just "Aborted!"
            click.echo(e.report.format())
            raise SystemExit(128 + caught.get("signal", signal.SIGINT)) from None
    click.echo(json.dumps(report.as_dict(), indent=2, default=str) if as_json else report.format())
    errors = report.statuses.get("error", 0)
    if not dry_run and report.judged and errors == report.judged:
        # nothing could be labeled (endpoint down, wrong model, bad key): a script must not read success
        click.echo(
            f"Error: every judge request failed ({errors} of {report.judged} trajectories, status error); "
            "the error rows are in judge_labels and are retried when you run the command again",
            err=True,
        )
        raise SystemExit(1)


@judge_group.command("eval")
@click.argument("lab", type=click.Path(path_type=str))
@click.option(
    "--gold", type=click.Path(path_type=str), help="Gold JSONL: trajectory_id, category, decisive_step_index."
)
@click.option("--who-and-when", "www", is_flag=True, help="Agent/step accuracy on the Who&When runs in LAB.")
@click.option(
    "--judge", "judge_kind", type=click.Choice(["llm", "rules"]), help="Which labels (default: llm if any)."
)
@click.option("--model", help="Only labels of this model.")
@click.option("--taxonomy", help="Only labels of this taxonomy id.")
@click.option(
    "-k", "k", type=int, default=1, show_default=True, help="Tolerance for decisive step within +-k."
)
@click.option("--json", "as_json", is_flag=True)
def eval_cmd(
    lab: str,
    gold: str | None,
    www: bool,
    judge_kind: str | None,
    model: str | None,
    taxonomy: str | None,
    k: int,
    as_json: bool,
) -> None:
    """Score judge labels against human gold labels, or on Who&When."""
    if not gold and not www:
        raise click.UsageError("give --gold FILE or --who-and-when")
    results = []
    if gold:
        results.append(evaluate(lab, gold, judge=judge_kind, model=model, taxonomy_id=taxonomy, k=k))
    if www:
        results.append(evaluate_who_and_when(lab, judge=judge_kind, model=model, taxonomy_id=taxonomy))
    if as_json:
        click.echo(json.dumps(results[0] if len(results) == 1 else results, indent=2))
    else:
        click.echo("\n\n".join(format_eval(r) for r in results))


@judge_group.command("show")
@click.argument("lab", type=click.Path(path_type=str))
@click.argument("trajectory", required=False)
@click.option("--judge", "judge_kind", type=click.Choice(["llm", "rules"]))
@click.option("--format", "fmt", type=click.Choice(tabular.FORMATS), default="table", show_default=True)
def show_cmd(lab: str, trajectory: str | None, judge_kind: str | None, fmt: str) -> None:
    """List stored judge labels (or every field of one trajectory's labels)."""
    import pyarrow.compute as pc

    the_lab = Lab.open(lab)
    flt = None
    if trajectory:
        flt = pc.field("trajectory_id") == trajectory
    if judge_kind:
        f2 = pc.field("judge") == judge_kind
        flt = f2 if flt is None else flt & f2
    t = the_lab.read("judge_labels", filter=flt)
    if not trajectory:
        cols = [
            "trajectory_id",
            "judge",
            "model",
            "status",
            "category",
            "decisive_step_index",
            "confidence",
            "status_reason",
        ]
        t = t.select(cols)
    click.echo(tabular.render(t, fmt if fmt != "parquet" else "json", max_rows=500))


@judge_group.command("render")
@click.argument("lab", type=click.Path(path_type=str))
@click.argument("trajectory")
@click.option("--taxonomy", "-t", default="omni-failure", show_default=True)
@click.option("--max-prompt-tokens", type=int, default=16_000, show_default=True)
@click.option("--compact", is_flag=True)
@click.option("--system", "with_system", is_flag=True, help="Also print the system prompt.")
def render_cmd(
    lab: str, trajectory: str, taxonomy: str, max_prompt_tokens: int, compact: bool, with_system: bool
) -> None:
    """Print what the LLM judge would read for TRAJECTORY (redacted, within the token budget)."""
    settings = LLMSettings(
        model="render-only",
        max_prompt_tokens=max_prompt_tokens,
        taxonomy_detail="compact" if compact else "full",
    )
    j = LLMJudge(load_taxonomy(taxonomy), settings, None)
    view = load_view(Lab.open(lab), trajectory)
    r = j.render(view)
    if r.too_long:
        click.echo(f"unjudgeable: {r.too_long}")
        return
    for k, msgs in enumerate(j.messages_for(r)):
        if r.windowed:
            click.echo(f"===== request {k + 1} of {len(r.windows)} =====")
        for m in msgs:
            if m["role"] == "system" and not with_system:
                continue
            click.echo(f"--- {m['role']} ---\n{m['content']}")
    click.echo(
        f"\n(~{r.tokens:,} tokens rendered from ~{r.raw_tokens:,} raw; DAG from {view.dag_source})", err=True
    )
