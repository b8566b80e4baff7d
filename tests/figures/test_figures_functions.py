"""Each figure function on the hand-built lab: the plotted values, read back from the traces and the data."""

from __future__ import annotations

from collections import Counter

import plotly.io as pio
import pytest
from figures_labs import (
    SECRET,
    N,
    condition,
    difficulty,
    effort,
    gold_category,
    human_category,
    judge_category,
    model,
    tokens,
    uses_ffprobe,
)

from trajlab.errors import ConfigError
from trajlab.figures import (
    CATEGORY_COLORS,
    FIGURES,
    MODALITY_COLORS,
    OUTCOME_COLORS,
    STATUS_COLORS,
    TEMPLATE_NAME,
    paper_template,
)
from trajlab.taxonomy import load_taxonomy

SUCCESS = range(20)
FAILURE = range(20, 40)


def traces(fig, **match):
    return [t for t in fig.data if all(getattr(t, k) == v for k, v in match.items())]


def test_registry_names_and_signature(fig_lab):
    assert set(FIGURES) >= {
        "tool_gaps",
        "failure_distribution",
        "accuracy_tokens_pareto",
        "capability_usage",
        "accuracy_by_difficulty",
        "exemplar_dag",
        "agreement_confusion",
        "media_tokens",
    }
    for name, fn in FIGURES.items():
        res = fn(fig_lab, width="double")
        assert res.name == name and res.ok, (name, res.skipped)
        assert res.figure.layout.width == 687 and res.data.num_rows > 0
        assert res.sql and res.analysis


def test_template_palette_and_widths():
    assert TEMPLATE_NAME in pio.templates
    single, double = paper_template("single"), paper_template("double")
    assert single.layout.font.size == pytest.approx(7 * 96 / 72)
    assert double.layout.font.size == pytest.approx(8 * 96 / 72)
    ids = load_taxonomy("omni-failure").category_ids
    assert set(ids) | {"not_a_failure", "unsure"} == set(CATEGORY_COLORS)
    assert len({CATEGORY_COLORS[c] for c in ids}) == len(ids) == 6
    assert {"audio", "video", "image", "web", "file", "compute", "text"} <= set(MODALITY_COLORS)
    assert set(STATUS_COLORS) == {"ok", "error", "timeout", "no-output"}
    with pytest.raises(ConfigError):
        paper_template("triple")


def test_tool_gaps_usage(fig_lab):
    res = FIGURES["tool_gaps"](fig_lab)
    rows = {r["tool"]: r for r in res.data.to_pylist()}
    assert list(rows) == ["ffprobe", "python"]  # sorted by gap, most favouring success first
    exp_s = sum(uses_ffprobe(i) for i in SUCCESS) / 20  # 16/20
    exp_f = sum(uses_ffprobe(i) and i != 20 for i in FAILURE) / 20  # t20 is the omni-modal exemplar
    assert (exp_s, exp_f) == (0.8, 0.15)
    assert rows["ffprobe"]["success"] == pytest.approx(exp_s)
    assert rows["ffprobe"]["failure"] == pytest.approx(exp_f)
    assert rows["ffprobe"]["gap"] == pytest.approx(0.65)
    assert rows["ffprobe"]["significant"] and not rows["python"]["significant"]
    assert rows["python"]["gap"] == 0.0
    succ, fail = traces(res.figure, name="success")[0], traces(res.figure, name="failure")[0]
    assert list(succ.y) == ["ffprobe", "python"] and list(succ.x) == pytest.approx([0.8, 1.0])
    assert list(fail.x) == pytest.approx([0.15, 1.0])
    assert succ.marker.color == OUTCOME_COLORS["success"]
    gap = res.figure.data[2]
    assert list(gap.x) == pytest.approx([0.65, 0.0])
    r = rows["ffprobe"]
    assert gap.error_x.array[0] == pytest.approx(r["ci_high"] - r["gap"])
    assert gap.error_x.arrayminus[0] == pytest.approx(r["gap"] - r["ci_low"])
    assert r["ci_low"] < 0.65 < r["ci_high"]
    assert list(gap.marker.color) == ["#000000", "#FFFFFF"]  # filled = significant
    assert res.params["key"] == "tool" and "gaps" in res.analysis


