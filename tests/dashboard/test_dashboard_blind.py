"""Blind review hides the judges' labels from every panel: figures, analyses and SQL, not only the form.

The per-run judge columns were already hidden; these tests cover the aggregates that still showed them
(the failure distribution built from judge labels, the judge-vs-reference confusion figure, SQL panels
reading `judge_labels`) and the lab view (`Lab.hiding`) that hides them.
"""

from __future__ import annotations

import json

import plotly.utils
import pytest
from dash_labs import runs_lab

from trajlab.analysis import failure_distribution, run_sql
from trajlab.dashboard import create_app
from trajlab.dashboard._panels import figure_body, page_layout, sql_body
from trajlab.dashboard._source import BLIND_NOTE
from trajlab.dashboard._spec import FigurePanel, SqlPanel
from trajlab.errors import LabError
from trajlab.store import fetch_arrow, run_readonly

N = 20
N_JUDGED = sum(1 for i in range(N) if i % 5 in (0, 1))  # runs_rows: failures get a judge label


def _text(component) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return runs_lab(tmp_path_factory.mktemp("blind") / "lab", N)


@pytest.fixture(scope="module")
def apps(lab, tmp_path_factory):
    ann = tmp_path_factory.mktemp("ann")
    return {
        "blind": create_app(lab, annotations=ann, blind=True).trajlab,
        "open": create_app(lab, annotations=ann).trajlab,
    }


def _figure_panel(ctx, page_id: str) -> tuple[int, FigurePanel]:
    page = ctx.spec.page(page_id)
    return next((i, p) for i, p in enumerate(page.panels) if isinstance(p, FigurePanel))


def test_hiding_lab_reads_the_hidden_tables_as_empty(lab):
    view = lab.hiding(["judge_labels", "predicted_labels"])
    assert lab.rows("judge_labels") == N_JUDGED and lab.has("judge_labels")
    assert view.rows("judge_labels") == 0 and not view.has("judge_labels")
    assert "judge_labels" not in view.tables() and "steps" in view.tables()
    empty = view.read("judge_labels")
    assert empty.num_rows == 0 and empty.schema.equals(lab.read("judge_labels").schema)
    con = view.connect()
    assert con.execute("SELECT count(*) FROM judge_labels").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM trajectories").fetchone() == (N,)
    # refresh re-reads the manifest and keeps the tables hidden; the real lab is untouched
    assert view.refresh().rows("judge_labels") == 0 and lab.rows("judge_labels") == N_JUDGED
    assert view.hidden == frozenset({"judge_labels", "predicted_labels"}) and lab.hidden == frozenset()


def test_hiding_lab_cannot_write_and_names_unknown_tables(lab):
    view = lab.hiding(["judge_labels"])
    with pytest.raises(LabError, match="judge_labels hidden"), view.write("x"):
        pass
    with pytest.raises(LabError, match="judge_labels hidden"), view.exclusive():
        pass
    with pytest.raises(LabError, match=r"unknown table.*judge_label\b"):
        lab.hiding(["judge_label"])


@pytest.mark.parametrize("first", ["lab", "view"])
def test_analysis_connections_are_not_shared_between_a_lab_and_its_hiding_view(lab, first):
    """The analysis connection cache is keyed by lab folder and generation: without the hidden tables
    in the key, whichever was asked first decided what the other saw."""
    view = lab.hiding(["judge_labels"])
    sql = "SELECT count(*) AS n FROM judge_labels"
    order = [lab, view] if first == "lab" else [view, lab]
    got = {id(x): run_sql(x, sql).column("n")[0].as_py() for x in order}
    assert got == {id(lab): N_JUDGED, id(view): 0}
    res = failure_distribution(view, source="judge")
    assert "no judge labels" in res.missing


def test_failure_distribution_offers_no_judge_source_to_a_blind_reviewer(apps):
    def sources(ctx) -> list[str]:
        found = []

        def walk(node) -> None:
            if isinstance(node, dict):
                ident = node.get("props", {}).get("id")
                if (
                    node.get("type") == "Dropdown"
                    and isinstance(ident, dict)
                    and ident.get("option") == "source"
                ):
                    found.append([o["value"] for o in node["props"]["options"]])
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)

        walk(json.loads(_text(page_layout(ctx, ctx.spec.page("failure-distribution")))))
        assert len(found) == 1
        return found[0]

    assert sources(apps["open"]) == ["judge", "human", "gold", "predicted"]
    assert sources(apps["blind"]) == ["human", "gold"]


def test_failure_distribution_of_judge_labels_is_hidden_in_blind_mode(apps):
    _, panel = _figure_panel(apps["open"], "failure-distribution")
    shown = _text(figure_body(apps["open"], panel, {"source": "judge"}))
    assert "not available" not in shown and "Graph" in shown
    # a blind server asked for the judge's distribution anyway (a crafted callback) shows none of it
    hidden = _text(figure_body(apps["blind"], panel, {"source": "judge"}))
    assert "not available: no judge labels" in hidden and BLIND_NOTE in hidden
    assert '"type": "bar"' not in hidden
    # human labels are still there for the blind reviewer
    human = _text(figure_body(apps["blind"], panel, {"source": "human"}))
    assert "not available" not in human and '"type": "bar"' in human


def test_judge_vs_reference_confusion_is_hidden_in_blind_mode(apps):
    _, panel = _figure_panel(apps["open"], "agreement")
    shown = _text(figure_body(apps["open"], panel, {"reference": "human"}))
    assert "heatmap" in shown
    hidden = _text(figure_body(apps["blind"], panel, {"reference": "human"}))
    assert "heatmap" not in hidden and "no judge labels" in hidden and BLIND_NOTE in hidden


def test_sql_panels_of_a_blind_server_read_no_judge_labels(apps):
    sql = "SELECT (SELECT count(*) FROM judge_labels) + (SELECT count(*) FROM predicted_labels) AS n"

    def n(ctx) -> int:
        return fetch_arrow(run_readonly(ctx.source.snapshot().cursor(), sql)).column("n")[0].as_py()

    assert n(apps["blind"]) == 0 and n(apps["open"]) == N_JUDGED
    page = apps["blind"].spec.page("runs")
    panel = SqlPanel(kind="sql", sql="SELECT count(*) AS n FROM judge_labels", display="number")
    assert '"children": "0"' in _text(sql_body(apps["blind"], page, 0, panel, {}))
    assert f'"children": "{N_JUDGED}"' in _text(sql_body(apps["open"], page, 0, panel, {}))
