"""DAG drawing: layered positions, folding runs and sub-agents, highlight classes, chunked elements."""

from __future__ import annotations

from collections import Counter

import pytest
from dash_labs import long_run

from trajlab.dag import build_dag
from trajlab.dashboard import Highlights, build_view, fold


@pytest.fixture(scope="module")
def big():
    traj, steps = long_run("t_big", 5000, n_subagents=4, seed=1)
    return build_dag(traj, steps), steps


@pytest.fixture(scope="module")
def small():
    traj, steps = long_run("t_small", 60, n_subagents=1, seed=2)
    return build_dag(traj, steps), steps


def _nodes(view):
    return [e for e in view.elements if "source" not in e["data"]]


def _edges(view):
    return [e for e in view.elements if "source" in e["data"]]


def test_unfolded_view_has_every_step_in_layer_order(small):
    dag, steps = small
    view = build_view(dag, collapse_runs=False, collapsed_agents=[])
    nodes = _nodes(view)
    assert view.n_visible == len(nodes) == len(steps) == 60
    assert [n["data"]["step"] for n in nodes] == list(range(60))
    layer = {n["node_id"]: n["layer"] for n in dag.nodes}
    by_layer: dict[int, list[float]] = {}
    for n in nodes:
        by_layer.setdefault(layer[n["data"]["step"]], []).append(n["position"]["y"])
    ys = [sorted(set(v)) for _, v in sorted(by_layer.items())]
    assert all(len(v) == 1 for v in ys), "one row per layer"
    flat = [v[0] for v in ys]
    assert flat == sorted(flat) and len(set(flat)) == len(flat), "rows go top to bottom by layer"
    # every DAG edge is drawn once per type, between the nodes of its steps
    want = {(f"n{e['src']}", f"n{e['dst']}", e["type"]) for e in dag.edges}
    got = {(e["data"]["source"], e["data"]["target"], e["data"]["type"]) for e in _edges(view)}
    assert got == want


def test_folding_runs_and_subagents(big):
    dag, _ = big
    agents = Counter(n["agent_id"] for n in dag.nodes)
    assert set(agents) == {"main", "sub-1", "sub-2", "sub-3", "sub-4"}
    view = build_view(dag)  # big graph: folded by default
    assert view.collapsed_agents == ["sub-1", "sub-2", "sub-3", "sub-4"]
    nodes = _nodes(view)
    assert len(nodes) == view.n_visible < 5000 // 4
    covered = sum(n["data"]["count"] for n in nodes)
    assert covered == 5000, "every step is in exactly one visible element"
    agent_nodes = [n for n in nodes if n["data"]["kind"] == "agent"]
    assert sorted((n["data"]["agent"], n["data"]["count"]) for n in agent_nodes) == sorted(
        (a, c) for a, c in agents.items() if a != "main"
    )
    groups = [n for n in nodes if n["data"]["kind"] == "group"]
    assert groups and all(n["data"]["count"] >= 4 for n in groups)
    for g in groups:  # a folded run is consecutive steps of one agent with the same tool and status
        members = [dag.node(s) for s in view.groups[g["data"]["id"]]]
        assert len({(m["agent_id"], m["kind"], m["tool"], m["status"]) for m in members}) == 1
    # no edge starts and ends in the same element; edge endpoints exist
    ids = {n["data"]["id"] for n in nodes}
    for e in _edges(view):
        assert e["data"]["source"] in ids and e["data"]["target"] in ids
        assert e["data"]["source"] != e["data"]["target"]


def test_unfold_one_group_and_one_agent(big):
    dag, _ = big
    view = build_view(dag)
    gid, members = next(iter(view.groups.items()))
    opened = build_view(dag, expanded_groups=[gid])
    assert opened.n_visible == view.n_visible + len(members) - 1
    assert gid not in opened.groups
    agent = build_view(dag, collapsed_agents=["sub-1", "sub-2", "sub-3"])
    assert "sub-4" not in agent.collapsed_agents
    shown = [n for n in _nodes(agent) if n["data"]["agent"] == "sub-4"]
    assert [n["data"]["kind"] for n in shown] == ["group"]  # its 25 similar OCR calls fold as one run
    assert shown[0]["data"]["count"] == 25
    unfolded = build_view(dag, collapse_runs=False, collapsed_agents=["sub-1", "sub-2", "sub-3"])
    assert unfolded.n_visible == 5000 - 3 * 25 + 3


def test_highlighted_steps_are_never_folded(big):
    dag, _ = big
    plain = build_view(dag)
    step = plain.groups[next(iter(plain.groups))][2]  # a step inside a folded run
    view = build_view(dag, Highlights(decisive=step, evidence=[step + 1], human_decisive=step - 1))
    by_step = {n["data"]["step"]: n for n in _nodes(view) if n["data"]["kind"] == "step"}
    assert "decisive" in by_step[step]["classes"]
    assert "evidence" in by_step[step + 1]["classes"]
    assert "human-decisive" in by_step[step - 1]["classes"]


def test_chunks_top_first_and_edges_after_their_nodes(big):
    dag, _ = big
    view = build_view(dag, collapse_runs=False, collapsed_agents=[])
    assert view.n_visible == 5000
    sizes = [sum(1 for e in ch if "source" not in e["data"]) for ch in view.chunks]
    assert sizes[0] == 400 and sum(sizes) == 5000 and len(sizes) == 1 + -(-4600 // 1200)
    seen: set[str] = set()
    last_y = -1.0
    for ch in view.chunks:
        for e in ch:
            d = e["data"]
            if "source" in d:
                assert d["source"] in seen and d["target"] in seen, "an edge never precedes its nodes"
            else:
                seen.add(d["id"])
                assert e["position"]["y"] >= last_y, "chunks go top to bottom"
                last_y = e["position"]["y"]


def test_labels_are_clean_text():
    traj, steps = long_run("t_x", 12, n_subagents=0)
    steps[3]["command"] = "curl -H 'Authorization: Bearer sk-proj-" + "a" * 40 + "' http://x\x1b[31m"
    dag = build_dag(traj, steps)
    view = build_view(dag, collapse_runs=False)
    label = next(n["data"]["label"] for n in _nodes(view) if n["data"]["step"] == 3)
    assert "sk-proj-" not in label and "\x1b" not in label
    assert label.startswith("3 · ")


def test_fold_map_is_total(small):
    dag, _ = small
    rep, members = fold(dag, collapse_runs=True, min_run=3, collapsed_agents=["sub-1"])
    assert set(rep) == {n["node_id"] for n in dag.nodes}
    assert sum(len(m) for m in members.values()) == len(dag.nodes)
    assert {rep[n["node_id"]] for n in dag.nodes if n["agent_id"] == "sub-1"} == {"a:sub-1"}
