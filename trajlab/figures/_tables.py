"""The figures' numbers as LaTeX (booktabs) and Markdown tables.

Each table is built from `FigureResult.data`, so a table and its figure always show the same numbers.
Percentages are printed without a `%` sign (the header says `(%)`), which keeps LaTeX cells plain.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..fsutil import atomic_write_text
from ._latex import latex_escape
from ._result import FigureResult, LabLike
from ._style import category_label, category_order

TABLE_FORMATS = ("latex", "markdown")


@dataclass
class TableSpec:
    headers: list[str]
    rows: list[list[str]]
    align: str  # one of l/r/c per column
    caption: str


def _pct(v: float | None, digits: int = 1) -> str:
    return "" if v is None else f"{100 * v:.{digits}f}"


def _ci(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def _p(v: float | None) -> str:
    if v is None:
        return ""
    return f"{v:.3f}" if v >= 0.001 else f"{v:.1e}"


def _group_cols(data: list[dict[str, Any]], cols: Sequence[str]) -> list[str]:
    return [c for c in cols if data and c in data[0]]


def _tool_gaps(r: FigureResult) -> TableSpec:
    rows = r.data.to_pylist()
    by = list(r.params.get("by") or [])
    unit = "users" if r.params.get("measure") == "usage" else "calls"
    headers = [
        *by,
        "Tool",
        f"Success (% {unit})",
        f"Failure (% {unit})",
        "Gap (pp)",
        "95% CI",
        "p (adj.)",
        "Calls",
    ]
    body = [
        [
            *[str(x[c]) for c in by],
            str(x["tool"]),
            _pct(x["success"]),
            _pct(x["failure"]),
            f"{100 * x['gap']:+.1f}" + ("*" if x["significant"] else ""),
            _ci(x["ci_low"], x["ci_high"]),
            _p(x["p_adjusted"]),
            str(x["n_calls"]),
        ]
        for x in rows
    ]
    return TableSpec(
        headers, body, "l" * (len(by) + 1) + "rrrcrr", r.caption.replace("Filled markers:", "*:")
    )


def _pivot(
    rows: list[dict[str, Any]],
    row_key: Callable[[dict[str, Any]], str],
    col_key: str,
    cell: Callable[[dict[str, Any]], str],
    cols: list[str],
) -> list[list[str]]:
    table: dict[str, dict[str, str]] = {}
    for x in rows:
        table.setdefault(row_key(x), {})[x[col_key]] = cell(x)
    return [[k, *[v.get(c, "") for c in cols]] for k, v in table.items()]


def _failure_distribution(r: FigureResult) -> TableSpec:
    rows = r.data.to_pylist()
    cats = category_order(sorted({x["category"] for x in rows}))
    multi = len(r.params.get("source") or []) > 1
    measure = r.params.get("measure", "share")

    def key(x: dict[str, Any]) -> str:
        return f"{x['source']}: {x['group']}" if multi else x["group"]

    def cell(x: dict[str, Any]) -> str:
        return f"{_pct(x['share'])} ({x['n']})" if measure == "share" else str(x["n"])

    body = _pivot(rows, key, "category", cell, cats)
    labeled = {key(x): x["n_labeled"] for x in rows}
    body = [[*b, str(labeled[b[0]])] for b in body]
    head = "% (n)" if measure == "share" else "n"
    headers = ["Group", *[f"{category_label(c)} {head}" for c in cats], "Labeled"]
    return TableSpec(headers, body, "l" + "r" * (len(cats) + 1), r.caption)


def _pareto(r: FigureResult) -> TableSpec:
    rows = r.data.to_pylist()
    by = list(r.params.get("by") or [])
    headers = [*by, "Tokens (mean)", "Accuracy (%)", "95% CI", "Solved/n", "Pareto"]
    body = [
        [
            *[str(x[c]) if x[c] is not None else "" for c in by],
            f"{x['total_tokens']:,.0f}",
            _pct(x["accuracy"]),
            _ci(x["ci_low"], x["ci_high"]),
            f"{x['n_success']}/{x['n_success'] + x['n_failure']}",
            "yes" if x["pareto"] else "",
        ]
        for x in rows
    ]
    return TableSpec(headers, body, "l" * len(by) + "rrcrc", r.caption)


def _capability(r: FigureResult) -> TableSpec:
    rows = r.data.to_pylist()
    caps = list(dict.fromkeys(x["capability"] for x in rows))
    ratio = r.params.get("measure") != "calls_per_traj"
    facet = r.params.get("facet")

    def key(x: dict[str, Any]) -> str:
        return f"{x['facet']}: {x['group']}" if facet else x["group"]

    def cell(x: dict[str, Any]) -> str:
        v = x["value"]
        return "" if v is None else (_pct(v) if ratio else f"{v:.2f}")

    unit = " (%)" if ratio else ""
    headers = ["Group", *[f"{c}{unit}" for c in caps], "Trajectories"]
    body = _pivot(rows, key, "capability", cell, caps)
    n = {key(x): x["n_traj"] for x in rows}
    body = [[*b, str(n[b[0]])] for b in body]
    return TableSpec(headers, body, "l" + "r" * (len(caps) + 1), r.caption)


def _difficulty(r: FigureResult) -> TableSpec:
    rows = r.data.to_pylist()
    conds = list(dict.fromkeys(x["condition"] for x in rows))
    facet = r.params.get("facet")

    def key(x: dict[str, Any]) -> str:
        return f"{x['facet']}: {x['difficulty']}" if facet else str(x["difficulty"])

    def cell(x: dict[str, Any]) -> str:
        return f"{_pct(x['accuracy'])} ({x['n_success']}/{x['n_success'] + x['n_failure']})"

    headers = ["Difficulty", *[f"{c} (% solved)" for c in conds]]
    return TableSpec(headers, _pivot(rows, key, "condition", cell, conds), "l" + "r" * len(conds), r.caption)


def _dag(r: FigureResult) -> TableSpec:
    headers = ["Step", "Lane", "Kind", "Tool", "Modality", "Status", "Answer path", "Decisive"]
    body = [
        [
            str(x["step_index"]),
            x["lane"],
            x["kind"],
            x["tool"] or "",
            x["modality"],
            x["status"],
            "yes" if x["on_answer_path"] else "",
            "yes" if x["decisive"] else "",
        ]
        for x in r.data.to_pylist()
    ]
    return TableSpec(headers, body, "rllllllc", r.caption)


def _confusion(r: FigureResult) -> TableSpec:
    rows = r.data.to_pylist()
    cols = list(dict.fromkeys(x["judge"] for x in rows))
    body = _pivot(rows, lambda x: category_label(x["reference"]), "judge", lambda x: str(x["n"]), cols)
    headers = [f"{r.params.get('reference', 'gold')} \\ judge", *[category_label(c) for c in cols]]
    return TableSpec(headers, body, "l" + "r" * len(cols), r.caption)


def _media(r: FigureResult) -> TableSpec:
    from ._media import MEDIA_MEASURES, STRATEGY_NAMES

    rows = r.data.to_pylist()
    strategies = [s for s in STRATEGY_NAMES if any(x["strategy"] == s for x in rows)]
    unit = MEDIA_MEASURES.get(r.params.get("measure", "prompt_per_call"), "tokens")

    def cell(x: dict[str, Any]) -> str:
        return f"{x['value']:,.0f} ({x['n_traj']})"

    body = _pivot(rows, lambda x: x["group"], "strategy", cell, strategies)
    headers = ["Group", *[f"{STRATEGY_NAMES[s]} (n)" for s in strategies]]
    return TableSpec(headers, body, "l" + "r" * len(strategies), f"{r.caption} Cells: {unit} (trajectories).")


SPECS: dict[str, Callable[[FigureResult], TableSpec]] = {
    "tool_gaps": _tool_gaps,
    "failure_distribution": _failure_distribution,
    "accuracy_tokens_pareto": _pareto,
    "capability_usage": _capability,
    "accuracy_by_difficulty": _difficulty,
    "exemplar_dag": _dag,
    "agreement_confusion": _confusion,
    "media_tokens": _media,
}


def latex_table(spec: TableSpec, label: str) -> str:
    """A booktabs table environment (needs `\\usepackage{booktabs,graphicx}`). A tabular wider than the
    column is scaled down to the column's width (never up), so wide tables do not run into the margin."""
    lines = [
        "% generated by trajlab (trajlab tables); needs \\usepackage{booktabs,graphicx}",
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        f"\\caption{{{latex_escape(spec.caption)}}}",
        f"\\label{{tab:{label}}}",
        "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%",
        f"\\begin{{tabular}}{{{spec.align}}}",
        "\\toprule",
        _latex_row(spec.headers),
        "\\midrule",
    ]
    lines += [_latex_row(row) for row in spec.rows]
    lines += ["\\bottomrule", "\\end{tabular}%", "}", "\\end{table}"]
    return "\n".join(lines) + "\n"


