from __future__ import annotations

import polars as pl
import pytest

from trajlab.analysis import ANALYSES, get_analysis, list_analyses, run_analysis, run_sql
from trajlab.errors import ConfigError, QueryError


def _lab(b):
    b.traj("a", "success", model="A").traj("b", "failure", model="B")
    b.call("a", "ffprobe"), b.call("a", "ffprobe"), b.call("b", "python")
    return b.build()


def test_catalog_lists_every_shipped_file_with_docs():
    names = {a.name for a in list_analyses()}
    assert {"gaps", "gaps_per_trajectory", "capability", "tokens", "failures", "funnel", "recovery",
            "tools", "step_capability"} <= names  # fmt: skip
    assert set(ANALYSES) <= names
    assert [a.name for a in list_analyses("view")] == ["step_capability"]
    gaps = get_analysis("gaps")
    assert gaps.params == {"min_support": 10, "min_trajectories": 5}
    assert gaps.param_docs["min_support"].startswith("minimum number of calls")
    assert set(gaps.placeholders) == {"by", "partition_by", "tool_use"} and gaps.groupable
    assert get_analysis("failures").params == {"source": "judge", "judge": None}
    assert get_analysis("tokens").default_by == ("model", "harness", "reasoning_effort")
    for a in list_analyses():
        assert a.title and a.title != a.name, a.name
        assert a.description, a.name
        assert a.path.is_file() and a.path.suffix == ".sql"


def test_run_by_name_file_or_text(builder, tmp_path):
    lab = _lab(builder)
    t = run_sql(lab, "tools")
    assert t.column("tool").to_pylist() == ["ffprobe", "python"]
    assert t.column("call_share").to_pylist() == pytest.approx([2 / 3, 1 / 3])
    df = run_sql(lab, "tools", by="model", as_="polars")
    assert isinstance(df, pl.DataFrame) and df.columns[:2] == ["model", "tool"]
    pdf = run_sql(
        lab, "SELECT count(*) AS n FROM tool_calls WHERE tool = $t", params={"t": "ffprobe"}, as_="pandas"
    )
    assert int(pdf["n"][0]) == 2
    # a user's copy of a shipped file, edited, runs with its own header defaults
    mine = tmp_path / "my_tools.sql"
    mine.write_text(
        get_analysis("tools").text.replace("ORDER BY {{by}} n_calls DESC, tool", "ORDER BY {{by}} tool DESC")
        .replace("-- @kind analysis", "-- @kind analysis\n-- @param min_calls=2 keep tools with this many calls")
        .replace("GROUP BY {{by}} tool\n", "GROUP BY {{by}} tool\nHAVING count(*) >= $min_calls\n")
    )  # fmt: skip
    res = run_analysis(lab, str(mine))
    assert res.name == "my_tools" and res.params["min_calls"] == 2
    assert res.table.column("tool").to_pylist() == ["ffprobe"]
    assert run_analysis(lab, str(mine), params={"min_calls": 1}).table.column("tool").to_pylist() == [
        "python",
        "ffprobe",
    ]


def test_user_sql_errors_show_duckdb_message_and_views(builder):
    lab = _lab(builder)
    with pytest.raises(QueryError) as e:
        run_sql(lab, "SELECT nope FROM trajectories")
    msg = str(e.value)
    assert "nope" in msg and "views available:" in msg
    assert "trajectories" in msg and "step_capability" in msg and "tool_calls" in msg
    with pytest.raises(QueryError, match="only read-only"):
        run_sql(lab, "DROP VIEW steps")
    with pytest.raises(QueryError, match="only read-only"):
        run_sql(lab, "COPY (SELECT 1) TO '/tmp/x.csv'")
    with pytest.raises(QueryError, match="only read-only"):
        run_sql(lab, "SELECT 1; CREATE TABLE x AS SELECT 1")
    with pytest.raises(QueryError, match="no analysis named 'gapz'"):
        run_sql(lab, "gapz")
    with pytest.raises(QueryError, match="no such SQL file"):
        run_sql(lab, "/nonexistent/q.sql")
    # files outside the lab are out of reach
    with pytest.raises(QueryError):
        run_sql(lab, "SELECT * FROM read_csv('/etc/passwd')")


