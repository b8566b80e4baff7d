"""Serving without a browser (Flask test client): the trajectory page brings its DAG in column form, no
server callback runs before the drawing starts, and responses are gzipped when the client asks."""

from __future__ import annotations

import gzip
import json
import re

import pytest
from dash_labs import long_run, runs_lab

from trajlab.dag import build_lab, load_dag
from trajlab.dashboard import Highlights, build_view, create_app
from trajlab.dashboard._page_trajectory import NODE_COLUMNS, chunk_payload, payload_json

TID = "t_serving_long"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("dash-serving")
    lab = runs_lab(root / "lab", n=12)
    traj, rows = long_run(TID, 700, n_subagents=2, seed=5)
    with lab.write("fixture") as txn:
        txn.append("trajectories", [traj])
        txn.append("steps", rows)
    build_lab(root / "lab", trajectory_ids=[TID], progress=False, workers=1)
    return create_app(root / "lab", annotations=root / "annotations")


def _route(client, path: str, search: str = "", gz: bool = True) -> tuple[dict, dict]:
    body = {
        "output": "page.children",
        "outputs": {"id": "page", "property": "children"},
        "inputs": [{"id": "url", "property": "pathname", "value": path}],
        "state": [{"id": "url", "property": "search", "value": search}],
        "changedPropIds": ["url.pathname"],
    }
    headers = {"Accept-Encoding": "gzip"} if gz else {}
    r = client.post("/_dash-update-component", json=body, headers=headers)
    assert r.status_code == 200
    raw = gzip.decompress(r.data) if r.headers.get("Content-Encoding") == "gzip" else r.data
    return json.loads(raw)["response"]["page"]["children"], dict(r.headers)


def _find(tree, cid: str):
    """The props of the component with id `cid` in a serialized Dash layout."""
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if x.get("props", {}).get("id") == cid:
                return x["props"]
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    raise AssertionError(f"no component {cid!r}")


def _expand(payload: dict) -> list[dict]:
    """The Cytoscape elements dag.js builds from the column form (same rules, in Python)."""
    out = []
    for ch in payload["chunks"]:
        n = ch["n"]
        for i in range(len(n["id"])):
            kind = n["kind"][i]
            data = {c: n[c][i] for c in NODE_COLUMNS}
            data["step"] = n["first"][i] if kind == "step" else None
            data["fill"] = (
                payload["agent_fill"]
                if kind == "agent"
                else payload["modality_colors"].get(n["modality"][i], "#FFFFFF")
            )
            data["border"] = payload["status_colors"].get(n["status"][i], "#404040")
            out.append(
                {"data": data, "position": {"x": n["x"][i], "y": n["y"][i]}, "classes": n["classes"][i]}
            )
        e = ch["e"]
        for i in range(len(e["source"])):
            t = e["type"][i]
            out.append(
                {
                    "data": {
                        "id": f"e:{e['source'][i]}>{e['target'][i]}:{t}",
                        "source": e["source"][i],
                        "target": e["target"][i],
                        "type": t,
                        "color": payload["edge_colors"].get(t, "#999999"),
                        "count": e["count"][i],
                    },
                    "classes": f"edge-{t}",
                }
            )
    return out


def test_column_form_rebuilds_the_same_elements(app):
    dag = load_dag(app.trajlab.source.lab, TID)
    hl = Highlights(decisive=40, evidence=[3, 41], candidates=[7])
    for kw in ({}, {"collapse_runs": False, "collapsed_agents": []}):
        view = build_view(dag, hl, **kw)
        payload = chunk_payload(view)
        assert _expand(payload) == view.elements
        assert json.loads(payload_json(view)) == payload
        assert payload_json(view) is payload_json(view)  # serialized once per (cached) view
        assert payload["counts"][-1] == view.n_visible
        assert len(payload["chunks"]) == len(view.chunks)
        one = chunk_payload(view, chunked=False)
        assert len(one["chunks"]) == 1

        def by_id(els: list[dict]) -> list[dict]:
            return sorted(els, key=lambda el: el["data"]["id"])

        assert by_id(_expand(one)) == by_id(view.elements)
    # the column form is much smaller than the element list it stands for
    full = build_view(dag, hl, collapse_runs=False, collapsed_agents=[])
    assert len(json.dumps(chunk_payload(full))) < 0.45 * len(json.dumps(full.elements))


def test_empty_dag_payload():
    from trajlab.dag import StepDag

    view = build_view(StepDag(trajectory_id="t_empty", nodes=[], edges=[], metrics={}))
    payload = json.loads(payload_json(view))
    assert payload["chunks"] == [] and payload["counts"] == []
    assert payload["n_visible"] == payload["n_nodes"] == 0 and payload["trajectory_id"] == "t_empty"