_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")
_MD_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _latex_row(cells: Sequence[str]) -> str:
    """One tabular row. A row that starts with `[` or `*` would be read as the optional argument of the
    `\\\\` (or `\\toprule`) before it (`Missing number`), so such a first cell starts with `{}`."""
    out = [latex_escape(c) for c in cells]
    if out and out[0][:1] in ("[", "*"):
        out[0] = "{}" + out[0]
    return " & ".join(out) + " \\\\"


def _md(text: str) -> str:
    """A Markdown cell: one line, `|` escaped, `<`, `>`, `&` as entities (text from the logs is never
    HTML to a Markdown viewer), control characters removed."""
    text = _MD_CONTROL.sub("", _LINE_BREAKS.sub(" ", text))
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def markdown_table(spec: TableSpec, title: str | None = None) -> str:
    sep = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = [f"**{_md(title)}**", ""] if title else []
    lines += [
        "| " + " | ".join(_md(h) for h in spec.headers) + " |",
        "| " + " | ".join(sep.get(a, "---") for a in spec.align) + " |",
    ]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in spec.rows]
    lines += ["", _md(spec.caption)]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> Path:
    atomic_write_text(path, text).chmod(0o644)
    return path


def table_spec(result: FigureResult) -> TableSpec:
    return SPECS[result.name](result)


