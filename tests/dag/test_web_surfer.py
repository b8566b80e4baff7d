"""A Magentic-One WebSurfer's browser actions: a click, a typed field or a scroll acts on the page its
previous report showed, so that report's step is what the action used (not a dead end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajlab.dag import build_lab, load_dag
from trajlab.ingest import ingest
from trajlab.store import Lab

FIX = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "formats"
    / "who_and_when"
    / "hand_crafted_surfers.json"
)


@pytest.fixture(scope="module")
def dag(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("surfers") / "lab"
    ingest([str(FIX)], out, workers=1, progress=False)
    assert build_lab(out, progress=False).failed == []
    lab = Lab.open(out)
    [tid] = lab.read("trajectories", ["trajectory_id"]).column("trajectory_id").to_pylist()
    return load_dag(lab, tid)


def _data(d) -> dict[tuple[int, int], dict]:
    return {(e["src"], e["dst"]): e for e in d.edges if e["type"] == "data"}


def test_a_click_uses_the_page_the_previous_report_showed(dag) -> None:
    data = _data(dag)
    # step 5 searched; step 6 clicked a result on that results page
    e = data[(5, 6)]
    assert e["rule"] == "revealed-url" and e["artifact"].startswith("https://www.bing.com/search?q=PyCon")
    # step 7 scrolled the keynotes page step 6 led to; step 9 typed into the schedule page of step 8
    assert data[(6, 7)]["artifact"] == "https://us.pycon.org/2019/events/keynotes/"
    assert data[(8, 9)]["artifact"] == "https://us.pycon.org/2019/schedule/"
    # the back button leaves the search page of step 9
    assert (9, 10) in data
    dead = {n["node_id"] for n in dag.nodes if n["is_dead_end"]}
    assert not dead & {5, 6, 8, 9}


def test_a_visit_does_not_use_the_page_before(dag) -> None:
    # step 8 typed an address into the bar: it goes there whatever step 7 showed
    assert (7, 8) not in _data(dag)
