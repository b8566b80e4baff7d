"""dashboards/*.yaml: the shipped pages load, a user's page is added, and every mistake names file, line, field."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajlab.dashboard import FigurePanel, RunsPanel, SqlPanel, check_sql, load_dashboards, load_file
from trajlab.errors import ConfigError, InputFileError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "dashboard" / "pages"
SHIPPED = Path(__file__).resolve().parents[2] / "dashboards"


def test_shipped_pages():
    spec = load_dashboards()
    assert [p.id for p in spec.pages] == [
        "runs",
        "failures",
        "queue",
        "agreement",
        "tool-gaps",
        "capability",
        "tokens",
        "media",
        "failure-distribution",
        "models",
    ]
    assert spec.by_path("/").id == "runs"
    assert isinstance(spec.page("runs").panels[0], RunsPanel)
    figures = {p.figure for page in spec.pages for p in page.panels if isinstance(p, FigurePanel)}
    assert figures == {
        "tool_gaps",
        "capability_usage",
        "accuracy_tokens_pareto",
        "failure_distribution",
        "agreement_confusion",
        "media_tokens",
    }
    assert all(p.source.startswith(str(SHIPPED)) for p in spec.pages)


def test_user_page_is_added_and_can_override(tmp_path):
    spec = load_dashboards([FIX])
    page = spec.by_path("/custom/tool-errors")
    assert page is not None and page.id == "tool-errors"
    assert [type(p) for p in page.panels][:2] == [SqlPanel, SqlPanel]
    assert [f.id for f in page.filters] == ["runner"]
    (tmp_path / "runs.yaml").write_text(
        "id: runs\ntitle: My runs\npath: /\npanels:\n  - kind: runs\n    columns: [trajectory_id, model]\n"
    )
    spec = load_dashboards([tmp_path])
    assert spec.page("runs").title == "My runs"
    assert spec.page("runs").panels[0].columns == ["trajectory_id", "model"]
    only = load_dashboards([tmp_path], include_defaults=False)
    assert [p.id for p in only.pages] == ["runs"]


BAD = {
    "kind": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: sql\n    sql: SELECT 1\n  - kind: pie\n",
        7,
        "panels[1].kind: unknown panel kind 'pie'",
    ),
    "figure": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: figure\n    figure: tool_gapz\n",
        5,
        "panels[0]: unknown figure 'tool_gapz'",
    ),
    "figure-option": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: figure\n    figure: tool_gaps\n    options: {colour: red}\n",
        5,
        "figure 'tool_gaps' has no option(s) colour",
    ),
    "write-sql": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: sql\n    sql: DELETE FROM trajectories\n",
        6,
        "panels[0].sql: only SELECT queries are allowed (got a DELETE statement)",
    ),
    "two-statements": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: sql\n    sql: SELECT 1; SELECT 2\n",
        6,
        "panels[0].sql: give exactly one SQL statement (got 2)",
    ),
    "syntax": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: sql\n    sql: SELEC 1\n",
        6,
        "panels[0].sql: SQL does not parse",
    ),
    "param": (
        "id: p\ntitle: P\npath: /p\nfilters:\n  - id: model\n    options_from: model\n"
        "panels:\n  - kind: sql\n    sql: SELECT * FROM runs WHERE model = $modle\n",
        9,
        "panels[0].sql: parameter(s) $modle are not filters of this page (declared: model)",
    ),
    "runs-filter": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: runs\n    filters: [model, colour]\n",
        6,
        "panels[0].filters: unknown filter(s) colour",
    ),
    "missing": (
        "id: p\npath: /p\npanels:\n  - kind: markdown\n    text: hi\n",
        1,
        "title: required field is missing",
    ),
    "extra": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: sql\n    sql: SELECT 1\n    colour: red\n",
        7,
        "panels[0].colour: unknown field",
    ),
    "chart-axes": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: sql\n    display: bar\n    sql: SELECT 1 AS a\n",
        5,
        "display 'bar' needs x and y",
    ),
    "reserved": (
        "id: p\ntitle: P\npath: /trajectory/x\npanels:\n  - kind: markdown\n    text: hi\n",
        3,
        "path: '/trajectory/x' is reserved",
    ),
    "filter-source": (
        "id: p\ntitle: P\npath: /p\nfilters:\n  - id: m\n    options: [a]\n    options_from: model\n"
        "panels:\n  - kind: markdown\n    text: hi\n",
        5,
        "filters[0]: give exactly one of options, options_from, options_sql",
    ),
    "yaml": ("id: p\ntitle: [unclosed\npath: /p\n", 3, "not valid YAML"),
    "empty": ("", None, "empty file"),
    "two-runs": (
        "id: p\ntitle: P\npath: /p\npanels:\n  - kind: runs\n  - kind: runs\n",
        4,
        "panels: a page can hold at most one runs panel",
    ),
    "list": ("- a\n- b\n", 1, "a page must be a mapping"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_page_names_file_line_and_field(tmp_path, name):
    text, line, expected = BAD[name]
    f = tmp_path / f"{name}.yaml"
    f.write_text(text)
    with pytest.raises(InputFileError) as e:
        load_file(f)
    msg = str(e.value)
    assert msg.startswith(str(f) + (f":{line}: " if line is not None else ": ")), msg
    assert expected in msg, msg
    assert e.value.line == line


def test_pages_file_and_duplicate_paths(tmp_path):
    (tmp_path / "a.yaml").write_text(
        "pages:\n  - id: one\n    title: One\n    path: /x\n    panels: [{kind: markdown, text: a}]\n"
        "  - id: two\n    title: Two\n    path: /y\n    panels: [{kind: markdown, text: b}]\n"
    )
    assert [p.id for p in load_file(tmp_path / "a.yaml")] == ["one", "two"]
    (tmp_path / "b.yaml").write_text(
        "id: three\ntitle: Three\npath: /x\npanels: [{kind: markdown, text: c}]\n"
    )
    with pytest.raises(
        InputFileError, match=r"b\.yaml: path '/x' of page 'three' is already used by page 'one'"
    ):
        load_dashboards([tmp_path], include_defaults=False)
    with pytest.raises(ConfigError, match="no such dashboards folder"):
        load_dashboards([tmp_path / "missing"])
    (tmp_path / "c.yaml").write_text(
        "pages:\n  - id: bad id\n    title: T\n    path: /z\n    panels: [{kind: markdown, text: c}]\n"
    )
    with pytest.raises(InputFileError, match=r"c\.yaml:2: pages\[0\]\.id: use 1-64 lowercase"):
        load_file(tmp_path / "c.yaml")


def test_check_sql_params():
    assert check_sql("SELECT * FROM runs WHERE model = $model AND ($b IS NULL OR benchmark = $b)") == [
        "b",
        "model",
    ]
    with pytest.raises(ValueError, match="only SELECT"):
        check_sql("COPY trajectories TO '/tmp/x.csv'")
    with pytest.raises(ValueError, match="only SELECT"):
        check_sql("ATTACH '/tmp/x.db' AS x")


def test_shipped_pages_are_the_repository_dashboards_folder():
    """In a checkout the package's pages folder is the `dashboards/` users edit, and the wheel ships it."""
    from trajlab.dashboard._spec import PAGES_DIR

    assert PAGES_DIR.resolve() == SHIPPED.resolve()
    pyproject = (SHIPPED.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert '"dashboard/pages/*.yaml"' in pyproject


def test_an_installed_copy_finds_its_pages_outside_the_repository(tmp_path):
    """A wheel install has no `dashboards/` beside the package (`trajlab demo` failed at its dashboard step)."""
    from installed_copy import run_in_installed_copy

    (n,) = run_in_installed_copy(
        tmp_path, "import trajlab.dashboard as d; print(len(d.load_dashboards().pages))"
    )
    assert int(n) == len(list(SHIPPED.glob("*.yaml")))
