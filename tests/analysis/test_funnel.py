from __future__ import annotations

import pytest

from trajlab.analysis import error_recovery, step_funnel


def _lab(b):
    b.traj("t1", "success", model="A")
    b.step("t1", "user")
    b.call("t1", "ls", command="ls")
    b.call("t1", "python", error=True, command="python a.py")  # step 2 of 5: position 0.4
    b.call("t1", "python", command="python a.py")  # recovers: same tool, same command
    b.step("t1")
    b.traj("t2", "failure", model="A")
    b.call("t2", "curl", error=True, command="curl x")  # step 0 of 4: position 0
    b.call("t2", "curl", error=True, command="curl x")
    b.call("t2", "curl", command="curl y")  # recovers both by tool, neither by command
    b.step("t2")
    b.traj("t3", "failure", model="B")
    for _ in range(8):
        b.step("t3")
    b.call("t3", "python", command="python b.py")
    b.call("t3", "python", timed_out=True, command="python b.py")  # step 9 of 10, never recovered
    b.traj("t4", "success", model="B")
    b.call("t4", "ls", command="ls")
    return b.build()


def test_first_error_positions(builder):
    lab = _lab(builder)
    res = step_funnel(lab)
    assert res.missing == []
    rows = res.table.to_pylist()
    assert [r["bin"] for r in rows] == list(range(10))
    assert [r["first_errors"] for r in rows] == [1, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    assert rows[0]["first_errors_failure"] == 1 and rows[4]["first_errors_success"] == 1
    assert rows[4]["pos_from"] == pytest.approx(0.4) and rows[4]["pos_to"] == pytest.approx(0.5)
    assert rows[0]["share_of_errored"] == pytest.approx(1 / 3)
    assert [round(r["cum_share"], 4) for r in rows] == [0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0.5, 0.5, 0.5, 0.75]
    assert {(r["n_traj"], r["n_errored"]) for r in rows} == {(4, 3)}
    five = step_funnel(lab, bins=5, by="model").table.to_pylist()
    assert [(r["model"], r["bin"], r["first_errors"]) for r in five if r["first_errors"]] == [
        ("A", 0, 1),
        ("A", 2, 1),
        ("B", 4, 1),
    ]


def test_recovery_per_tool(builder):
    lab = _lab(builder)
    res = step_funnel(lab).extras["recovery"]
    rows = {r["tool"]: r for r in res.table.to_pylist()}
    assert set(rows) == {"python", "curl"}  # ls never failed
    py, curl = rows["python"], rows["curl"]
    assert (py["n_calls"], py["n_errors"], py["recovered_same_tool"]) == (4, 2, 1)
    assert py["recovery_rate"] == 0.5 and py["same_command_rate"] == 0.5
    assert py["median_steps_to_recovery"] == 1 and py["traj_with_errors"] == 2
    assert (curl["n_errors"], curl["recovered_same_tool"], curl["recovered_same_command"]) == (2, 2, 0)
    assert curl["recovery_rate"] == 1.0 and curl["same_command_rate"] == 0.0
    assert curl["median_steps_to_recovery"] == 1.5
    assert curl["error_rate"] == pytest.approx(2 / 3)
    by_model = error_recovery(lab, by="model").table.to_pylist()
    assert [(r["model"], r["tool"], r["n_errors"]) for r in by_model] == [
        ("A", "curl", 2),
        ("A", "python", 1),
        ("B", "python", 1),
    ]


def test_no_errors_and_bad_bins(builder):
    builder.traj("a", "success")
    builder.call("a", "ls")
    lab = builder.build()
    res = step_funnel(lab)
    assert res.missing == ["no tool errors"]
    assert res.num_rows == 10 and all(r["first_errors"] == 0 for r in res.table.to_pylist())
    assert res.extras["recovery"].missing == ["no tool errors"]
    assert res.extras["recovery"].num_rows == 0
    from trajlab.errors import ConfigError

    with pytest.raises(ConfigError, match="bins"):
        step_funnel(lab, bins=0)
