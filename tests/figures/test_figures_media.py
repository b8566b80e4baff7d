"""figures.media_tokens on a hand-built lab whose strategies and token counts are known."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from figures_labs import NOW, _call, _msg

from trajlab import analysis
from trajlab.errors import ConfigError
from trajlab.figures import FIGURES, STRATEGY_COLORS, media_tokens
from trajlab.figures._tables import markdown_table, table_spec
from trajlab.store import Lab

VIDEO = "video<b>"  # markup in a group value: must reach the figure inert

# run -> (domain, outcome, media commands, prompt tokens of each model call)
RUNS: dict[str, tuple[str, str, list[tuple[str, dict[str, Any]]], list[int]]] = {
    "r1": ("image", "success", [("view_image", {"path": "chart.png"})], [3000, 3400]),
    "r2": ("image", "failure", [("view_image", {"path": "chart.png"})], [3200]),
    "t1": ("image", "success", [("Bash", {"command": "tesseract chart.png out"})], [1000, 1200]),
    "t2": ("image", "success", [("Bash", {"command": "tesseract chart.png out"})], [1400]),
    "m1": (
        "image",
        "failure",
        [("view_image", {"path": "chart.png"}), ("Bash", {"command": "tesseract chart.png out"})],
        [2500],
    ),
    "v1": (VIDEO, "success", [("Bash", {"command": "ffmpeg -i clip.mp4 -vf fps=1 f%03d.png"})], [1500]),
    "v2": (VIDEO, "failure", [], [900]),
}


def build_media_lab(root: Path, media: bool = True, step_tokens: bool = True) -> Lab:
    """RUNS as a lab: trajectory input_tokens = the sum of its calls' prompts, total = input + 100.
    `media=False` replaces every media command by `python3 solve.py`; `step_tokens=False` keeps the
    trajectory totals but drops the per-call prompt tokens."""
    trajectories, steps = [], []
    for tid, (domain, outcome, calls, prompts) in RUNS.items():
        rows = [_msg(tid, 0, "user", f"task {tid}")]
        for tool, args in calls if media else [("Bash", {"command": "python3 solve.py"})]:
            rows.append(_call(tid, len(rows), tool, args))
        for p in prompts:
            rows.append(
                {**_msg(tid, len(rows), "assistant", "..."), "input_tokens": p if step_tokens else None}
            )
        steps += rows
        trajectories.append(
            {
                "trajectory_id": tid,
                "runner": "test",
                "format": "test",
                "source_path": f"/fixtures/{tid}.jsonl",
                "source_digest": f"xxh3_128:{tid}",
                "outcome": outcome,
                "model": "m",
                "domain": domain,
                "input_tokens": sum(prompts),
                "total_tokens": sum(prompts) + 100,
                "n_steps": len(rows),
                "n_tool_calls": sum(1 for r in rows if r["kind"] == "tool_call"),
                "ingested_at": NOW,
            }
        )
    lab = Lab.open(root, create=True)
    with lab.write("media figure fixture") as txn:
        txn.append("trajectories", trajectories)
        txn.append("steps", steps)
    return lab


@pytest.fixture(scope="module")
def media_lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    return build_media_lab(tmp_path_factory.mktemp("medialab") / "lab")


def _bars(res) -> dict[tuple[str, str], float]:
    """(group, trace name) -> bar height, read from the figure's traces."""
    return {(x, t.name): y for t in res.figure.data for x, y in zip(t.x, t.y) if y is not None}


def test_prompt_per_call_bars_equal_the_analysis(media_lab):
    res = media_tokens(media_lab)
    assert res.ok and res.name == "media_tokens" and FIGURES["media_tokens"] is media_tokens
    assert res.analysis == "media" and res.params["measure"] == "prompt_per_call"
    video = "video‹b›"
    # one trace per strategy with runs, in the order raw, mixed, tools, none
    assert [t.name for t in res.figure.data] == ["raw media", "mixed", "tools only", "no media call"]
    assert [t.marker.color for t in res.figure.data] == [STRATEGY_COLORS[s] for s in STRATEGY_COLORS]
    expected = {
        ("image", "raw media"): (3000 + 3400 + 3200) / 3,  # 3200
        ("image", "mixed"): 2500,
        ("image", "tools only"): (1000 + 1200 + 1400) / 3,  # 1200
        (video, "tools only"): 1500,
        (video, "no media call"): 900,
    }
    assert _bars(res) == pytest.approx(expected)
    # the same numbers as the analysis, row for row
    table = analysis.media_strategy(media_lab).table.to_pylist()
    got = {(r["group"], r["strategy"]): r["value"] for r in res.data.to_pylist()}
    assert got == pytest.approx({(safe(r["domain"]), r["strategy"]): r["prompt_per_call"] for r in table})
    rows = {(r["group"], r["strategy"]): r for r in res.data.to_pylist()}
    assert rows[("image", "raw")]["n_traj"] == 2 and rows[("image", "raw")]["accuracy"] == 0.5
    assert rows[("image", "raw")]["prompt_per_call_vs_tools"] == pytest.approx(3200 / 1200)
    assert rows[("image", "tools")]["accuracy"] == 1.0
    assert rows[(video, "none")]["prompt_per_call_vs_tools"] == pytest.approx(900 / 1500)
    # trajectories above the bars, accuracy and ratio in the hover
    raw = res.figure.data[0]
    assert list(raw.x) == ["image", video] and list(raw.text) == ["2", ""]
    assert raw.customdata[0] == "2 trajectories, accuracy 50%, 2.67x the prompt per call of tools-only"
    assert res.figure.data[2].customdata[0] == "2 trajectories, accuracy 100%"
    assert res.figure.layout.yaxis.title.text == "prompt tokens per model call"
    assert res.figure.layout.barmode == "group" and res.figure.layout.width == 336


