"""The runs index and the server-side runs query: filters as parameters, sorting, paging, summary counts."""

from __future__ import annotations

import pytest
from dash_labs import CATEGORIES, runs_lab, runs_rows, tools_of

from trajlab.dashboard import NONE_VALUE, LabSource, RunsQuery, fetch_page, page_sql, where_clause
from trajlab.errors import ConfigError

N = 40


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    lab = runs_lab(root / "lab", N)
    return LabSource(lab, annotations=root / "annotations", dataset="default")


def expected_category(i: int) -> tuple[str | None, str | None]:
    """(category, label_source) the index must give trajectory i (see runs_rows)."""
    if i % 5 not in (0, 1):
        return None, None
    if i % 10 == 0:
        return "video_perception", "human"
    return CATEGORIES[i % 3], ("judge:rules" if i % 3 == 2 else "judge:llm")


def ids(page) -> list[str]:
    return [r["trajectory_id"] for r in page.rows]


def test_index_columns_match_the_rows(source):
    con = source.snapshot().cursor()
    got = {
        r[0]: r[1:]
        for r in con.execute(
            "SELECT trajectory_id, category, label_source, tools, modalities, n_human FROM runs"
        ).fetchall()
    }
    assert len(got) == N
    for i in range(N):
        cat, src = expected_category(i)
        tools = sorted(t for t, _ in tools_of(i))
        mods = sorted(m for _, m in tools_of(i))
        assert got[f"t_{i:04d}"] == (cat, src, tools, mods, 1 if src == "human" else 0), i


def test_filters_sort_and_paging(source):
    con = source.snapshot().cursor()
    trajs = runs_rows(N)[0]
    want = sorted(
        (t for t in trajs if t["outcome"] == "failure" and t["model"] in ("model-a", "model-b")),
        key=lambda t: -t["total_tokens"],
    )
    q = RunsQuery(
        filters={"outcome": ["failure"], "model": ["model-a", "model-b"]},
        sort="total_tokens",
        descending=True,
        page_size=3,
    )
    first = fetch_page(con, q)
    assert first.total == len(want) == 8
    assert ids(first) == [t["trajectory_id"] for t in want[:3]]
    q.page = 2
    third = fetch_page(con, q)
    assert ids(third) == [t["trajectory_id"] for t in want[6:9]]
    assert first.summary["failures"] == 8 and first.summary["successes"] == 0
    assert first.summary["accuracy"] == 0.0


def test_none_and_list_filters(source):
    con = source.snapshot().cursor()
    # model is None for i % 4 == 3; modality `audio` comes from whisper (i % 5 == 1, or i % 5 == 0 and even i)
    q = RunsQuery(filters={"model": [NONE_VALUE]}, page_size=100)
    assert sorted(ids(fetch_page(con, q))) == [f"t_{i:04d}" for i in range(N) if i % 4 == 3]
    q = RunsQuery(filters={"modality": ["audio"]}, page_size=100)
    want = [i for i in range(N) if "audio" in [m for _, m in tools_of(i)]]
    assert sorted(ids(fetch_page(con, q))) == [f"t_{i:04d}" for i in want]
    q = RunsQuery(filters={"tool": ["whisper", "curl"], "category": [NONE_VALUE]}, page_size=100)
    want = [
        i
        for i in range(N)
        if {"whisper", "curl"} & {t for t, _ in tools_of(i)} and expected_category(i)[0] is None
    ]
    assert sorted(ids(fetch_page(con, q))) == [f"t_{i:04d}" for i in want]
    q = RunsQuery(filters={"label_source": ["judge:rules"]}, page_size=100)
    assert sorted(ids(fetch_page(con, q))) == [
        f"t_{i:04d}" for i in range(N) if expected_category(i)[1] == "judge:rules"
    ]


def test_search_and_hostile_values_are_parameters(source):
    con = source.snapshot().cursor()
    assert ids(fetch_page(con, RunsQuery(search="clip_17.mp4", page_size=5))) == ["t_0017"]
    assert ids(
        fetch_page(con, RunsQuery(search="t_003", page_size=50, sort="trajectory_id", descending=False))
    ) == [f"t_{i:04d}" for i in range(30, 40)]
    hostile = ["x' OR '1'='1", "model-a'); DROP TABLE runs; --", "%", "\\"]
    page = fetch_page(con, RunsQuery(filters={"model": hostile}, search="' OR 1=1 --", page_size=10))
    assert page.total == 0 and page.rows == []
    sql, params = page_sql(RunsQuery(filters={"model": hostile}, search="'; --"))
    for v in hostile:
        assert v not in sql
    assert params[0] == hostile
    # still there: nothing was dropped
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == N