def test_tool_gaps_call_shares(fig_lab):
    res = FIGURES["tool_gaps"](fig_lab, measure="calls", top=1)
    (row,) = res.data.to_pylist()
    # successes: 20 python + 16 ffprobe + 5 cat + 3 curl calls; failures: 19 python + 3 ffprobe + 4 cat
    # + 2 curl + the exemplar's 4 calls
    assert row["tool"] == "ffprobe"
    assert row["success"] == pytest.approx(16 / 44)
    assert row["failure"] == pytest.approx(3 / 32)
    with pytest.raises(ConfigError):
        FIGURES["tool_gaps"](fig_lab, measure="nope")


def _shares(category_of, by_model: str) -> Counter:
    c = Counter(category_of(i - 20) for i in FAILURE if model(i) == by_model)
    return Counter({k: v / sum(c.values()) for k, v in c.items()})


def test_failure_distribution_judge_and_gold_panels(fig_lab):
    res = FIGURES["failure_distribution"](fig_lab, source="judge,gold")
    assert res.params["source"] == ["judge", "gold"]
    data = res.data.to_pylist()
    for src, cat_of in (("judge", judge_category), ("gold", gold_category)):
        for m in ("m-a", "m-b"):
            got = {
                r["category"]: r["share"] for r in data if r["source"] == src and r["model"] == m and r["n"]
            }
            assert got == pytest.approx(dict(_shares(cat_of, m)))
    # gold moves one m-a run (j=0) from audio to video perception
    audio = traces(res.figure, name="Audio perception")
    assert [t.xaxis for t in audio] == ["x", "x2"]
    assert list(audio[0].y) == ["m-a", "m-b"]
    assert list(audio[0].x) == pytest.approx([0.5, 0.5])
    assert list(audio[1].x) == pytest.approx([0.4, 0.5])
    video = traces(res.figure, name="Video perception")
    assert list(video[1].x) == pytest.approx([0.1, 0.0])
    assert audio[0].marker.color == CATEGORY_COLORS["audio_perception"]
    assert audio[0].showlegend and not audio[1].showlegend


def test_failure_distribution_human_counts(fig_lab):
    res = FIGURES["failure_distribution"](fig_lab, source="human", by=None, measure="count")
    got = {r["category"]: r["n"] for r in res.data.to_pylist()}
    assert got == dict(Counter(human_category(i - 20) for i in FAILURE))
    know = traces(res.figure, name="Knowledge retrieval")[0]
    assert list(know.x) == [1] and list(know.y) == ["all"]
    with pytest.raises(ConfigError):
        FIGURES["failure_distribution"](fig_lab, source="oracle")


def test_accuracy_tokens_pareto(fig_lab):
    res = FIGURES["accuracy_tokens_pareto"](fig_lab)
    rows = {(r["model"], r["reasoning_effort"]): r for r in res.data.to_pylist()}
    for (m, e), r in rows.items():
        runs = [i for i in range(N) if model(i) == m and effort(i) == e]
        assert r["n_traj"] == len(runs)
        assert r["accuracy"] == pytest.approx(sum(i < 20 for i in runs) / len(runs))
        assert r["total_tokens"] == pytest.approx(tokens(runs[0]))
        assert r["ci_low"] < r["accuracy"] < r["ci_high"]
    # m-a low: fewest tokens; m-a high: more accurate than anything cheaper; m-b: dominated by m-a high
    assert {k for k, r in rows.items() if r["pareto"]} == {("m-a", "low"), ("m-a", "high")}
    front = traces(res.figure, name="Pareto frontier")[0]
    assert list(front.x) == [1000, 1500]
    assert list(front.y) == pytest.approx([6 / 13, 4 / 7])
    ma = traces(res.figure, name="m-a")[0]
    points = sorted(zip(ma.x, ma.y))
    assert [x for x, _ in points] == [1000, 1500]
    assert [y for _, y in points] == pytest.approx([6 / 13, 4 / 7])
    assert list(ma.marker.symbol) == ["circle", "square"]  # low, high (effort order)
    assert {t.name for t in res.figure.data} >= {"m-a", "m-b", "low", "high", "Pareto frontier"}
    with pytest.raises(ConfigError):
        FIGURES["accuracy_tokens_pareto"](fig_lab, color="domain")


