"""media.sql / media_strategy: raw media reads vs extraction tools, and what each cost in tokens."""

from __future__ import annotations

import pytest
from analysis_labs import LabBuilder

from trajlab.analysis import media_strategy, run_sql
from trajlab.errors import ConfigError


def _lab(b: LabBuilder):
    # image tasks: r1 reads the image raw (view_image), t1/t2 OCR it, m1 does both, n1 touches no media
    b.traj("r1", "failure", domain="image", input_tokens=3000, output_tokens=100)
    b.traj("t1", "success", domain="image", input_tokens=1000, output_tokens=100)
    b.traj("t2", "failure", domain="image", input_tokens=2000, output_tokens=200)
    b.traj("m1", "success", domain="image", input_tokens=5000, output_tokens=300)
    b.traj("n1", "unknown", domain="image")  # no tokens, no media call
    b.traj("a1", "success", domain="audio", input_tokens=800, output_tokens=50)
    b.runner_call("r1", "view_image", {"path": "chart.png"})
    b.step("r1", input_tokens=1500), b.step("r1", input_tokens=1500)  # 2 model calls, 1500 each
    b.shell("t1", "tesseract chart.png -"), b.step("t1", input_tokens=500), b.step("t1", input_tokens=500)
    b.shell("t2", "tesseract chart.png - --psm 6"), b.shell("t2", "tesseract chart.png -")
    b.step("t2", input_tokens=700), b.step("t2", input_tokens=700), b.step("t2", input_tokens=600)
    b.shell("m1", "tesseract chart.png -"), b.runner_call("m1", "Read", {"file_path": "/w/chart.png"})
    b.step("m1", input_tokens=2500), b.step("m1", input_tokens=2500)
    b.shell("n1", "ls -la")
    b.shell("a1", "whisper talk.mp3 --model tiny"), b.step("a1", input_tokens=800)
    return b.build()


def test_strategies_tokens_and_ratio_to_tools(builder):
    res = media_strategy(_lab(builder))
    assert res.missing == [] and res.params == {"raw_tools": "image_read", "by": ["domain"]}
    rows = {(r["domain"], r["strategy"]): r for r in res.table.to_pylist()}
    assert list(rows) == [
        ("audio", "tools"),
        ("image", "raw"),
        ("image", "mixed"),
        ("image", "tools"),
        ("image", "none"),
    ]
    raw, mixed, tools, none = (rows[("image", s)] for s in ("raw", "mixed", "tools", "none"))
    assert (raw["n_traj"], raw["avg_raw_reads"], raw["avg_extractions"], raw["accuracy"]) == (1, 1, 0, 0.0)
    assert (mixed["avg_raw_reads"], mixed["avg_extractions"], mixed["accuracy"]) == (1, 1, 1.0)
    assert (tools["n_traj"], tools["avg_extractions"], tools["accuracy"]) == (2, 1.5, 0.5)
    # prompt tokens per model call: tools (500+500+700+700+600) / 5 = 600; raw 1500; mixed 2500
    assert tools["prompt_per_call"] == 600 and raw["prompt_per_call"] == 1500
    assert raw["prompt_per_call_vs_tools"] == 2.5 and mixed["prompt_per_call_vs_tools"] == pytest.approx(
        2500 / 600
    )
    assert tools["prompt_tokens"] == 1500 and tools["total_tokens"] == 1650
    assert tools["tokens_per_solved"] == 3300 and raw["tokens_per_solved"] is None  # no success
    assert none["n_with_tokens"] == 0 and none["prompt_per_call"] is None and none["accuracy"] is None
    assert rows[("audio", "tools")]["prompt_per_call_vs_tools"] == 1.0


def test_raw_tools_parameter_and_bad_values(builder):
    lab = _lab(builder)
    # counting tesseract as a raw read turns the OCR runs into raw runs
    rows = {
        r["strategy"]: r
        for r in media_strategy(lab, by=(), raw_tools="image_read,tesseract").table.to_pylist()
    }
    assert rows["raw"]["n_traj"] == 4 and "tools" in rows and rows["tools"]["n_traj"] == 1  # the audio run
    with pytest.raises(ConfigError, match="raw_tools"):
        media_strategy(lab, raw_tools=" , ")
    with pytest.raises(ConfigError, match="cannot group by"):
        media_strategy(lab, by="colour")


def test_missing_media_calls_and_tokens_are_named(builder, tmp_path):
    builder.traj("x", "success").traj("y", "failure")
    builder.shell("x", "ls"), builder.step("y")
    res = media_strategy(builder.build())
    assert res.missing == ["no media tool calls", "no token counts"]
    assert [r["strategy"] for r in res.table.to_pylist()] == ["none"]
    empty = media_strategy(LabBuilder(tmp_path / "empty").build())
    assert empty.missing == ["no trajectories"] and empty.table.num_rows == 0
    sql = run_sql(_lab(LabBuilder(tmp_path / "b")), "media", by="domain", params={"raw_tools": "image_read"})
    assert sql.num_rows == 5


def test_raw_tools_with_spaces_after_the_commas(builder):
    # "image_read, tesseract" is the same list as "image_read,tesseract" (the space is not part of the name)
    lab = _lab(builder)
    spaced = media_strategy(lab, by=(), raw_tools=" image_read , tesseract").table.to_pylist()
    plain = media_strategy(lab, by=(), raw_tools="image_read,tesseract").table.to_pylist()
    assert spaced == plain
    assert {r["strategy"]: r["n_traj"] for r in spaced}["raw"] == 4
