"""Long names that share a prefix keep their own bar, row and table line.

Axis labels are shortened (tools to 30 characters, group values to 40). Before the fix, two tools
such as `mcp__playwright__browser_navigate` and `mcp__playwright__browser_navigate_back`, or two
model ids that differ only in a suffix, got the same label: plotly drew both on one axis category
(overlapping bars, two gap markers on one row) and the tables merged their rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import figures_labs
import pytest

from trajlab.figures import FIGURES
from trajlab.figures._result import distinct_labels
from trajlab.figures._style import safe_text
from trajlab.figures._tables import markdown_table, table_spec

NAV = "mcp__playwright__browser_navigate"
BACK = "mcp__playwright__browser_navigate_back"
MODEL_A = "openrouter/meta-llama/llama-3.1-405b-instruct:free"
MODEL_B = "openrouter/meta-llama/llama-3.1-405b-instruct:nitro"


@pytest.fixture()
def long_names_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    call = figures_labs._call

    def renamed(tid: str, idx: int, tool_name: str, args: Any, output: str = "ok", **extra: Any):
        cmd = args.get("command", "") if isinstance(args, dict) else ""
        if cmd.startswith("ffprobe"):
            return call(tid, idx, NAV, {"url": "https://example.org"}, output, **extra)
        if cmd.startswith("cat"):
            return call(tid, idx, BACK, {}, output, **extra)
        return call(tid, idx, tool_name, args, output, **extra)

    monkeypatch.setattr(figures_labs, "_call", renamed)
    monkeypatch.setattr(figures_labs, "model", lambda i: MODEL_A if i % 2 == 0 else MODEL_B)
    return figures_labs.build_lab(tmp_path / "lab")


def test_tools_with_a_long_common_prefix_get_their_own_rows(long_names_lab) -> None:
    r = FIGURES["tool_gaps"](long_names_lab, supported_only=False, n_boot=200)
    rows = r.data.to_pylist()
    tools = [x["tool"] for x in rows]
    assert NAV in tools and BACK in tools
    labels = [x["label"] for x in rows]
    assert len(set(labels)) == len(labels)  # one axis category per tool
    for trace in r.figure.data:
        assert list(trace.y) == labels
    assert all(len(x) <= 30 for x in labels)
    by_tool = {x["tool"]: x["label"] for x in rows}
    assert by_tool["python"] == "python"  # short names are untouched


def test_models_with_a_long_common_prefix_stay_apart_in_figures_and_tables(long_names_lab) -> None:
    r = FIGURES["failure_distribution"](long_names_lab, source="gold")
    groups = {x["model"]: x["group"] for x in r.data.to_pylist()}
    assert set(groups) == {MODEL_A, MODEL_B}
    assert groups[MODEL_A] != groups[MODEL_B]
    assert {tuple(t.y) for t in r.figure.data} == {tuple(sorted(groups.values()))}
    spec = table_spec(r)
    assert len(spec.rows) == 2  # not one merged row
    assert sum(int(row[-1]) for row in spec.rows) == 20  # every labeled failure, once
    md = markdown_table(spec)
    assert groups[MODEL_A] in md and groups[MODEL_B] in md
    p = FIGURES["accuracy_tokens_pareto"](long_names_lab, by="model", color=None, symbol=None)
    assert len({x["group"] for x in p.data.to_pylist()}) == 2
    c = FIGURES["capability_usage"](long_names_lab)
    assert len({x["group"] for x in c.data.to_pylist()}) == 2


def test_distinct_labels_and_middle_cut() -> None:
    assert safe_text(NAV, 30, middle=True) == "mcp__playwrigh…rowser_navigate"
    assert safe_text("short", 30, middle=True) == "short"
    keys = [NAV, BACK, "python", NAV]
    labels = distinct_labels(keys, lambda k, mid: safe_text(k, 30, mid))
    assert labels[0] == labels[3] and len(set(labels)) == 3 and labels[2] == "python"
    # names that a middle cut cannot tell apart are numbered
    same_ends = ["a" * 20 + "x" + "b" * 20, "a" * 20 + "y" + "b" * 20]
    got = distinct_labels(same_ends, lambda k, mid: safe_text(k, 10, mid))
    assert len(set(got)) == 2 and got[0].endswith("(1)") and got[1].endswith("(2)")