def test_capability_usage(fig_lab):
    res = FIGURES["capability_usage"](fig_lab)
    got = {(r["group"], r["capability"]): r["value"] for r in res.data.to_pylist()}
    for m in ("m-a", "m-b"):
        runs = [i for i in range(N) if model(i) == m]
        ext = sum(i % 8 == 0 or i == 20 for i in runs) / 20  # curl, or web_search in t20
        fil = sum(i % 4 == 0 and i != 20 for i in runs) / 20
        assert got[(m, "external")] == pytest.approx(ext)
        assert got[(m, "file")] == pytest.approx(fil)
        assert got[(m, "compute")] == 1.0
        assert got[(m, "other")] == 0.0
    assert got[("m-a", "external")] == pytest.approx(0.3) and got[("m-a", "file")] == pytest.approx(0.45)
    bars = traces(res.figure, name="file")[0]
    assert list(bars.x) == ["m-a", "m-b"] and list(bars.y) == pytest.approx([0.45, 0.0])
    # no call is `other`: it stays in the data but gets no legend entry without bars
    assert [t.name for t in res.figure.data] == ["external", "file", "compute"]
    facet = FIGURES["capability_usage"](fig_lab, by="model", facet="domain", measure="calls_per_traj")
    assert facet.params["facet"] == "domain" and {r["facet"] for r in facet.data.to_pylist()} == {"audio"}
    assert facet.figure.layout.xaxis.title.text == "domain: audio"


def test_accuracy_by_difficulty(fig_lab):
    res = FIGURES["accuracy_by_difficulty"](fig_lab)
    rows = {(r["difficulty"], r["condition"]): r for r in res.data.to_pylist()}
    expected = Counter((difficulty(i), condition(i)) for i in range(N))
    solved = Counter((difficulty(i), condition(i)) for i in SUCCESS)
    assert {k: r["n_traj"] for k, r in rows.items()} == dict(expected)
    for k, r in rows.items():
        assert r["accuracy"] == pytest.approx(solved[k] / expected[k])
    skill = traces(res.figure, name="skill")[0]
    assert list(skill.x) == ["1", "2", "3"]
    assert list(skill.y) == pytest.approx([solved[(d, "skill")] / expected[(d, "skill")] for d in "123"])
    assert [t.name for t in res.figure.data] == ["no-skill", "skill"]  # the baseline first
    per_model = FIGURES["accuracy_by_difficulty"](fig_lab, facet="model")
    assert [per_model.figure.layout[a].title.text for a in ("xaxis", "xaxis2")] == ["m-a", "m-b"]
    ma = [r for r in per_model.data.to_pylist() if r["model"] == "m-a"]
    assert sum(r["n_traj"] for r in ma) == 20
    one = FIGURES["accuracy_by_difficulty"](fig_lab, conditions="skill")
    assert {r["condition"] for r in one.data.to_pylist()} == {"skill"} and one.notes


def test_exemplar_dag_marks_decisive_step_and_is_safe(fig_lab):
    res = FIGURES["exemplar_dag"](fig_lab)
    assert res.params["trajectory_id"] == "t20" and res.params["decisive_step"] == 4
    assert res.params["decisive_source"] == "gold"
    rows = res.data.to_pylist()
    assert [r["step_index"] for r in rows] == list(range(7))
    assert [r["lane"] for r in rows] == ["agent", "agent", "audio", "audio", "agent", "web", "agent"]
    assert [r["decisive"] for r in rows] == [i == 4 for i in range(7)]
    assert [r["text"] for r in rows][:4] == ["system", "task", "ffmpeg", "whisper"]
    assert rows[-1]["text"] == "answer"
    for r in rows:
        assert SECRET not in r["label"] and "<" not in r["label"] and ">" not in r["label"]
    nodes = next(t for t in res.figure.data if t.mode == "markers+text")
    assert list(nodes.marker.color) == [MODALITY_COLORS[r["modality"]] for r in rows]
    assert all(SECRET not in str(c) and "<a" not in str(c) for c in nodes.customdata)
    ring = traces(res.figure, name="decisive step (4, Video perception)")[0]
    assert (ring.x[0], ring.y[0]) == (rows[4]["x"], rows[4]["y"])
    edges = res.extras["edges"].to_pylist()
    assert {"src": 2, "dst": 3, "type": "data"} in [{k: e[k] for k in ("src", "dst", "type")} for e in edges]
    assert res.figure.layout.yaxis.ticktext == ("agent", "audio", "web")
    small = FIGURES["exemplar_dag"](fig_lab, max_nodes=5)  # actions, first input, answer, decisive step
    assert [r["step_index"] for r in small.data.to_pylist()] == [0, 2, 3, 4, 5, 6]
    assert small.notes == ["1 message/reasoning nodes hidden (max_nodes 5)"]
    other = FIGURES["exemplar_dag"](fig_lab, trajectory_id="t21")
    assert other.params["trajectory_id"] == "t21" and other.params["decisive_step"] == 1
    done = FIGURES["exemplar_dag"](fig_lab, trajectory_id="t01")
    assert done.skipped == "trajectory t01 did not fail"


