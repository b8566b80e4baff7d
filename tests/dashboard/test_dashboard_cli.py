"""`trajlab dash`: --check validates the lab and the pages; bad input gets one clear line; localhost by default."""

from __future__ import annotations

from click.testing import CliRunner
from dash_labs import runs_lab

from trajlab.cli import cli
from trajlab.dashboard import DEFAULT_HOST, DashboardServer, create_app, is_loopback


def test_check_lists_pages_and_counts(tmp_path):
    runs_lab(tmp_path / "lab", 12)
    res = CliRunner().invoke(
        cli, ["dash", str(tmp_path / "lab"), "--check", "--annotations", str(tmp_path / "a")]
    )
    assert res.exit_code == 0, res.output
    assert "12 trajectories" in res.output
    assert (
        "Runs (/)" in res.output
        and "Agreement (/agreement)" in res.output
        and "Tool gaps (/analysis/tool-gaps)" in res.output
    )


def test_bad_page_and_missing_lab(tmp_path):
    runs_lab(tmp_path / "lab", 3)
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "mine.yaml").write_text(
        "id: mine\ntitle: Mine\npath: /mine\npanels:\n  - kind: sql\n    sql: DROP TABLE steps\n"
    )
    res = CliRunner().invoke(cli, ["dash", str(tmp_path / "lab"), "--check", "--dashboards", str(pages)])
    assert res.exit_code == 1
    assert (
        f"Error: {pages / 'mine.yaml'}:6: panels[0].sql: only SELECT queries are allowed (got a DROP statement)"
        in res.output
    )
    assert "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["dash", str(tmp_path / "nolab"), "--check"])
    assert res.exit_code == 1 and "no such lab" in res.output


def test_loopback_default_and_port_zero(tmp_path):
    assert DEFAULT_HOST == "127.0.0.1"
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    app = create_app(runs_lab(tmp_path / "lab", 3), annotations=tmp_path / "a")
    srv = DashboardServer(app, port=0)
    try:
        assert srv.host == "127.0.0.1" and srv.port > 0
        assert srv.url == f"http://127.0.0.1:{srv.port}/"
    finally:
        srv._srv.server_close()


def test_check_renders_every_panel_and_names_the_broken_one(tmp_path):
    from dash_labs import long_run

    from trajlab.dag import build_lab

    lab = runs_lab(tmp_path / "lab", 12)
    traj, rows = long_run("t_check_long", 240, n_subagents=1, seed=3)
    traj["outcome"] = "failure"
    with lab.write("fixture") as txn:
        txn.append("trajectories", [traj])
        txn.append("steps", rows)
    build_lab(tmp_path / "lab", trajectory_ids=["t_check_long"], progress=False, workers=1)
    args = ["dash", str(tmp_path / "lab"), "--check", "--annotations", str(tmp_path / "a")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "ok    / panel 0 (runs): 13 runs" in res.output
    assert "ok    /trajectory/t_check_long: step DAG of 240 steps" in res.output
    assert "ERROR" not in res.output and "panels rendered" in res.output

    # a page that parses but names a column the lab does not have: only rendering can tell
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "mine.yaml").write_text(
        "id: mine\ntitle: Mine\npath: /mine\npanels:\n"
        "  - kind: sql\n    sql: SELECT no_such_column FROM runs\n"
        "  - kind: sql\n    display: bar\n    x: model\n    y: runs\n"
        "    sql: SELECT model, count(*) AS n FROM runs GROUP BY model\n"
    )
    res = CliRunner().invoke(cli, [*args, "--dashboards", str(pages)])
    assert res.exit_code == 1
    assert "! ERROR /mine panel 0 (sql):" in res.output and "no_such_column" in res.output
    assert (
        "! ERROR /mine panel 1 (sql): columns ['runs'] are not in the query result (model, n)" in res.output
    )
    assert "Error: 2 of " in res.output and "Traceback" not in res.output


def test_reviewers_per_item_below_one_is_refused_up_front(tmp_path):
    """`--reviewers 0` would start a dashboard whose every save and queue fails; refuse it at start."""
    runs_lab(tmp_path / "lab", 3)
    for n in ("0", "-2"):
        res = CliRunner().invoke(
            cli,
            [
                "dash",
                str(tmp_path / "lab"),
                "--check",
                "--annotations",
                str(tmp_path / "a"),
                "--reviewers",
                n,
            ],
        )
        assert res.exit_code != 0, res.output
        assert f"Error: --reviewers (reviewers per item) must be at least 1 (got {n})" in res.output
        assert "Traceback" not in res.output


def test_dash_serves_on_loopback_unless_told_and_warns_when_told(tmp_path, monkeypatch):
    """`trajlab dash LAB` (no --host) listens on 127.0.0.1 only; another interface is bound as asked,
    with a warning on stderr that the lab and reviews are open to the network."""
    import trajlab.dashboard as dashboard

    lab = str(runs_lab(tmp_path / "lab", 3).root)
    bound: list[tuple[str, int]] = []

    def serve_forever(self):
        bound.append(self._srv.socket.getsockname()[:2])
        self._srv.server_close()
        raise KeyboardInterrupt  # Ctrl-C at once

    monkeypatch.setattr(dashboard.DashboardServer, "serve_forever", serve_forever)
    res = CliRunner().invoke(cli, ["dash", lab, "--port", "0", "--annotations", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert len(bound) == 1 and bound[0][0] == "127.0.0.1"
    assert f"dashboard at http://127.0.0.1:{bound[0][1]}/" in res.stdout and "stopped" in res.stdout
    assert "warning" not in res.stderr

    hosts: list[str] = []

    class Unbound:  # records the host instead of opening a socket on every interface
        def __init__(self, app, host, port):
            hosts.append(host)
            self.url = f"http://{host}:{port}/"

        def serve_forever(self):
            raise KeyboardInterrupt

    monkeypatch.setattr(dashboard, "DashboardServer", Unbound)
    res = CliRunner().invoke(cli, ["dash", lab, "--host", "0.0.0.0", "--annotations", str(tmp_path / "a")])
    assert res.exit_code == 0 and hosts == ["0.0.0.0"], res.output
    assert res.stderr.startswith("warning: binding 0.0.0.0: anyone who can reach this machine"), res.stderr
    res = CliRunner().invoke(cli, ["dash", lab, "--host", "::1", "--annotations", str(tmp_path / "a")])
    assert res.exit_code == 0 and hosts[-1] == "::1" and "warning" not in res.stderr
