"""`trajlab dag` commands: default build, show, export, and errors as one-line messages."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from dagfix import Run, add_to_lab
from test_omni import audio_run

from trajlab.cli import cli
from trajlab.store import Lab


def _lab(tmp_path: Path) -> str:
    lab = Lab.create(tmp_path / "lab")
    add_to_lab(lab, [audio_run()])
    return str(lab.root)


def test_dag_lab_builds_by_default(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    res = CliRunner().invoke(cli, ["dag", lab, "-q"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("built 1 DAGs from 6 steps")
    res2 = CliRunner().invoke(cli, ["dag", "build", lab, "-q"])
    assert "built 0 DAGs" in res2.output and "1 up to date" in res2.output
    res3 = CliRunner().invoke(cli, ["dag", "build", lab, "--rebuild", "-q", "--traj", "t_fixture"])
    assert "built 1 DAGs" in res3.output
    res4 = CliRunner().invoke(cli, ["dag", "build", lab, "--rebuild", "-q", "--traj", "t_fix"])  # a prefix
    assert "built 1 DAGs" in res4.output


def test_show_and_export(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    CliRunner().invoke(cli, ["dag", lab, "-q"])
    show = CliRunner().invoke(cli, ["dag", "show", lab, "t_fix", "--max-output", "30"])
    assert show.exit_code == 0 and "trajectory t_fixture: 6 steps" in show.output and "=> 515" in show.output
    out = tmp_path / "d.json"
    exp = CliRunner().invoke(cli, ["dag", "export", lab, "t_fixture", "--format", "json", "--out", str(out)])
    assert exp.exit_code == 0 and json.loads(out.read_text())["metrics"]["answer_step"] == 5
    dot = CliRunner().invoke(cli, ["dag", "export", lab, "t_fixture", "--format", "dot"])
    assert dot.output.startswith('digraph "t_fixture"')


def test_errors_are_messages(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    res = CliRunner().invoke(cli, ["dag", "show", lab, "t_nope"])
    assert res.exit_code == 1 and "Error: no trajectory 't_nope'" in res.output
    res = CliRunner().invoke(cli, ["dag", str(tmp_path / "missing")])
    assert res.exit_code == 1 and "no such lab" in res.output
    res = CliRunner().invoke(cli, ["dag", "export", lab, "t_fixture", "--format", "svg"])
    assert res.exit_code == 2 and "Invalid value for '--format'" in res.output


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    empty = Lab.create(tmp_path / "empty")
    res = CliRunner().invoke(cli, ["dag", str(empty.root)])
    assert res.exit_code == 1
    assert res.output == (
        f"Error: no trajectories in {empty.root}: nothing to build "
        f"(ingest runs first: `trajlab ingest PATH --out {empty.root}`)\n"
    )
    res = CliRunner().invoke(cli, ["dag", "build", lab, "--traj", "t_zzz"])
    assert res.exit_code == 1 and res.output.startswith("Error: no trajectory t_zzz in ")
    blocker = tmp_path / "plain.txt"
    blocker.write_text("x")
    res = CliRunner().invoke(cli, ["dag", "export", lab, "t_fixture", "--out", str(blocker / "d.json")])
    assert res.exit_code == 1
    assert res.output == f"Error: cannot write {blocker / 'd.json'}: {blocker} is not a directory\n"
    res = CliRunner().invoke(cli, ["dag", "export", lab, "t_fixture", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "is a directory" in res.output


def test_trajectory_without_steps(tmp_path: Path) -> None:
    lab = Lab.create(tmp_path / "lab")
    add_to_lab(lab, [Run(tid="t_empty")])
    res = CliRunner().invoke(cli, ["dag", str(lab.root), "-q"])
    assert res.exit_code == 0 and "built 1 DAGs from 0 steps" in res.output
    assert "1 trajectories with anomalies: trajectory has no steps x1" in res.output
    show = CliRunner().invoke(cli, ["dag", "show", str(lab.root), "t_empty"])
    assert show.exit_code == 0
    assert show.output.splitlines()[0].startswith("trajectory t_empty: 0 steps, 0 edges")
    assert "anomaly: trajectory has no steps" in show.output


def test_ctrl_c_says_what_was_kept_and_exits_130(tmp_path: Path, monkeypatch) -> None:
    from dagfix import interrupt_build_at

    import trajlab.dag._store as dag_store

    lab = Lab.create(tmp_path / "lab")
    for k in range(4):
        r = audio_run()
        tid = f"t_ctrl_{k}"
        r.trajectory["trajectory_id"] = tid
        for s in r.steps:
            s["trajectory_id"] = tid
        add_to_lab(lab, [r])  # a part file each: a transaction never splits a row group
    undo = interrupt_build_at(monkeypatch, 3)
    monkeypatch.setattr(dag_store, "COMMIT_EVERY_STEPS", 1)  # a transaction per trajectory
    res = CliRunner().invoke(cli, ["dag", str(lab.root), "-q"])
    assert res.exit_code == 130, res.output
    assert "interrupted: the 2 DAGs of 2 committed transactions are kept" in res.output
    assert "Traceback" not in res.output
    assert lab.refresh().rows("dag_metrics") == 2
    undo()
    again = CliRunner().invoke(cli, ["dag", str(lab.root), "-q"])
    assert again.exit_code == 0, again.output
    assert "built 2 DAGs" in again.output and "2 up to date" in again.output


def test_build_traj_prefix_of_several_trajectories_says_ambiguous(tmp_path: Path) -> None:
    lab = Lab.create(tmp_path / "lab")
    add_to_lab(lab, [Run(tid="t_abc1"), Run(tid="t_abc2")])
    res = CliRunner().invoke(cli, ["dag", "build", str(lab.root), "--traj", "t_abc", "-q"])
    assert res.exit_code == 1
    assert res.output == "Error: 't_abc' is ambiguous: t_abc1, t_abc2\n"  # as `dag show` says
    show = CliRunner().invoke(cli, ["dag", "show", str(lab.root), "t_abc"])
    assert show.exit_code == 1 and show.output == res.output


def test_workers_option_sets_the_pool_size(tmp_path: Path, monkeypatch) -> None:
    """`-j N` like `trajlab ingest -j N`: the command had no way to choose the worker count."""
    import trajlab.dag._store as dag_store

    lab = _lab(tmp_path)
    seen: list[int] = []
    real = dag_store.task_pool

    def recording(n_workers: int, n_tasks: int):
        seen.append(n_workers)
        return real(n_workers, n_tasks)

    monkeypatch.setattr(dag_store, "POOL_MIN_STEPS", 0)
    monkeypatch.setattr(dag_store, "task_pool", recording)
    res = CliRunner().invoke(cli, ["dag", lab, "-q", "-j", "2"])
    assert res.exit_code == 0, res.output
    assert seen == [2] and "built 1 DAGs" in res.output
    res = CliRunner().invoke(cli, ["dag", "build", lab, "-q", "--rebuild", "--workers", "1"])
    assert res.exit_code == 0 and seen == [2, 1], res.output  # 1: task_pool runs the tasks in-process
    res = CliRunner().invoke(cli, ["dag", lab, "-j", "0"])
    assert res.exit_code == 2 and "-j" in res.output
