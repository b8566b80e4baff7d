"""The LaTeX tables compile with real pdflatex, in the default OT1 and in the T1 font encoding, whatever
text the logs put in their cells, and fit the column. `.ci/run` installs TeX Live (it fails without
`pdflatex`), so in CI these tests run."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from trajlab.figures import export_tables
from trajlab.figures._latex import MATH, SAFE, latex_escape
from trajlab.figures._tables import TableSpec, latex_table

needs_pdflatex = pytest.mark.skipif(
    shutil.which("pdflatex") is None, reason="pdflatex not installed (.ci/run installs TeX Live)"
)
HOSTILE = [
    "café — naïve “quoted” Łódź Ærø ß € ™ ½ ± × ÷ ° µ § ¶ © ® ¿¡ ‰ • …",
    "Ąą Ęę Ðð Þþ «guillemets» ‹›  ŉ ſ Ħ",  # accented letters OT1 has no glyph for
    "≥ ≤ ≠ ≈ ∞ α β Δ Σ ω √ ∑ ∈ ⇒ − x′ ″",
    "中文 日本語 한국어 😀 🎬 ✓ ✗ ★ ♪ ⚠ →",
    "\u202eRTL override\u202c \u200bzero\u200dwidth e\u0301 combining \ufeffBOM",
    "ctrl \x00 \x07 \x1b[31m \x7f \x85 tab\there",
    "$5 & 50% #1 a_b {x} ~ ^ \\ | < > ``quotes'' -- ---",
    "line one\n\nline two\r\nthree",
    "[2.5, 7.0] starts with a bracket",  # after `\\` this was read as `\\[2.5pt]`: Missing number
    "*starred",  # `\\*`
]


def _compile(tmp: Path, body: str, t1: bool) -> str:
    doc = tmp / ("t1.tex" if t1 else "ot1.tex")
    doc.write_text(
        "\\documentclass{article}\n"
        + ("\\usepackage[T1]{fontenc}\n" if t1 else "")
        + "\\usepackage{booktabs,graphicx}\n\\begin{document}\n"
        + body
        + "\n\\end{document}\n",
        encoding="utf-8",
    )
    r = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", doc.name],
        cwd=tmp,
        capture_output=True,
        timeout=120,
    )
    log = doc.with_suffix(".log").read_text(encoding="latin-1")
    errors = [ln for ln in log.splitlines() if ln.startswith("!")]
    assert r.returncode == 0 and not errors, f"pdflatex failed ({'T1' if t1 else 'OT1'}): {errors[:5]}"
    assert doc.with_suffix(".pdf").stat().st_size > 0
    return log


@needs_pdflatex
@pytest.mark.parametrize("t1", [False, True], ids=["OT1", "T1"])
def test_every_figure_table_compiles_and_fits_the_column(fig_lab, tmp_path, t1):
    paths = [p for p in export_tables(fig_lab, tmp_path / "tables") if p.suffix == ".tex"]
    assert len(paths) >= 6
    body = "\n\\clearpage\n".join(f"\\input{{{p}}}" for p in paths)
    log = _compile(tmp_path, body, t1)
    assert "Overfull \\hbox" not in log  # wide tables are scaled to the column


@needs_pdflatex
@pytest.mark.parametrize("t1", [False, True], ids=["OT1", "T1"])
def test_any_text_from_the_logs_compiles(tmp_path, t1):
    rows = [[cell, str(k)] for k, cell in enumerate(HOSTILE)]
    rows += [["[0.1, 0.2]", "x"], ["*", "y"]]
    rows.append(["".join(sorted(SAFE)), "safe"])
    rows.append([" ".join(MATH), "math"])
    spec = TableSpec(["[Step] text — “label”", "n"], rows, "lr", "Caption ≥ with 中文 and 50% & _")
    _compile(tmp_path, latex_table(spec, "hostile"), t1)


@needs_pdflatex
def test_a_small_table_is_not_scaled_up(tmp_path):
    spec = TableSpec(["a", "b"], [["1", "2"]], "lr", "small")
    tex = latex_table(spec, "small")
    body = tex.replace("\\end{table}", "\\typeout{WIDTH=\\the\\linewidth}\\end{table}")
    body = body.replace(
        "\\resizebox{",
        "\\sbox0{\\begin{tabular}{lr}a&b\\end{tabular}}\\typeout{TAB=\\the\\wd0}\\resizebox{",
        1,
    )
    log = _compile(tmp_path, body, False)
    tab = float(re.search(r"TAB=([\d.]+)pt", log).group(1))
    width = float(re.search(r"WIDTH=([\d.]+)pt", log).group(1))
    assert tab < width / 4  # the tiny tabular stays tiny: \resizebox keeps \width when it fits


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("≥ 3", r"\ensuremath{\geq} 3"),
        ("α", r"\ensuremath{\alpha}"),
        ("中", "[U+4E2D]"),
        ("😀", "[U+1F600]"),
        ("Ąą", "Aa"),  # no OT1 glyph: the accent is dropped, the letter kept
        ("é ß €", "é ß €"),  # typeset in OT1 and T1: kept
        ("a\x07b\tc", "a b c"),
        ("x\u200by e\u0301", "xy e"),
        ("ｆｕｌｌ", "full"),
        ("a_b ≥", r"a\_b \ensuremath{\geq}"),
    ],
)
def test_latex_escape_unicode(text: str, want: str) -> None:
    assert latex_escape(text) == want


def test_latex_escape_unicode_true_keeps_characters_for_xelatex() -> None:
    assert latex_escape("≥ 中 a_b\n\nc", unicode=True) == "≥ 中 a\\_b c"
