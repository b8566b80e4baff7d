"""Static export (kaleido + Debian Chromium), sidecars, tables and the CLI."""

from __future__ import annotations

import json
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from figures_labs import build_lab

from trajlab.cli import cli
from trajlab.errors import ConfigError
from trajlab.figures import (
    BROWSER_HINT,
    FIGURES,
    PNG_DPI,
    export_figures,
    export_tables,
    find_browser,
)
from trajlab.figures._result import jsonable

HAS_BROWSER = find_browser() is not None


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def exported(fig_lab, tmp_path_factory):
    """The whole set exported once from the hand-built lab (one kaleido server)."""
    if not HAS_BROWSER:
        pytest.skip("no Chromium (apt-get install chromium)")
    out = tmp_path_factory.mktemp("figs")
    return export_figures(fig_lab, out, formats=("pdf", "png", "svg"), progress=False)


@pytest.mark.browser
@pytest.mark.slow
def test_export_writes_valid_files_of_paper_size(exported, fig_lab):
    from pypdf import PdfReader

    rep = exported
    assert rep.ok and rep.exit_code == 0 and not rep.failed and not rep.skipped
    assert set(rep.produced) == set(FIGURES)
    for name, files in rep.produced.items():
        assert sorted(p.suffix for p in files) == [".pdf", ".png", ".svg"], name
        res = rep.results[name]
        w_px, h_px = res.figure.layout.width, res.figure.layout.height
        assert w_px == 336  # 3.5 in at 96 px/in
        pdf = rep.out_dir / f"{name}.pdf"
        assert pdf.read_bytes()[:5] == b"%PDF-"
        page = PdfReader(pdf).pages[0]
        assert float(page.mediabox.width) == pytest.approx(3.5 * 72, abs=1)  # points
        assert float(page.mediabox.height) == pytest.approx(h_px * 0.75, abs=1)
        pw, ph = png_size(rep.out_dir / f"{name}.png")  # 300 dpi (Chromium floors fractional pixels)
        assert (pw, ph) == (
            pytest.approx(w_px * PNG_DPI / 96, abs=1),
            pytest.approx(h_px * PNG_DPI / 96, abs=1),
        )
        svg = ET.parse(rep.out_dir / f"{name}.svg").getroot()
        assert svg.tag.endswith("svg") and svg.get("width") == "336"
    # the tool names and category labels are real text in the vector output
    assert "ffprobe" in (rep.out_dir / "tool_gaps.svg").read_text()
    assert "Tool/infra." in (rep.out_dir / "agreement_confusion.svg").read_text()
    assert "sk-proj" not in (rep.out_dir / "exemplar_dag.svg").read_text()


@pytest.mark.browser
@pytest.mark.slow
def test_sidecars_hold_data_sql_and_lab(exported, fig_lab):
    rep = exported
    for name, res in rep.results.items():
        side = json.loads((rep.out_dir / f"{name}.json").read_text())
        assert side["name"] == name and side["lab"] == str(fig_lab.root)
        assert side["lab_generation"] == fig_lab.generation
        assert side["data"] == jsonable(res.data.to_pylist())
        assert side["sql"] == res.sql and side["sql"]
        assert side["files"] == [f"{name}.pdf", f"{name}.png", f"{name}.svg"]
    gaps = json.loads((rep.out_dir / "tool_gaps.json").read_text())
    assert gaps["params"]["n_boot"] == 1000 and gaps["analysis"] == "gaps"
    assert {r["tool"]: r["success"] for r in gaps["data"]}["ffprobe"] == 0.8
    index = json.loads((rep.out_dir / "index.json").read_text())
    assert index["produced"]["tool_gaps"] == ["tool_gaps.pdf", "tool_gaps.png", "tool_gaps.svg"]


@pytest.mark.browser
@pytest.mark.slow
def test_missing_data_skips_some_and_produces_the_rest(tmp_path):
    if not HAS_BROWSER:
        pytest.skip("no Chromium")
    lab = build_lab(tmp_path / "bare", tokens_on=False, difficulty_on=False, labels_on=False)
    rep = export_figures(
        lab, tmp_path / "out", formats=("png",), only=["accuracy_tokens_pareto", "tool_gaps"], progress=False
    )
    assert rep.skipped == {"accuracy_tokens_pareto": "no token counts"}
    assert [p.name for p in rep.produced["tool_gaps"]] == ["tool_gaps.png"]
    assert rep.produced["accuracy_tokens_pareto"] == [] and rep.ok
    assert not (tmp_path / "out" / "accuracy_tokens_pareto.png").exists()
    side = json.loads((tmp_path / "out" / "accuracy_tokens_pareto.json").read_text())
    assert side["skipped"] == "no token counts" and side["data"] == [] and side["files"] == []
    assert "accuracy_tokens_pareto: skipped: no token counts" in rep.format()


