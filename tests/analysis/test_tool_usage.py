"""The materialized per-trajectory tool counts (`tool_usage`) and the queries that read them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from analysis_labs import LabBuilder

from trajlab.analysis import (
    TOOL_USAGE_DIR,
    ToolUsage,
    gaps,
    get_analysis,
    refresh_tool_usage,
    run_analysis,
    run_sql,
    tool_usage_current,
    tool_usage_rows,
)
from trajlab.errors import ConfigError, LabError
from trajlab.schema import arrow_schema

FFPROBE = "ffprobe a.mp3"
FRAMES = "mkdir -p out && ffmpeg -i a.mp4 -vf fps=1 out/%03d.png"
ARITH = "python3 -c 'print(2+3)'"
CV2 = "python3 -c 'import cv2; cv2.VideoCapture(\"a.mp4\")'"


def _lab(b: LabBuilder, tool_seq: bool = True):
    b.traj("S1", "success", model="m1").traj("S2", "success", model="m1")
    b.traj("F1", "failure", model="m2").traj("F2", "failure", model="m2").traj("U1", "unknown", model="m1")
    b.shell("S1", FFPROBE), b.shell("S1", FRAMES, error=True), b.shell("S1", ARITH), b.step("S1")
    b.shell("S1", FFPROBE)
    b.shell("S2", CV2), b.shell("S2", "ls -la")
    b.shell("F1", CV2, error=True), b.shell("F1", CV2, error=True), b.shell("F1", ARITH)
    b.step("F2")
    b.shell("U1", "ls -la")
    return b.build(tool_seq=tool_seq)


# (trajectory, tool) -> (n_calls, n_errors, first_index), per key
EXPECTED = {
    "tool": {
        ("S1", "ffprobe"): (2, 0, 0),
        ("S1", "ffmpeg"): (1, 1, 1),
        ("S1", "python"): (1, 0, 2),
        ("S2", "python"): (1, 0, 0),
        ("S2", "ls"): (1, 0, 1),
        ("F1", "python"): (3, 2, 0),
        ("U1", "ls"): (1, 0, 0),
    },
    "tool_modality": {
        ("S1", "ffprobe:audio"): (2, 0, 0),
        ("S1", "ffmpeg:video"): (1, 1, 1),
        ("S1", "python:compute"): (1, 0, 2),
        ("S2", "python:video"): (1, 0, 0),
        ("S2", "ls:file"): (1, 0, 1),
        ("F1", "python:video"): (2, 2, 0),
        ("F1", "python:compute"): (1, 0, 2),
        ("U1", "ls:file"): (1, 0, 0),
    },
    "program": {
        ("S1", "ffprobe"): (2, 0, 0),
        ("S1", "mkdir"): (1, 1, 1),
        ("S1", "ffmpeg"): (1, 1, 1),
        ("S1", "python"): (1, 0, 2),
        ("S2", "python"): (1, 0, 0),
        ("S2", "ls"): (1, 0, 1),
        ("F1", "python"): (3, 2, 0),
        ("U1", "ls"): (1, 0, 0),
    },
}


def _as_dict(table: pa.Table) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {
        (r["trajectory_id"], r["tool"]): (r["n_calls"], r["n_errors"], r["first_index"])
        for r in table.to_pylist()
    }


@pytest.mark.parametrize("key", ["tool", "tool_modality", "program"])
def test_counts_per_key_computed_and_materialized(builder, key):
    lab = _lab(builder)
    assert not tool_usage_current(lab, key)
    computed = tool_usage_rows(lab, key)  # the view computes from steps while nothing is materialized
    assert _as_dict(computed) == EXPECTED[key]
    (f,) = refresh_tool_usage(lab, key, progress=False)
    assert f.built and f.key == key and f.rows == len(EXPECTED[key])
    assert f.path.parent.parent == lab.root / TOOL_USAGE_DIR and f.path.name.startswith(f"{key}-")
    stored = pq.read_table(f.path)
    assert stored.schema.equals(arrow_schema(ToolUsage)) and set(stored.column("key").to_pylist()) == {key}
    assert _as_dict(stored) == EXPECTED[key]
    assert tool_usage_current(lab, key) and _as_dict(tool_usage_rows(lab, key)) == EXPECTED[key]
    again = refresh_tool_usage(lab, key, progress=False)[0]
    assert not again.built and again.path == f.path and again.rows == f.rows


def test_materializing_leaves_the_lab_generation_and_manifest_alone(builder):
    lab = _lab(builder)
    before = (lab.root / "lab.json").read_text()
    gen = lab.generation
    refresh_tool_usage(lab, ["tool", "program"], progress=False)
    assert (lab.root / "lab.json").read_text() == before and lab.refresh().generation == gen
    names = sorted(p.name for p in (lab.root / TOOL_USAGE_DIR).glob("*/*.parquet"))
    assert [n.split("-")[0] for n in names] == ["program", "tool"]


def test_stale_counts_are_not_used_and_are_pruned(builder, monkeypatch):
    lab = _lab(builder)
    old = refresh_tool_usage(lab, progress=False)[0].path
    # new steps: a new lab generation, so the materialized counts no longer describe the lab
    with lab.write("more") as txn:
        txn.append("trajectories", [{**builder.trajectories[0], "trajectory_id": "S3"}])
        txn.append(
            "steps",
            [
                {
                    "trajectory_id": "S3",
                    "step_index": 0,
                    "step_id": "S3:0",
                    "kind": "tool_call",
                    "tool": "whisper",
                }
            ],
        )
    assert not tool_usage_current(lab)
    res = run_analysis(lab, "gaps", params={"min_support": 0, "min_trajectories": 0})
    assert res.params["counts"] == "steps" and "FROM steps" in res.sql
    assert "whisper" in res.table.column("tool").to_pylist()
    assert _as_dict(tool_usage_rows(lab))[("S3", "whisper")] == (1, 0, 0)  # computed, not the stale file
    import trajlab.analysis._materialize as mat

    monkeypatch.setattr(mat, "STALE_GRACE_S", -1.0)
    new = refresh_tool_usage(lab, progress=False)[0].path
    assert new != old and new.is_file() and not old.parent.exists()
    assert _as_dict(pq.read_table(new))[("S3", "whisper")] == (1, 0, 0)


def test_gaps_file_gives_the_same_table_from_either_count_source(builder):
    lab = _lab(builder)
    p0 = {"min_support": 0, "min_trajectories": 0}
    for by in ((), ("model",)):
        res = run_analysis(lab, "gaps", by=by, params=p0)  # nothing materialized yet: counted from steps
        assert res.params["counts"] == "steps" and "FROM steps WHERE kind = 'tool_call'" in res.sql
    refresh_tool_usage(lab, ["tool", "program"], progress=False)
    res = run_analysis(lab, "gaps", params=p0)
    assert res.params["counts"] == "tool_usage" and res.params["key"] == "tool"
    assert "FROM tool_usage WHERE key = 'tool'" in res.sql and "FROM steps" not in res.sql
    for by in ((), ("model",)):
        want = run_sql(lab, "gaps", by=by, params=p0, counts="steps")
        assert run_sql(lab, "gaps", by=by, params=p0, counts="tool_usage").equals(want)
    rows = {r["tool"]: r for r in res.table.to_pylist()}
    # successes S1, S2 (6 tool calls); failures F1 (3 calls), F2 (none); U1 unknown
    assert rows["python"]["calls_success"] == 2 and rows["python"]["calls_failure"] == 3
    assert rows["python"]["share_success"] == pytest.approx(2 / 6)
    assert rows["python"]["gap"] == pytest.approx(2 / 6 - 1)
    assert rows["python"]["usage_success"] == 1.0 and rows["python"]["usage_failure"] == 0.5
    assert rows["ffprobe"]["share_success"] == pytest.approx(2 / 6) and rows["ls"]["calls_success"] == 1
    # the program key is materialized too; tool_modality is not, so it is counted from steps
    prog = run_analysis(lab, "gaps", key="program", params=p0)
    assert prog.params["counts"] == "tool_usage" and prog.params["key"] == "program"
    want = run_sql(lab, "gaps", key="program", params=p0, counts="steps")
    assert prog.table.equals(want) and "mkdir" in want.column("tool").to_pylist()
    tm = run_analysis(lab, "gaps", key="tool_modality", params=p0)
    assert tm.params["counts"] == "steps" and tm.table.num_rows > 0
    # counts="steps" ignores the materialized table
    assert run_analysis(lab, "gaps", counts="steps").params["counts"] == "steps"


def test_gaps_api_gives_the_same_result_from_either_source(builder):
    lab = _lab(builder)
    kw = {"min_support": 0, "min_trajectories": 0, "n_boot": 200, "seed": 4, "progress": False}
    for key in ("tool", "tool_modality", "program"):
        for by in ((), ("model",)):
            steps = gaps(lab, by=by, key=key, counts="steps", **kw)
            usage = gaps(lab, by=by, key=key, counts="tool_usage", **kw)
            assert steps.params["counts"] == "steps" and usage.params["counts"] == "tool_usage"
            assert usage.table.equals(steps.table), (key, by)
            assert "FROM tool_usage" in usage.sql and "FROM steps" in steps.sql
    assert tool_usage_current(lab, "program")


def test_auto_materializes_only_big_labs(builder, monkeypatch):
    import trajlab.analysis._gaps as g

    lab = _lab(builder)
    res = gaps(lab, n_boot=0, progress=False)  # 13 calls: far below the threshold
    assert res.params["counts"] == "steps" and not (lab.root / "_cache").exists()
    monkeypatch.setattr(g, "AUTO_MATERIALIZE_CALLS", 10)
    res = gaps(lab, n_boot=0, progress=False)
    assert res.params["counts"] == "tool_usage" and tool_usage_current(lab)
    # already current: used as is, and counts="steps" never writes nor reads it
    assert gaps(lab, key="program", n_boot=0, progress=False, counts="steps").params["counts"] == "steps"
    assert not tool_usage_current(lab, "program")


def test_unwritable_lab_falls_back_to_steps(builder, monkeypatch):
    import trajlab.analysis._gaps as g
    import trajlab.analysis._materialize as mat

    lab = _lab(builder)

    def refuse(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(mat, "_write", refuse)
    monkeypatch.setattr(g, "AUTO_MATERIALIZE_CALLS", 1)
    res = gaps(lab, min_support=0, min_trajectories=0, n_boot=0, progress=False)
    assert res.params["counts"] == "steps"
    assert any("cannot materialize tool_usage" in n and "counted from steps" in n for n in res.notes)
    assert {r["tool"] for r in res.table.to_pylist()} == {"ffprobe", "ffmpeg", "python", "ls"}
    with pytest.raises(LabError, match="Permission denied"):
        gaps(lab, n_boot=0, progress=False, counts="tool_usage")
    with pytest.raises(LabError, match="cannot materialize"):
        refresh_tool_usage(lab, progress=False)


def test_the_view_reads_the_materialized_file(builder):
    lab = _lab(builder)
    assert (
        run_sql(lab, "SELECT sum(n_calls) AS n FROM tool_usage WHERE key = 'tool'").column("n")[0].as_py()
        == 10
    )
    path = refresh_tool_usage(lab, progress=False)[0].path
    # doctor the file: the view (and the gaps file) must now read it, which proves they use it
    t = pq.read_table(path)
    i = t.schema.get_field_index("n_calls")
    t = t.set_column(i, t.schema.field(i), pa.array(np.full(t.num_rows, 100)))  # same field and metadata
    pq.write_table(t, path)
    q = "SELECT sum(n_calls) AS n FROM tool_usage WHERE key = 'tool'"
    assert run_sql(lab, q).column("n")[0].as_py() == 700
    assert run_sql(lab, q.replace("'tool'", "'program'")).column("n")[0].as_py() == 11  # computed
    rows = {r["tool"]: r for r in run_sql(lab, "gaps").to_pylist()}
    assert rows["python"]["calls_success"] == 200


def test_bad_arguments(builder):
    lab = _lab(builder)
    with pytest.raises(ConfigError, match="counts must be one of auto, tool_usage, steps"):
        run_sql(lab, "gaps", counts="cache")
    with pytest.raises(ConfigError, match="counts must be one of"):
        run_sql(lab, "tools", counts="cache")
    with pytest.raises(ConfigError, match="counts must be one of"):
        gaps(lab, counts="fast", progress=False)
    with pytest.raises(ConfigError, match="tool_usage is not materialized for key 'tool'"):
        run_sql(lab, "gaps", counts="tool_usage")
    with pytest.raises(ConfigError, match="key must be one of"):
        refresh_tool_usage(lab, "argv", progress=False)
    with pytest.raises(ConfigError, match="key must be one of"):
        tool_usage_rows(lab, "x' OR 1=1 --")
    info = get_analysis("gaps")
    assert set(info.placeholders) == {"by", "partition_by", "tool_use"} and info.groupable
    assert info.params == {"min_support": 10, "min_trajectories": 5}


def test_lab_without_tool_calls_or_steps(builder, tmp_path):
    from trajlab.store import Lab

    empty = Lab.open(tmp_path / "empty", create=True)
    (f,) = refresh_tool_usage(empty, progress=False)
    assert f.rows == 0 and pq.read_table(f.path).num_rows == 0
    assert run_sql(empty, "gaps").num_rows == 0
    builder.traj("a", "success").traj("b", "failure")
    builder.step("a"), builder.step("b")
    lab = builder.build()
    assert refresh_tool_usage(lab, progress=False)[0].rows == 0
    assert gaps(lab, progress=False, counts="tool_usage").missing == ["no tool calls"]


def test_gaps_from_steps_count_first_uses_by_tool_seq(builder, tmp_path):
    """With steps.tool_seq (schema v2) the gap query counts one row per call and first uses by
    `tool_seq = 1`; a lab written before it (tool_seq null), and a lab mixing both kinds of parts, give
    the same tables."""
    p0 = {"min_support": 0, "min_trajectories": 0}
    new = _lab(builder)
    v1 = _lab(LabBuilder(tmp_path / "v1"), tool_seq=False)
    mixed = _lab(LabBuilder(tmp_path / "mixed"))
    res = run_analysis(new, "gaps", params=p0, counts="steps")
    assert "WHERE tool_seq > 0" in res.sql and "tool_seq IS NULL" in res.sql
    seqs = run_sql(new, "SELECT tool, tool_seq FROM steps WHERE trajectory_id = 'S1' ORDER BY step_index")
    assert [(r["tool"], r["tool_seq"]) for r in seqs.to_pylist()] == [
        ("ffprobe", 1), ("ffmpeg", 1), ("python", 1), (None, 0), ("ffprobe", 2)
    ]  # fmt: skip
    assert run_sql(v1, "SELECT count(tool_seq) AS n FROM steps").to_pylist() == [{"n": 0}]
    # the mixed lab gets a second, v1-style part (tool_seq null): F3, a failure using ffprobe twice
    extra = LabBuilder(tmp_path / "unused").traj("F3", "failure", model="m2")
    extra.shell("F3", FFPROBE), extra.shell("F3", FFPROBE), extra.shell("F3", ARITH)
    with mixed.write("v1-style part") as txn:
        txn.append("trajectories", extra.trajectories)
        txn.append("steps", extra.steps)
    assert len(mixed.files("steps")) == 2
    for key in ("tool", "tool_modality", "program"):
        for by in ((), ("model",)):
            want = run_sql(new, "gaps", by=by, key=key, params=p0, counts="steps")
            assert run_sql(v1, "gaps", by=by, key=key, params=p0, counts="steps").equals(want), (key, by)
            got = run_sql(mixed, "gaps", by=by, key=key, params=p0, counts="steps")
            refresh_tool_usage(mixed, key, progress=False)
            assert got.equals(run_sql(mixed, "gaps", by=by, key=key, params=p0, counts="tool_usage"))
    rows = {r["tool"]: r for r in run_sql(mixed, "gaps", params=p0, counts="steps").to_pylist()}
    assert rows["ffprobe"]["calls_failure"] == 2 and rows["ffprobe"]["traj_using_failure"] == 1
    assert rows["python"]["calls_failure"] == 4 and rows["python"]["traj_using_failure"] == 2


def test_a_program_the_shell_did_not_find_is_no_use_of_it(tmp_path):
    """`whisper: command not found` ran no whisper: the gap tables of every source and key leave the call
    out, so a missing tool does not look like a tool that failed runs use (the demo's planted
    "whisper not installed" failures had made 13 whisper calls in failed runs)."""
    p0 = {"min_support": 0, "min_trajectories": 0}
    b = LabBuilder(tmp_path / "lab").traj("S1", "success").traj("F1", "failure")
    missing = {"exit_code": 127, "output": "bash: line 1: whisper: command not found"}
    b.call("S1", "whisper", error=True, **missing)
    b.shell("S1", "pip install -q openai-whisper")
    b.call("S1", "whisper", output="[00:00.000 --> 00:04.000] 120 thousand")
    b.call("F1", "whisper", error=True, **missing)
    b.call("F1", "whisper", error=True, exit_code=1, output="RuntimeError: ffmpeg was not found")  # ran
    b.call("F1", "python", error=True, **missing)  # another program's message is no proof
    lab = b.build()
    seqs = run_sql(lab, "SELECT trajectory_id, tool, tool_seq FROM steps ORDER BY ALL").to_pylist()
    assert [(r["trajectory_id"], r["tool"], r["tool_seq"]) for r in seqs] == [
        ("F1", "python", 1), ("F1", "whisper", 0), ("F1", "whisper", 1),
        ("S1", "pip", 1), ("S1", "whisper", 0), ("S1", "whisper", 1),
    ]  # fmt: skip
    for key in ("tool", "program"):
        want = None
        for counts in ("steps", "tool_usage"):
            if counts == "tool_usage":
                refresh_tool_usage(lab, key, progress=False)
            got = run_sql(lab, "gaps", key=key, params=p0, counts=counts)
            rows = {r["tool"]: r for r in got.to_pylist()}
            w = rows["whisper"]
            assert (w["calls_success"], w["calls_failure"]) == (1, 1), (key, counts)
            assert (w["traj_using_success"], w["traj_using_failure"]) == (1, 1), (key, counts)
            assert rows["python"]["calls_failure"] == 1
            want = want or got
            assert got.equals(want)
    # the overview of calls still shows every attempt, with its error
    tools = {r["tool"]: r for r in run_sql(lab, "tools").to_pylist()}
    assert tools["whisper"]["n_calls"] == 4
