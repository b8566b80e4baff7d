"""`trajlab gaps` and `trajlab analyze`: run the SQL analyses and print or save their results."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .. import analysis, tabular
from ..analysis import ANALYSES, AnalysisResult, missing_hint, parse_value
from ..errors import ConfigError
from ._output import check_outside_lab, write_out

if TYPE_CHECKING:
    import pyarrow as pa

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# Columns of `gaps` shown in a terminal table (files and csv/json always get every column).
GAPS_SHORT = (
    "tool",
    "n_calls",
    "share_success",
    "share_failure",
    "gap",
    "gap_ci",
    "usage_success",
    "usage_failure",
    "usage_gap",
    "usage_gap_ci",
    "p_adjusted",
    "finding",
)


def _output_options(f: F) -> F:
    f = click.option(
        "--max-rows",
        type=click.IntRange(min=0),
        default=200,
        show_default=True,
        help="Rows shown in table/markdown output.",
    )(f)
    f = click.option(
        "--out",
        "-o",
        type=click.Path(path_type=str),
        help="Write the result to a file (.csv .json .parquet .md).",
    )(f)
    f = click.option(
        "--format", "fmt", type=click.Choice(tabular.FORMATS), default="table", show_default=True
    )(f)
    return f


def _report(
    res: AnalysisResult,
    fmt: str,
    out: str | None,
    max_rows: int,
    short: Callable[[AnalysisResult], pa.Table] | None = None,
    lab: str | None = None,
) -> None:
    for m in res.missing:
        hint = missing_hint(m)
        click.echo(f"missing: {m}" + (f" ({hint})" if hint else ""), err=True)
    for n in res.notes:
        click.echo(f"note: {n}", err=True)
    results = {"": res, **{f".{k}": v for k, v in res.extras.items()}}
    for suffix, r in results.items():
        if out:
            p = Path(out)
            target = p.with_name(p.stem + suffix + p.suffix) if suffix else p
            write_out(target, partial(r.write, target, None if fmt == "table" else fmt), lab)
            click.echo(f"wrote {r.num_rows} rows to {target}")
            continue
        if fmt == "parquet":
            raise click.UsageError("--format parquet needs --out")
        if suffix and fmt in ("csv", "json", "jsonl"):
            # one parseable table on stdout: the companion tables go to files only
            example = f"FILE.{fmt}"
            click.echo(
                f"note: a `{suffix[1:]}` table ({r.num_rows} rows) is not printed in {fmt}; "
                f"--out {example} writes it to {example.replace('.', suffix + '.', 1)}",
                err=True,
            )
            continue
        if suffix:
            click.echo(f"\n{suffix[1:]}:")
            for m in r.missing:
                click.echo(f"missing: {m}", err=True)
        if r.num_rows == 0 and (r.missing or fmt in ("table", "markdown")):
            # csv / json / jsonl of a result without rows stay parseable (header only, `[]`, nothing)
            if not r.missing:
                click.echo("(no rows)")
            continue
        table = short(r) if short and fmt in ("table", "markdown") else r.table
        text = tabular.render(table, fmt, max_rows=max_rows if fmt in ("table", "markdown") else None)
        click.echo(text, nl=not text.endswith("\n"))


def _ci(lo: float | None, hi: float | None) -> str:
    ok = lo is not None and hi is not None and lo == lo and hi == hi
    return f"[{lo:+.3f}, {hi:+.3f}]" if ok else ""


def _short_gaps(res: AnalysisResult) -> pa.Table:
    import pyarrow as pa

    rows = []
    by = [c for c in res.params.get("by", [])]
    for r in res.table.to_pylist():
        ci = _ci(r["gap_ci_low"], r["gap_ci_high"])
        uci = _ci(r["usage_gap_ci_low"], r["usage_gap_ci_high"])
        if r["significant"]:
            finding = f"yes: {r['favors']}"
        elif not r["supported"]:
            finding = f"filtered: {r['note']}"
        else:
            finding = "no"
        rows.append(
            {**{c: r[c] for c in by}, **{c: r.get(c) for c in GAPS_SHORT}}
            | {"gap_ci": ci, "usage_gap_ci": uci, "finding": finding}
        )
    return pa.Table.from_pylist(rows) if rows else res.table


@click.command("gaps")
@click.argument("lab", type=click.Path(path_type=str))
@click.option("--by", default="", help="Group by trajectory columns, e.g. model,harness,benchmark,effort.")
@click.option(
    "--min-support",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Minimum calls of a tool.",
)
@click.option(
    "--min-trajectories",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Minimum trajectories using a tool.",
)
@click.option(
    "--n-boot",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Bootstrap replicates (0: none).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="1 - interval level; test level.",
)
@click.option("--correction", type=click.Choice(analysis.CORRECTIONS), default="holm", show_default=True)
@click.option("--test", type=click.Choice(analysis.TESTS), default="fisher", show_default=True)
@click.option(
    "--n-perm",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Permutations for --test permutation.",
)
@click.option(
    "--key",
    type=click.Choice(list(analysis.TOOL_KEYS)),
    default="tool",
    show_default=True,
    help="What counts as one tool: the tool, tool:modality (python:video), or each program of a command.",
)
@click.option(
    "--counts",
    type=click.Choice(list(analysis.COUNT_SOURCES)),
    default="auto",
    show_default=True,
    help="Where the calls per (trajectory, tool) come from: the materialized tool_usage counts "
    "(built when missing), the steps table, or auto (tool_usage on labs with >= 1M calls).",
)
@click.option("--significant", is_flag=True, help="Show only significant gaps.")
@click.option("--all-columns", is_flag=True, help="Show every column in the terminal table.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@_output_options
def gaps_cmd(
    lab: str,
    by: str,
    min_support: int,
    min_trajectories: int,
    n_boot: int,
    seed: int,
    alpha: float,
    correction: str,
    test: str,
    n_perm: int,
    key: str,
    counts: str,
    significant: bool,
    all_columns: bool,
    quiet: bool,
    fmt: str,
    out: str | None,
    max_rows: int,
) -> None:
    """Tools over-represented in successful vs failed trajectories of LAB, with intervals and tests.

    Per tool: share of calls in successful and failed trajectories and their difference (the gap),
    per-trajectory usage rates, bootstrap intervals over trajectories, a Fisher (or permutation) test
    corrected for multiple comparisons, and a minimum-support filter that flags thin rows.
    """
    if out:
        check_outside_lab(out, lab)
    counts = _counts_for(lab, counts)
    res = analysis.gaps(
        lab,
        by=by,
        min_support=min_support,
        min_trajectories=min_trajectories,
        n_boot=n_boot,
        seed=seed,
        alpha=alpha,
        correction=correction,
        test=test,
        n_perm=n_perm,
        key=key,
        counts=counts,
        progress=not quiet,
    )
    t = res.table
    summary = (
        f"{sum(t.column('significant').to_pylist())} significant of {sum(t.column('supported').to_pylist())} "
        f"supported rows ({t.num_rows} in all; {test} test, {correction}, alpha {alpha}, "
        f"{n_boot} bootstrap replicates)"
    )
    if significant:
        import pyarrow.compute as pc

        res.table = res.table.filter(pc.field("significant"))
    if t.num_rows and fmt in ("table", "markdown") and not out:
        click.echo(summary)
    _report(res, fmt, out, max_rows, None if all_columns else _short_gaps, lab)


def _counts_for(lab: str, counts: T) -> T | str:
    """`auto` may build the tool_usage cache inside the lab; a read-only lab counts from steps instead
    (the same table, see `trajlab gaps --counts`), so reading it needs no write."""
    if counts == "auto" and Path(lab).is_dir() and not os.access(lab, os.W_OK | os.X_OK):
        return "steps"
    return counts


def _read_sql_file(name: str) -> str:
    """The text of the user's .sql file NAME; a one-line error when it is missing, a folder or not UTF-8."""
    p = Path(name.strip()).expanduser()
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such SQL file") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: is a folder, not an SQL file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot read ({e.strerror or e})") from None