def test_unknown_names_are_refused():
    with pytest.raises(ConfigError, match="unknown runs filter"):
        where_clause(RunsQuery(filters={"model; DROP": ["a"]}).check())
    with pytest.raises(ConfigError, match="unknown runs column"):
        page_sql(RunsQuery(sort="total_tokens DESC; DROP TABLE runs"))
    with pytest.raises(ConfigError, match="page_size"):
        page_sql(RunsQuery(page_size=100000))


def test_annotation_files_update_the_index(tmp_path):
    from trajlab.review import AnnotationRecord

    source = LabSource(runs_lab(tmp_path / "lab", N), annotations=tmp_path / "annotations")
    snap = source.snapshot()
    before = (
        snap.cursor()
        .execute("SELECT category, label_source FROM runs WHERE trajectory_id = 't_0001'")
        .fetchone()
    )
    assert before == ("video_perception", "judge:llm")
    rec = AnnotationRecord(
        trajectory_id="t_0001",
        taxonomy_id="omni-failure",
        taxonomy_version="1.0.0",
        category="tool_infrastructure",
        annotator="dave",
        created_at="2026-03-02T00:00:00Z",
    ).with_id()
    source.store.append(rec)
    after = (
        source.snapshot()
        .cursor()
        .execute("SELECT category, label_source, n_human FROM runs WHERE trajectory_id = 't_0001'")
        .fetchone()
    )
    assert after == ("tool_infrastructure", "human", 1)
    facets = dict(source.snapshot().facets["label_source"])
    assert facets["human"] == 1 + sum(1 for i in range(N) if expected_category(i)[1] == "human")


def test_blind_index_hides_judge_labels(tmp_path):
    lab = runs_lab(tmp_path / "lab", 10)
    src = LabSource(lab, annotations=tmp_path / "ann", blind=True)
    rows = dict(src.snapshot().cursor().execute("SELECT trajectory_id, category FROM runs").fetchall())
    # only the lab human label (t_0000) survives; t_0001, t_0005, t_0006 have judge labels only
    assert rows["t_0000"] == "video_perception"
    assert rows["t_0001"] is None and rows["t_0005"] is None and rows["t_0006"] is None


def test_blind_index_hides_judge_columns_of_every_run(tmp_path):
    """Blind review hides the judge's per-run category, source and confidence (and the classifier's
    prediction) from every page built on `runs`, e.g. the Failures page's judge columns."""
    lab = runs_lab(tmp_path / "lab", 10)
    con = LabSource(lab, annotations=tmp_path / "ann", blind=True).snapshot().cursor()
    hidden = con.execute(
        "SELECT count(*) FILTER (WHERE judge_category IS NOT NULL OR judge_source IS NOT NULL"
        " OR judge_confidence IS NOT NULL OR predicted_category IS NOT NULL), count(*) FROM runs"
    ).fetchone()
    assert hidden == (0, 10)
    q = RunsQuery(
        filters={"outcome": ["failure"]},
        columns=["trajectory_id", "category", "judge_category", "judge_confidence"],
        sort="judge_confidence",
    )
    rows = fetch_page(con, q).rows
    assert len(rows) == 4 and all(r["judge_category"] is None for r in rows)
    assert all(r["judge_confidence"] is None for r in rows)
    # the same lab, not blind: the judge columns are there
    seen = LabSource(lab, annotations=tmp_path / "ann").snapshot().cursor()
    assert seen.execute("SELECT count(judge_category) FROM runs").fetchone()[0] == 4


def test_snapshot_follows_lab_writes(tmp_path):
    lab = runs_lab(tmp_path / "lab", 10)
    src = LabSource(lab, annotations=tmp_path / "ann")
    g0 = src.snapshot().generation
    trajs, steps, _, _ = runs_rows(12)
    with lab.write("more") as txn:
        txn.append("trajectories", trajs[10:])
        txn.append("steps", [s for s in steps if s["trajectory_id"] in ("t_0010", "t_0011")])
    snap = src.snapshot(max_age_s=0)
    assert snap.generation > g0
    assert snap.cursor().execute("SELECT count(*) FROM runs").fetchone()[0] == 12