def test_payload_survives_hostile_labels():
    from trajlab.dag import StepDag

    label = "bad \ud800 </script><img src=x onerror=alert(1)>"
    node = dict(node_id=0, agent_id="main", kind="tool_call", tool="curl", modality="web", status="ok")
    node.update(layer=0, depth=0, label=label, on_answer_path=False)
    text = payload_json(build_view(StepDag(trajectory_id="t_bad", nodes=[node], edges=[], metrics={})))
    text.encode("utf-8")  # a lone surrogate would make the response unencodable
    assert text.isascii() and "<" in text  # plain data in a JSON string, drawn with fillText
    assert json.loads(text)["chunks"][0]["n"]["label"] == [
        "0 · bad \ud800 </script><img src=x onerror=alert…"
    ]


def test_trajectory_page_brings_its_dag(app):
    client = app.server.test_client()
    page, headers = _route(client, f"/trajectory/{TID}", "?fold=0&agents=none&step=5")
    assert headers["Content-Encoding"] == "gzip"
    # one JSON string (Dash does not walk its lists); the same as chunk_payload, element for element
    raw = _find(page, "dag-chunks")["data"]
    assert isinstance(raw, str)
    payload = json.loads(raw)
    assert payload["n_nodes"] == payload["n_visible"] == payload["counts"][-1] == 700
    assert [len(c["n"]["id"]) for c in payload["chunks"]] == [400, 300]  # top layers first
    nodes = [el for el in _expand(payload) if "source" not in el["data"]]
    assert [el["data"]["step"] for el in nodes] == list(range(700))
    # the page holds an empty canvas that assets/dag.js draws on, and the marks' colours for it
    assert _find(page, "dag-canvas")["aria-label"] == "step DAG of 700 steps"
    assert payload["marks"]["decisive"]["color"] == "#D55E00"
    assert payload["edge_colors"]["retry"] == "#E69F00"
    # the step named in the URL is already in the inspector
    assert "Step 5 · tool_call" in json.dumps(_find(page, "inspector"), ensure_ascii=False)
    # folded by default (700 > 150 nodes): fewer visible nodes, sub-agents folded into one node each
    folded = json.loads(_find(_route(client, f"/trajectory/{TID}")[0], "dag-chunks")["data"])
    assert folded["n_nodes"] == 700 and folded["n_visible"] < 300
    assert sum(k == "agent" for c in folded["chunks"] for k in c["n"]["kind"]) == 2
    # an unknown trajectory is a message, not a crash
    missing, _ = _route(client, "/trajectory/t_nope")
    assert "no trajectory 't_nope'" in json.dumps(missing)


def test_no_server_round_trip_before_drawing(app):
    deps = json.loads(app.server.test_client().get("/_dash-dependencies").data)
    on_page = {"traj-id", "dag-chunks", "dag-collapse", "dag-min-run", "dag-agents", "dag-expanded"}
    on_page |= {"labels-version", "selected-step", "traj-tabs", "timeline"}
    eager = sorted(
        d["output"]
        for d in deps
        if not d.get("prevent_initial_call")
        and not d.get("clientside_function")
        and any(i["id"] in on_page for i in d["inputs"])
    )
    # only the labels panel (it depends on the reviewer typed in the browser) is asked for on load
    assert eager == ["..labels-body.children...review-as.children...review-accept.style.."]
    draw = [d for d in deps if (d.get("clientside_function") or {}).get("function_name") == "drawDag"]
    assert [i["id"] for i in draw[0]["inputs"]] == ["dag-chunks"] and not draw[0].get("prevent_initial_call")


def test_responses_are_gzipped_when_asked(app):
    client = app.server.test_client()
    index = client.get("/").data.decode()
    # the DAG is drawn by our own asset: no Cytoscape bundle (0.5 MB) to load and evaluate any more
    assert "dash_cytoscape" not in index
    src = re.search(r'src="(/_dash-component-suites/dash/dcc/dash_core_components\.[^"]+)"', index)
    assert src, "the dcc bundle is not on the page"
    plain = client.get(src.group(1))
    assert plain.headers.get("Content-Encoding") is None
    zipped = client.get(src.group(1), headers={"Accept-Encoding": "gzip, deflate, br"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in zipped.headers["Vary"]
    assert gzip.decompress(zipped.data) == plain.data
    assert len(zipped.data) < len(plain.data) / 2
    assert int(zipped.headers["Content-Length"]) == len(zipped.data)
    again = client.get(src.group(1), headers={"Accept-Encoding": "gzip"})
    assert again.data == zipped.data  # kept, not compressed again
    # small responses stay as they are; security headers survive compression
    health = client.get("/_trajlab/health", headers={"Accept-Encoding": "gzip"})
    assert health.headers.get("Content-Encoding") is None and json.loads(health.data)["trajectories"] == 13
    assert zipped.headers["X-Content-Type-Options"] == "nosniff"


def test_table_cells_keep_four_significant_digits():
    """Numbers stay numbers (sortable) but are shown to 4 significant digits; small p-values keep theirs."""
    from trajlab.dashboard._components import cell

    assert [cell(v) for v in (2226.8205, 0.123456, -3.14159, 1.2345e-05, 0.0, 7, True)] == [
        2227.0, 0.1235, -3.142, 1.234e-05, 0.0, 7, "yes"
    ]  # fmt: skip
    assert cell(float("nan")) is None and cell(float("inf")) is None
