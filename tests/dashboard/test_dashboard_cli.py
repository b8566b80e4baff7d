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