def test_agreement_confusion_gold_and_human(fig_lab):
    res = FIGURES["agreement_confusion"](fig_lab)
    assert res.params["judge"] == "judge:rules" and res.params["accuracy"] == pytest.approx(19 / 20)
    cells = {(r["reference"], r["judge"]): r["n"] for r in res.data.to_pylist()}
    expected = Counter((gold_category(i - 20), judge_category(i - 20)) for i in FAILURE)
    assert {k: v for k, v in cells.items() if v} == dict(expected)
    heat = res.figure.data[0]
    assert list(heat.y) == ["Audio perception", "Video perception", "Reasoning/calc.", "Tool/infra."]
    assert heat.z[1][0] == 1.0 and heat.text[1][0] == "1"  # the one video run the judge called audio
    human = FIGURES["agreement_confusion"](fig_lab, reference="human")
    assert human.params["accuracy"] == pytest.approx(18 / 20)
    hcells = {(r["reference"], r["judge"]): r["n"] for r in human.data.to_pylist() if r["n"]}
    assert hcells[("knowledge_retrieval", "audio_perception")] == 1
    with pytest.raises(ConfigError):
        FIGURES["agreement_confusion"](fig_lab, judge="llm")


def test_screen_width_autosizes(fig_lab):
    res = FIGURES["accuracy_by_difficulty"](fig_lab, width="screen")
    assert res.figure.layout.width is None and res.figure.layout.autosize
    with pytest.raises(ConfigError):
        FIGURES["tool_gaps"](fig_lab, width="a4")


def test_missing_data_is_skipped_with_one_line_reasons(bare_lab):
    reasons = {name: fn(bare_lab).skipped for name, fn in FIGURES.items()}
    assert reasons == {
        "tool_gaps": None,
        "failure_distribution": "no judge labels",
        "accuracy_tokens_pareto": "no token counts",
        "capability_usage": None,
        "accuracy_by_difficulty": "no difficulty levels",
        "exemplar_dag": None,
        "agreement_confusion": "no judge labels",
        "media_tokens": "no token counts",
    }
    res = FIGURES["accuracy_tokens_pareto"](bare_lab)
    assert res.data.num_rows == 0 and res.notes and "token" in res.notes[0]
    assert "not available: no token counts" in res.figure.layout.annotations[0].text
    dag = FIGURES["exemplar_dag"](bare_lab)  # no labels: the DAG's own top candidate is marked
    assert dag.params["decisive_source"] in ("dag candidate", None)


def test_empty_lab(tmp_path):
    from trajlab.store import Lab

    lab = Lab.create(tmp_path / "empty")
    reasons = {name: fn(lab).skipped for name, fn in FIGURES.items()}
    assert all(reasons.values()), reasons
    assert reasons["tool_gaps"] == "no trajectories"
    assert reasons["exemplar_dag"] == "no trajectories"


def _rendered_strings(fig) -> list[str]:
    """Every string plotly renders as text: trace names, categories, text, annotations, axis labels."""
    out: list[str] = []
    for t in fig.data:
        out.append(t.name or "")
        for attr in ("x", "y", "text"):
            vals = getattr(t, attr, None)
            if vals is not None and not isinstance(vals, str):
                out += [v for v in vals if isinstance(v, str)]
            elif isinstance(vals, str):
                out.append(vals)
    layout = fig.layout
    out += [a.text or "" for a in layout.annotations]
    for key in ("xaxis", "xaxis2", "yaxis", "yaxis2"):
        ax = getattr(layout, key, None)
        if ax is not None:
            out.append(ax.title.text or "")
            out += [str(v) for v in (ax.ticktext or ())]
    return out


def test_markup_in_lab_values_is_never_rendered(tmp_path):
    from figures_labs import build_lab

    lab = build_lab(tmp_path / "evil", evil=True)
    for name, fn in FIGURES.items():
        res = fn(lab)
        assert res.ok, (name, res.skipped)
        texts = _rendered_strings(res.figure)
        assert texts and not [s for s in texts if "<" in s or ">" in s], name
    res = FIGURES["accuracy_by_difficulty"](lab)
    assert {t.name for t in res.figure.data} == {"‹b›no-skill‹/b›", "‹b›skill‹/b›"}
