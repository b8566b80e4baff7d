"""build_lab / load_dag over a real lab: incremental builds, rebuilds, streaming, stale rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest
from dagfix import Run, add_to_lab
from test_omni import audio_run, video_run

from trajlab.dag import DAG_VERSION, build_dag, build_lab, load_dag, resolve_trajectory_id
from trajlab.errors import LabError
from trajlab.store import Lab


def _runs() -> list[Run]:
    a = audio_run()
    a.trajectory["trajectory_id"] = "t_audio"
    for s in a.steps:
        s["trajectory_id"] = "t_audio"
    v = video_run()
    v.trajectory["trajectory_id"] = "t_video"
    for s in v.steps:
        s["trajectory_id"] = "t_video"
    return [a, v]


@pytest.fixture()
def lab(tmp_path: Path) -> Lab:
    lab = Lab.create(tmp_path / "lab")
    add_to_lab(lab, _runs())
    return lab


def test_build_store_and_load(lab: Lab) -> None:
    rep = build_lab(lab, progress=False)
    assert (rep.built, rep.up_to_date, rep.removed, rep.failed) == (2, 0, 0, [])
    assert rep.steps == 14 and rep.nodes == 14
    assert lab.rows("dag_nodes") == 14 and lab.rows("dag_metrics") == 2
    assert lab.rows("dag_edges") == rep.edges
    d = load_dag(lab, "t_audio")
    assert d.metrics["dag_version"] == DAG_VERSION
    assert d.metrics["answer_step"] == 5 and d.metrics["branches"] == ["audio#1"]
    assert [c["step_index"] for c in d.candidates][:1] == [4]
    e = [x for x in d.edges if (x["src"], x["dst"], x["type"]) == (2, 3, "data")]
    assert e and e[0]["rule"] == "whisper-output"
    # the stored DAG equals a fresh in-memory build (nodes and edges)
    steps = lab.read_trajectory_steps("t_audio").to_pylist()
    mem = build_dag(
        lab.read("trajectories", filter=pc.field("trajectory_id") == "t_audio").to_pylist()[0], steps
    )
    assert [(x["src"], x["dst"], x["type"], x["rule"]) for x in d.edges] == [
        (x["src"], x["dst"], x["type"], x["rule"]) for x in mem.edges
    ]
    assert [{k: n[k] for k in ("node_id", "status", "branch", "on_answer_path")} for n in d.nodes] == [
        {k: n[k] for k in ("node_id", "status", "branch", "on_answer_path")} for n in mem.nodes
    ]


def test_incremental_rebuild_and_stale_rows(lab: Lab) -> None:
    build_lab(lab, progress=False)
    gen = lab.refresh().generation
    again = build_lab(lab, progress=False)
    assert (again.built, again.up_to_date) == (0, 2)
    assert lab.refresh().generation == gen  # nothing to do: no new generation
    one = build_lab(lab, ["t_video"], rebuild=True, progress=False)
    assert (one.built, one.up_to_date) == (1, 0)
    assert lab.rows("dag_metrics") == 2 and lab.rows("dag_nodes") == 14  # old rows replaced, not duplicated
    with lab.write("drop") as txn:
        txn.delete("trajectories", "trajectory_id", ["t_video"])
        txn.delete("steps", "trajectory_id", ["t_video"])
    gone = build_lab(lab, progress=False)
    assert (gone.built, gone.removed) == (0, 1)
    assert lab.rows("dag_metrics") == 1 and lab.rows("dag_nodes") == 6
    with pytest.raises(LabError, match="no trajectory t_nope"):
        build_lab(lab, ["t_nope"], progress=False)


def test_reingested_trajectory_is_rebuilt(lab: Lab) -> None:
    build_lab(lab, progress=False)
    r = _runs()[0]
    r.say("Extra note.")
    with lab.write("reingest") as txn:
        txn.delete("trajectories", "trajectory_id", ["t_audio"])
        txn.delete("steps", "trajectory_id", ["t_audio"])
    add_to_lab(lab, [r])
    rep = build_lab(lab, progress=False)
    assert (rep.built, rep.up_to_date) == (1, 1)
    assert load_dag(lab, "t_audio").metrics["n_nodes"] == 7


def test_interleaved_steps_and_empty_trajectory(tmp_path: Path) -> None:
    lab = Lab.create(tmp_path / "lab")
    a, v = _runs()
    empty = Run(tid="t_empty")
    add_to_lab(lab, [a, v, empty])
    # Interleave the two trajectories' steps in one more part, to exercise grouping by expected counts.
    rows = lab.read("steps").to_pylist()
    rows.sort(key=lambda s: (s["step_index"], s["trajectory_id"]))
    with lab.write("shuffle") as txn:
        txn.clear("steps")
        txn.append("steps", rows)
    rep = build_lab(lab, progress=False, batch_size=3)
    assert rep.built == 3 and rep.failed == []
    assert load_dag(lab, "t_video").metrics["answer_step"] == 7
    assert load_dag(lab, "t_empty").metrics["n_nodes"] == 0


def test_load_without_stored_dag_builds_in_memory(lab: Lab) -> None:
    d = load_dag(lab, "t_vid")  # unique prefix
    assert d.trajectory_id == "t_video" and d.metrics["n_nodes"] == 8
    assert lab.rows("dag_metrics") == 0  # reading never writes
    assert resolve_trajectory_id(lab, "t_audio") == "t_audio"
    with pytest.raises(LabError, match="ambiguous"):
        resolve_trajectory_id(lab, "t_")