def export_tables(
    lab: LabLike,
    out_dir: str | os.PathLike[str],
    only: Sequence[str] | None = None,
    formats: Sequence[str] = TABLE_FORMATS,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    results: Mapping[str, FigureResult] | None = None,
    progress: bool = False,
) -> list[Path]:
    """Write `OUT/<figure>.tex` (booktabs) and `OUT/<figure>.md` for every figure with data, plus
    `OUT/tables.md` (all Markdown tables, and the skipped figures with their reasons).

    `results` reuses figures already computed (e.g. `export_figures(...).results`); otherwise they are
    computed with `options` (figure name -> keyword options).
    """
    from ._export import compute_figures

    fmts = [f.strip().lower() for f in formats]
    for f in fmts:
        if f not in TABLE_FORMATS:
            raise ConfigError(f"unknown table format {f!r}; formats: {', '.join(TABLE_FORMATS)}")
    if results is None:
        computed, failed = compute_figures(lab, only, "single", options, progress)
    else:
        computed = {n: r for n, r in results.items() if not only or n in only}
        failed = {}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    combined = ["# trajlab tables", ""]
    for name, res in computed.items():
        if res.skipped:
            combined += [f"- `{name}` skipped: {res.skipped}", ""]
            continue
        spec = table_spec(res)
        if "latex" in fmts:
            written.append(_write(out / f"{name}.tex", latex_table(spec, name.replace("_", "-"))))
        md = markdown_table(spec, res.title)
        if "markdown" in fmts:
            written.append(_write(out / f"{name}.md", md))
        combined += [f"## {name}", "", md]
    combined += [f"- `{name}` failed: {err}" for name, err in failed.items()]
    if "markdown" in fmts:
        written.append(_write(out / "tables.md", "\n".join(combined).rstrip() + "\n"))
    return written