def _check_param(name: str, value: object, default: object) -> None:
    """A --param value must have the type of the Python API's default (an int where it takes an int...)."""
    want = None
    if isinstance(default, bool):
        ok, want = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, want = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok, want = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif isinstance(default, str):
        ok, want = isinstance(value, str), "a word"
    else:
        ok = True
    if not ok:
        raise click.UsageError(f"--param {name}={value!r}: {name} wants {want}")


@click.command("analyze")
@click.argument("name")
@click.argument("lab", required=False, type=click.Path(path_type=str))
@click.option("--by", default=None, help="Group by trajectory columns (default: the analysis' own).")
@click.option(
    "--param", "-p", "params", multiple=True, metavar="NAME=VALUE", help="Analysis parameter (repeatable)."
)
@click.option(
    "--key", type=click.Choice(list(analysis.TOOL_KEYS)), default=None, help="Tool key for gaps files."
)
@click.option("--show-sql", is_flag=True, help="Print the SQL (placeholders filled) instead of running it.")
@_output_options
def analyze_cmd(
    name: str,
    lab: str | None,
    by: str | None,
    params: tuple[str, ...],
    key: str | None,
    show_sql: bool,
    fmt: str,
    out: str | None,
    max_rows: int,
) -> None:
    """Run the analysis NAME over LAB: gaps, capability, tokens, failures, funnel, recovery, tools, ...

    NAME may also be a path to your own .sql file (copy one with --show-sql and edit it).
    `trajlab analyze list` lists the analyses and their parameters. Parameters: for gaps, failures
    (source=judge|human|gold|predicted, judge=llm|rules) and funnel (bins=10) they are the Python API's
    keyword arguments; for the other files the `$name` parameters in the SQL.
    """
    if name == "list":
        if fmt == "parquet":
            raise click.UsageError(
                "`analyze list` prints a table; choose --format table, markdown, csv, json or jsonl"
            )
        rows = [
            {
                "name": a.name,
                "kind": a.kind,
                "by": ",".join(a.default_by),
                "params": " ".join(f"{k}={'' if v is None else v}" for k, v in a.params.items()),
                "title": a.title,
            }
            for a in analysis.list_analyses()
        ]
        click.echo(tabular.render(rows, "table" if fmt == "table" else fmt, max_width=90))
        return
    kwargs = {}
    for p in params:
        pname, sep, value = p.partition("=")
        if not sep or not pname.strip():
            raise click.UsageError(f"--param wants NAME=VALUE, got {p!r}")
        kwargs[pname.strip()] = parse_value(value)
    sql_text = _read_sql_file(name) if name.strip().endswith(".sql") else None
    if show_sql:
        info = analysis.get_analysis(name) if sql_text is None else None
        text = info.text if info else sql_text or ""
        cols = analysis.normalize_by(by) if by is not None else (info.default_by if info else ())
        from ..analysis._catalog import expand

        click.echo(expand(text, cols, key), nl=False)
        return
    if not lab:
        raise click.UsageError("give the LAB to analyse")
    if out:
        check_outside_lab(out, lab)
    if name in ANALYSES:
        fn = getattr(analysis, ANALYSES[name])
        signature = inspect.signature(fn).parameters
        accepted = set(signature) - {"lab", "by"}
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            takes = f"takes: {', '.join(sorted(accepted))}" if accepted else "it takes no parameters"
            raise click.UsageError(f"unknown parameter(s) {', '.join(unknown)} for {name}; {takes}")
        for pname, value in kwargs.items():
            _check_param(pname, value, signature[pname].default)
        if name == "gaps":
            kwargs["counts"] = _counts_for(lab, kwargs.get("counts", "auto"))
        if by is not None:
            kwargs["by"] = by
        if key is not None:
            if name != "gaps":
                raise click.UsageError("--key applies to gaps")
            kwargs["key"] = key
        res = fn(lab, **kwargs)
    else:
        res = analysis.run_analysis(lab, name, params=kwargs, by=by, key=key)
    short = _short_gaps if name == "gaps" else None
    _report(res, fmt, out, max_rows, short, lab)
