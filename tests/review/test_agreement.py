from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from review_synth import Tax, judge_row, make_lab, step_rows, traj_row
from sklearn.metrics import cohen_kappa_score

from trajlab.review import (
    AnnotationStore,
    adjudicate,
    agreement,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_nominal,
    specific_agreement,
)


def test_cohen_kappa_by_hand() -> None:
    # po = 8/10; both raters 5 a / 5 b -> pe = 0.5; kappa = (0.8 - 0.5) / 0.5 = 0.6
    a = list("aaaaabbbbb")
    b = list("aaaabbbbba")
    assert cohen_kappa(a, b) == pytest.approx(0.6)
    # po = 3/4; A: a3 b1, B: a2 b2 -> pe = (3*2 + 1*2)/16 = 0.5; kappa = 0.5
    assert cohen_kappa(list("aaab"), list("aabb")) == pytest.approx(0.5)
    assert cohen_kappa(list("aaa"), list("aaa")) is None  # undefined: chance agreement is 1
    assert cohen_kappa([], []) is None


@pytest.mark.parametrize("seed", range(8))
def test_cohen_kappa_matches_scikit_learn(seed: int) -> None:
    rng = random.Random(seed)
    cats = ["audio", "video", "tool", "reasoning"][: rng.randint(2, 4)]
    a = [rng.choice(cats) for _ in range(rng.randint(5, 60))]
    b = [x if rng.random() < 0.6 else rng.choice(cats) for x in a]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_fleiss_and_krippendorff_by_hand() -> None:
    units = {1: list("aaa"), 2: list("aab"), 3: list("bbb")}
    # P_i = 1, 1/3, 1 -> P = 7/9; p_a = 5/9, p_b = 4/9 -> Pe = 41/81; kappa = (63 - 41) / 40 = 0.55
    assert fleiss_kappa(units) == pytest.approx(0.55)
    # coincidences: o_aa = 3 + 1, o_ab = o_ba = 1, o_bb = 3; n_a = 5, n_b = 4, n = 9
    # alpha = 1 - (n - 1) * (o_ab + o_ba) / (2 n_a n_b) = 1 - 8 * 2 / 40 = 0.6
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.6)
    # Missing ratings: a unit with one rating adds nothing; alpha of perfect agreement is 1.
    assert krippendorff_alpha_nominal({1: ["a", "a"], 2: ["b", "b"], 3: ["a"]}) == pytest.approx(1.0)
    assert specific_agreement([("a", "a"), ("a", "b"), ("b", "b")], "a") == pytest.approx(2 / 3)


def test_fleiss_and_alpha_match_reference_implementations() -> None:
    np = pytest.importorskip("numpy")
    krippendorff = pytest.importorskip("krippendorff")
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = random.Random(3)
    rows = [[rng.choice("abc") if rng.random() < 0.5 else "a" for _ in range(4)] for _ in range(25)]
    units = dict(enumerate(rows))
    table, _ = inter_rater.aggregate_raters(np.array([["abc".index(x) for x in r] for r in rows]))
    assert fleiss_kappa(units) == pytest.approx(inter_rater.fleiss_kappa(table), abs=1e-12)
    # Krippendorff with missing values (NaN) against the `krippendorff` package.
    data = [[rng.choice([0, 1, 2, np.nan]) for _ in range(20)] for _ in range(3)]
    missing_units = {j: [r[j] for r in data if not np.isnan(r[j])] for j in range(20)}
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert krippendorff_alpha_nominal(missing_units) == pytest.approx(expected, abs=1e-12)


def rows(rater: str, cats: str, steps: list[int | None] | None = None, kind: str | None = None) -> list[dict]:
    names = {"a": "audio_perception", "v": "video_perception", "t": "tool_infrastructure", "?": "unsure"}
    out = []
    for i, c in enumerate(cats):
        if c == "-":
            continue
        r = {"rater": rater, "trajectory_id": f"t{i}", "category": names[c]}
        if steps is not None:
            r["decisive_step_index"] = steps[i]
        if kind:
            r["kind"] = kind
        out.append(r)
    return out