def test_parameter_and_placeholder_errors(builder):
    lab = _lab(builder)
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) bins; this query takes \$min_support"):
        run_sql(lab, "gaps", params={"bins": 3})
    with pytest.raises(ConfigError, match=r"parameter \$x has no value"):
        run_sql(lab, "SELECT $x")
    with pytest.raises(ConfigError, match="cannot be grouped"):
        run_sql(lab, "SELECT 1", by="model")
    with pytest.raises(ConfigError, match="unknown placeholder"):
        run_sql(lab, "SELECT {{cols}} 1")
    with pytest.raises(ConfigError, match="cannot group by"):
        run_sql(lab, "tools", by="model; DROP TABLE x")
    with pytest.raises(ConfigError, match="as_"):
        run_sql(lab, "tools", as_="numpy")
    # struct literals are not placeholders
    assert run_sql(lab, "SELECT {'a': 1} AS s").column("s").to_pylist() == [{"a": 1}]


def test_tool_key_placeholder(builder):
    builder.traj("a", "success", model="A").traj("b", "failure", model="B")
    builder.shell("a", "python3 -c 'print(6*7)'")
    builder.shell("a", "mkdir -p frames && ffmpeg -i clip.mp4 -vf fps=1 frames/%04d.png")
    builder.shell("b", "python3 -c \"import cv2; cv2.VideoCapture('clip.mp4')\"")
    lab = builder.build()
    tools = set(run_sql(lab, "gaps", params={"min_support": 0}).column("tool").to_pylist())
    assert tools == {"python", "ffmpeg"}
    keyed = set(run_sql(lab, "gaps", key="tool_modality").column("tool").to_pylist())
    assert keyed == {"python:compute", "python:video", "ffmpeg:video"}
    programs = set(run_sql(lab, "gaps_per_trajectory", key="program").column("tool").to_pylist())
    assert programs == {"python", "mkdir", "ffmpeg"}
    with pytest.raises(ConfigError, match="key must be one of"):
        run_sql(lab, "gaps", key="argv")
    with pytest.raises(ConfigError, match=r"no \{\{key\}\} placeholder"):
        run_sql(lab, "tools", key="program")


def test_tool_calls_view_carries_the_trajectory_model(builder):
    builder.traj("a", "success", model="traj-model")
    builder.call("a", "ls", model="step-model")
    builder.call("a", "ls")
    rows = run_sql(lab := builder.build(), "SELECT model, step_model FROM tool_calls ORDER BY step_index")
    assert rows.to_pylist() == [
        {"model": "traj-model", "step_model": "step-model"},
        {"model": "traj-model", "step_model": None},
    ]
    assert run_sql(lab, "tools", by="model").column("model").to_pylist() == ["traj-model"]


def test_probing_calls_per_effort(builder):
    builder.traj("t1", "success", reasoning_effort="high").traj("t2", "failure", reasoning_effort="high")
    builder.traj("t3", "success", reasoning_effort="low").traj("t4", reasoning_effort="low")
    builder.call("t1", "ffprobe"), builder.call("t1", "ls"), builder.call("t1", "python")
    builder.call("t2", "python"), builder.call("t2", "ffprobe")
    builder.call("t3", "python")
    builder.step("t4")
    lab = builder.build()
    rows = {r["reasoning_effort"]: r for r in run_sql(lab, "probing").to_pylist()}
    high, low = rows["high"], rows["low"]
    assert (high["n_traj"], high["avg_calls"], high["avg_probing"]) == (2, 2.5, 1.5)
    assert high["probing_share"] == pytest.approx(0.6) and high["probe_first"] == 0.5
    assert high["accuracy"] == 0.5
    assert (low["avg_calls"], low["avg_probing"], low["probing_share"], low["probe_first"]) == (0.5, 0, 0, 0)
    assert low["accuracy"] == 1.0
    custom = {
        r["reasoning_effort"]: r for r in run_sql(lab, "probing", params={"probes": "python"}).to_pylist()
    }
    assert custom["high"]["avg_probing"] == 1 and custom["low"]["probe_first"] == 1


def test_probes_parameter_with_spaces_after_the_commas(builder):
    builder.traj("t1", "success").traj("t2", "failure")
    builder.call("t1", "ffprobe"), builder.call("t1", "python"), builder.call("t2", "ls")
    lab = builder.build()
    spaced = run_sql(lab, "probing", by=(), params={"probes": "ffprobe, ls"}).to_pylist()
    assert spaced == run_sql(lab, "probing", by=(), params={"probes": "ffprobe,ls"}).to_pylist()
    assert spaced[0]["avg_probing"] == 1 and spaced[0]["probe_first"] == 1