def safe(v: str) -> str:
    return v.replace("<", "‹").replace(">", "›")


def test_other_measures(media_lab):
    per_traj = media_tokens(media_lab, measure="prompt_tokens")
    assert _bars(per_traj)[("image", "raw media")] == pytest.approx((6400 + 3200) / 2)
    total = media_tokens(media_lab, measure="total_tokens", width="double")
    assert _bars(total)[("image", "tools only")] == pytest.approx((2200 + 1400) / 2 + 100)
    assert total.figure.layout.width == 687
    solved = media_tokens(media_lab, measure="tokens_per_solved")
    # all tokens of the strategy's runs over their successes; the mixed and none runs all failed
    assert _bars(solved) == pytest.approx(
        {
            ("image", "raw media"): (6500 + 3300) / 1,
            ("image", "tools only"): (2300 + 1500) / 2,
            ("video‹b›", "tools only"): 1600,
        }
    )
    assert [t.name for t in solved.figure.data] == ["raw media", "tools only"]  # no empty traces


def test_by_model_and_raw_tools_option(media_lab):
    # tesseract counted as a raw read too: every image run is then raw
    res = media_tokens(media_lab, by=("model", "domain"), raw_tools="image_read,tesseract")
    rows = {(r["group"], r["strategy"]): r["n_traj"] for r in res.data.to_pylist()}
    assert rows == {("m · image", "raw"): 5, ("m · video‹b›", "tools"): 1, ("m · video‹b›", "none"): 1}
    assert res.params["by"] == ["model", "domain"] and res.params["raw_tools"] == "image_read,tesseract"
    one = media_tokens(media_lab, by=None)
    assert {r["group"] for r in one.data.to_pylist()} == {"all"}


def test_table_export(media_lab):
    spec = table_spec(media_tokens(media_lab))
    assert spec.headers == ["Group", "raw media (n)", "mixed (n)", "tools only (n)", "no media call (n)"]
    assert spec.rows == [
        ["image", "3,200 (2)", "2,500 (1)", "1,200 (2)", ""],
        ["video‹b›", "", "", "1,500 (1)", "900 (1)"],
    ]
    assert "| image | 3,200 (2) |" in markdown_table(spec)


def test_bad_options(media_lab):
    with pytest.raises(ConfigError, match="measure must be one of prompt_per_call"):
        media_tokens(media_lab, measure="calls")
    with pytest.raises(ConfigError, match="raw_tools"):
        media_tokens(media_lab, raw_tools=" ,")
    with pytest.raises(ConfigError):
        media_tokens(media_lab, width="a4")
    with pytest.raises(ConfigError):
        media_tokens(media_lab, by="colour")


def test_skipped_without_media_calls_or_tokens(tmp_path):
    plain = media_tokens(build_media_lab(tmp_path / "plain", media=False))
    assert plain.skipped == "no media tool calls" and plain.data.num_rows == 0
    assert plain.notes == ["no tool call touches audio, video or images (steps.modality)"]
    assert "not available: no media tool calls" in plain.figure.layout.annotations[0].text
    assert plain.sql and plain.analysis == "media"
    no_steps = build_media_lab(tmp_path / "nosteps", step_tokens=False)
    res = media_tokens(no_steps)
    assert res.skipped == "no per-call prompt tokens" and "measure=total_tokens" in res.notes[0]
    assert media_tokens(no_steps, measure="total_tokens").ok
    empty = media_tokens(Lab.create(tmp_path / "empty"))
    assert empty.skipped == "no trajectories" and empty.notes and "ingest" in empty.notes[0]