def test_report_from_label_rows() -> None:
    labels = (
        rows("judge:llm", "aavtaa", [1, 2, 3, 4, 5, 6])
        + rows("alice", "aavvat", [1, 3, 3, 9, 5, None])
        + rows("bob", "a?vvt-", [1, 2, 5, 4, 5, None])
        + rows("gold", "aavvaa", kind="gold")
    )
    r = agreement(labels, k=1)
    assert r.raters == {"alice": "human", "bob": "human", "judge:llm": "judge", "gold": "gold"}
    assert r.n_items == 6 and r.n_unsure == 1
    pairs = {(p.rater_a, p.rater_b): p for p in r.pairs}
    ja = pairs[("judge:llm", "alice")]
    assert ja.kind == "judge-human" and ja.n_items == 6
    assert ja.observed == pytest.approx(4 / 6)
    assert ja.kappa == pytest.approx(cohen_kappa_score(list("aavtaa"), list("aavvat")))
    # decisive steps: judge 1,2,3,4,5 vs alice 1,3,3,9,5 -> exact 3/5, within 1: 4/5
    assert (ja.step_n, ja.step_exact, ja.step_within_k) == (5, pytest.approx(3 / 5), pytest.approx(4 / 5))
    ab = pairs[("alice", "bob")]
    assert ab.kind == "human-human" and ab.n_items == 4  # bob's `unsure` and missing item left out
    assert (ab.items_a, ab.items_b, ab.items_both) == (6, 5, 5)
    assert ab.observed == pytest.approx(3 / 4)
    assert r.n_multi_rated == 4
    assert r.fleiss_kappa == pytest.approx(fleiss_kappa({0: "aa", 2: "vv", 3: "vv", 4: "at"}))
    audio = next(c for c in r.per_category if c["category"] == "audio_perception")
    assert audio["human_labels"] == 4 and audio["judge_labels"] == 4
    # human pairs: (a,a) (v,v) (v,v) (a,t) -> audio: 2 * 1 / (2 + 1)
    assert audio["human_human_specific"] == pytest.approx(2 / 3)
    assert r.decisive["human-human"]["n"] == 5  # t0..t4: an `unsure` label still names a step
    conf = r.confusion["judge:llm"]
    assert conf["n"] == 6 and conf["accuracy"] == pytest.approx(5 / 6)
    i_v = conf["labels"].index("video_perception")
    i_t = conf["labels"].index("tool_infrastructure")
    assert conf["matrix"][i_v][i_t] == 1  # gold video, judge said tool once
    data = json.loads(r.to_json())
    assert data["pairs"][0]["rater_a"] == "judge:llm"
    text = r.to_table()
    assert "Fleiss' kappa" in text and "judge:llm vs gold: accuracy 0.833" in text


def test_report_from_a_lab_with_loaded_labels_and_gold(tmp_path: Path) -> None:
    acts = [("whisper", "whisper a.wav", "hello", False), ("python", "python x.py", "42", False)]
    tids = [f"t{i}" for i in range(4)]
    judge_cats = ["audio_perception", "audio_perception", "video_perception", "tool_infrastructure"]
    lab = make_lab(
        tmp_path / "lab",
        [(traj_row(t, 4), step_rows(t, acts)) for t in tids],
        [judge_row(t, c, step=1) for t, c in zip(tids, judge_cats)],
    )
    store = AnnotationStore(tmp_path / "ann", "ds")
    human = {
        "alice": ["audio_perception", "video_perception", "video_perception", "tool_infrastructure"],
        "bob": ["audio_perception", "video_perception", "video_perception", "audio_perception"],
        "carol": ["audio_perception", "audio_perception", "unsure", "video_perception"],
    }
    for who, cats in human.items():
        for t, c in zip(tids, cats):
            store.append(
                {
                    "trajectory_id": t,
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1.0.0",
                    "category": c,
                    "annotator": who,
                    "decisive_step_index": 1 if who != "carol" else 2,
                }
            )
    store.load_into_lab(lab, Tax())
    adj = adjudicate(lab, Tax(), policy="majority", min_reviewers=2)
    assert {g["trajectory_id"]: (g["category"], g["method"]) for g in adj.gold} == {
        "t0": ("audio_perception", "unanimous"),
        "t1": ("video_perception", "majority"),
        "t2": ("video_perception", "unanimous"),  # carol's `unsure` is an abstention
    }
    assert [u.trajectory_id for u in adj.unresolved] == ["t3"]
    r = agreement(lab.refresh(), k=0)
    assert r.taxonomy_id == "omni-failure"
    assert set(r.raters) == {"alice", "bob", "carol", "judge:llm", "gold"}
    assert r.confusion["judge:llm"]["n"] == 3
    assert r.confusion["judge:llm"]["accuracy"] == pytest.approx(2 / 3)
    pairs = {(p.rater_a, p.rater_b): p for p in r.pairs}
    ab = pairs[("alice", "bob")]
    assert (ab.n_items, ab.observed) == (4, pytest.approx(3 / 4))
    assert pairs[("alice", "carol")].step_exact == 0.0 and pairs[("alice", "bob")].step_exact == 1.0
    # Steps of the same agent (all main here) agree even when the indexes differ.
    assert pairs[("alice", "carol")].agent_agree == 1.0