def test_without_browser_sidecars_are_written_and_it_says_what_to_install(fig_lab, tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-chromium"))
    assert find_browser() is None
    rep = export_figures(fig_lab, tmp_path / "out", only=["tool_gaps", "capability_usage"], progress=False)
    assert not rep.ok and rep.exit_code == 1
    assert "apt-get install chromium" in rep.browser_missing and "BROWSER_PATH" in rep.browser_missing
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "capability_usage.json",
        "index.json",
        "tool_gaps.json",
    ]
    result = CliRunner().invoke(
        cli,
        [
            "figures",
            str(fig_lab.root),
            "--out",
            str(tmp_path / "cli"),
            "--only",
            "tool_gaps",
            "--no-progress",
        ],
    )
    assert result.exit_code == 1
    assert "apt-get install chromium" in result.output and "no figure could be produced" in result.output
    assert (tmp_path / "cli" / "tool_gaps.json").is_file()
    assert "apt-get install chromium" in BROWSER_HINT


def test_bad_arguments_are_config_errors(fig_lab, tmp_path):
    with pytest.raises(ConfigError, match="unknown figure"):
        export_figures(fig_lab, tmp_path, only=["pie_chart"], progress=False)
    with pytest.raises(ConfigError, match="unknown format"):
        export_figures(fig_lab, tmp_path, formats=("gif",), progress=False)
    with pytest.raises(ConfigError, match="has no option 'colour'"):
        export_figures(fig_lab, tmp_path, options={"tool_gaps": {"colour": "red"}}, progress=False)
    runner = CliRunner()
    r = runner.invoke(cli, ["figures", str(fig_lab.root), "--out", str(tmp_path), "-p", "tool_gaps.top"])
    assert r.exit_code == 1 and "FIGURE.OPTION=VALUE" in r.output
    r = runner.invoke(cli, ["figures", str(tmp_path / "nolab"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "no such lab" in r.output


def test_tables_latex_and_markdown_match_the_figures(fig_lab, tmp_path):
    paths = export_tables(fig_lab, tmp_path)
    names = {p.name for p in paths}
    assert {f"{n}.tex" for n in FIGURES} | {f"{n}.md" for n in FIGURES} | {"tables.md"} == names
    tex = (tmp_path / "tool_gaps.tex").read_text()
    for token in (
        "\\toprule",
        "\\midrule",
        "\\bottomrule",
        "\\begin{tabular}{lrrrcrr}",
        "\\label{tab:tool-gaps}",
    ):
        assert token in tex
    assert "ffprobe & 80.0 & 15.0 & +65.0* &" in tex
    assert "95\\% CI" in tex  # escaped
    md = (tmp_path / "accuracy_tokens_pareto.md").read_text()
    assert "| m-a | h | low | 1,000 | 46.2 |" in md and "| yes |" in md
    conf = (tmp_path / "agreement_confusion.tex").read_text()
    assert "Video perception & 1 & 0 & 0 & 0 \\\\" in conf
    diff = (tmp_path / "accuracy_by_difficulty.md").read_text()
    assert diff.splitlines()[2].startswith("| Difficulty | no-skill (% solved) | skill (% solved) |")
    dag = (tmp_path / "exemplar_dag.tex").read_text()
    assert "sk-proj" not in dag and "4 & agent & action & python & compute & ok &  & yes" in dag


def test_tables_cli_reports_skipped(tmp_path):
    lab = build_lab(tmp_path / "bare", tokens_on=False, difficulty_on=False, labels_on=False)
    r = CliRunner().invoke(cli, ["tables", str(lab.root), "--out", str(tmp_path / "t")])
    assert r.exit_code == 0, r.output
    assert "(5 figures skipped: see tables.md)" in r.output
    combined = (tmp_path / "t" / "tables.md").read_text()
    assert "- `accuracy_by_difficulty` skipped: no difficulty levels" in combined
    assert "- `media_tokens` skipped: no token counts" in combined
    assert not (tmp_path / "t" / "accuracy_by_difficulty.tex").exists()
    assert (tmp_path / "t" / "tool_gaps.tex").exists()


def test_figures_list():
    r = CliRunner().invoke(cli, ["figures", "--list"])
    assert r.exit_code == 0
    for name in FIGURES:
        assert f"{name}: " in r.output
    assert "trajectory_id=None" in r.output and "source='judge'" in r.output


def test_one_failing_figure_is_reported_and_the_others_go_on(fig_lab, tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-chromium"))
    rep = export_figures(
        fig_lab,
        tmp_path / "out",
        formats=("png",),
        only=["exemplar_dag", "accuracy_by_difficulty"],
        options={"exemplar_dag": {"trajectory_id": "t_zzz"}},
        progress=False,
    )
    assert rep.failed == {"exemplar_dag": f"LabError: no trajectory 't_zzz' in {fig_lab.root}"}
    assert list(rep.sidecars) == ["accuracy_by_difficulty"]
    assert "exemplar_dag: FAILED: LabError" in rep.format()
