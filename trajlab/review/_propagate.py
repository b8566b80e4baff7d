"""`propagate`: learn the reviewed labels and predict the unreviewed failures, with calibrated
probabilities and an honest cross-validated estimate of how good those predictions are.

Predictions go to `predicted_labels` only (never to human, gold or judge labels); their uncertainty
(1 - max probability) raises an item's priority in the review queue (active learning).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError
from ..schema import UNSURE, short_id
from ._features import default_decisive_steps, step_texts, structured_features
from ._taxo import resolve_taxonomy

if TYPE_CHECKING:
    from ..store import Lab

MODEL_VERSION = "linsvc-tfidf-v1"


@dataclass
class PropagationReport:
    taxonomy_id: str
    model_id: str
    n_train: int
    class_counts: dict[str, int]
    dropped: dict[str, int]
    cv_folds: int
    cv_accuracy: float
    macro_f1: float
    per_class_f1: dict[str, float]
    chance_accuracy: float
    control_accuracy: float | None = None
    n_predicted: int = 0
    n_features: int = 0
    written: bool = False
    predicted_counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self) -> str:
        lines = [
            f"propagation ({self.taxonomy_id}, model {self.model_id}): trained on {self.n_train} reviewed "
            f"labels in {len(self.class_counts)} classes, {self.n_features} features",
            f"  {self.cv_folds}-fold cross-validated accuracy {self.cv_accuracy:.3f} "
            f"(chance = majority class {self.chance_accuracy:.3f}), macro-F1 {self.macro_f1:.3f}",
        ]
        if self.control_accuracy is not None:
            lines.append(f"  label-shuffled control accuracy {self.control_accuracy:.3f}")
        for c, f1 in sorted(self.per_class_f1.items()):
            lines.append(f"    {c:<28} n={self.class_counts[c]:<4} F1 {f1:.3f}")
        if self.dropped:
            lines.append(f"  classes with too few labels to learn (left out): {self.dropped}")
        lines.append(
            f"  predicted {self.n_predicted} unreviewed trajectories"
            + (" -> predicted_labels" if self.written else " (not written)")
            + (f": {self.predicted_counts}" if self.predicted_counts else "")
        )
        return "\n".join(lines)


def _make_pipeline(seed: int) -> Any:
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MaxAbsScaler
    from sklearn.svm import LinearSVC

    features = ColumnTransformer(
        [
            ("structured", DictVectorizer(), "feats"),
            (
                "text",
                TfidfVectorizer(
                    max_features=5000,
                    ngram_range=(1, 2),
                    sublinear_tf=True,
                    token_pattern=r"(?u)\b\w[\w.-]+\b",
                ),
                "text",
            ),
        ]
    )
    return Pipeline(
        [
            ("features", features),
            ("scale", MaxAbsScaler()),
            ("clf", LinearSVC(C=0.5, class_weight="balanced", random_state=seed)),
        ]
    )


class CalibratedModel:
    """A linear SVM (one-vs-rest, class-balanced) over the features, turned into probabilities by
    CalibratedClassifierCV (sigmoid) with as many calibration folds as the smallest class allows (2-3)."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def fit(self, X: Any, y: Any) -> CalibratedModel:
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.model_selection import StratifiedKFold

        smallest = min(Counter(y).values())
        cv = StratifiedKFold(max(2, min(3, smallest)), shuffle=True, random_state=self.seed)
        self.model_ = CalibratedClassifierCV(
            _make_pipeline(self.seed), method="sigmoid", cv=cv, ensemble=False
        )
        self.model_.fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X: Any) -> Any:
        return self.model_.predict_proba(X)

    def predict(self, X: Any) -> Any:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def reviewed_labels(lab: Lab, taxonomy_id: str) -> dict[str, str]:
    """trajectory -> reviewed category: the gold label, else the human plurality (ties left out)."""
    votes: dict[str, Counter[str]] = {}
    for r in lab.read("human_labels").to_pylist():
        if r["taxonomy_id"] == taxonomy_id and r["category"] != UNSURE:
            votes.setdefault(r["trajectory_id"], Counter())[r["category"]] += 1
    out = {}
    for tid, c in votes.items():
        top = c.most_common(2)
        if len(top) == 1 or top[0][1] > top[1][1]:
            out[tid] = top[0][0]
    for r in lab.read("gold_labels").to_pylist():
        if r["taxonomy_id"] == taxonomy_id:
            out[r["trajectory_id"]] = r["category"]
    return out


def _frame(lab: Lab, ids: list[str]) -> Any:
    import pandas as pd

    feats = structured_features(lab, ids)
    texts = step_texts(lab, default_decisive_steps(lab, ids))
    return pd.DataFrame({"feats": [feats[t] for t in ids], "text": [texts[t] for t in ids]}, index=ids)


def cross_validate(X: Any, y: list[str], seed: int = 0, folds: int = 5, bar: Any = None) -> tuple[int, Any]:
    """(folds used, out-of-fold predictions) of the calibrated model."""
    from sklearn.model_selection import StratifiedKFold

    k = max(2, min(folds, min(Counter(y).values())))
    skf = StratifiedKFold(k, shuffle=True, random_state=seed)
    y_arr = np.asarray(y)
    pred = np.empty(len(y), dtype=object)
    for train, test in skf.split(np.zeros(len(y)), y_arr):
        m = CalibratedModel(seed).fit(X.iloc[train], y_arr[train])
        pred[test] = m.predict(X.iloc[test])
        if bar is not None:
            bar.update(1)
    return k, pred


def propagate(
    lab: Lab,
    taxonomy: Any = None,
    labels: Mapping[str, str] | None = None,
    write: bool = True,
    control: bool = False,
    seed: int = 0,
    min_per_class: int = 3,
    folds: int = 5,
    progress: bool = False,
) -> PropagationReport:
    """Train on reviewed labels (or `labels`: trajectory -> category), cross-validate, and predict
    the failed or judged trajectories that have no reviewed label."""
    from threadpoolctl import threadpool_limits

    # Tiny dense problems: BLAS threads only add contention.
    with threadpool_limits(1):
        return _propagate(lab, taxonomy, labels, write, control, seed, min_per_class, folds, progress)


def _propagate(
    lab: Lab,
    taxonomy: Any,
    labels: Mapping[str, str] | None,
    write: bool,
    control: bool,
    seed: int,
    min_per_class: int,
    folds: int,
    progress: bool,
) -> PropagationReport:
    from sklearn.metrics import accuracy_score, f1_score

    tax = resolve_taxonomy(taxonomy)
    known = reviewed_labels(lab, tax.id) if labels is None else dict(labels)
    trajs = lab.read("trajectories", ["trajectory_id", "outcome"]).to_pylist()
    in_lab = {r["trajectory_id"] for r in trajs}
    missing = sorted(set(known) - in_lab)
    if missing:
        raise ConfigError(f"{len(missing)} labeled trajectories are not in the lab, e.g. {missing[0]}")
    counts = Counter(known.values())
    dropped = {c: n for c, n in counts.items() if n < min_per_class}
    train = {t: c for t, c in sorted(known.items()) if c not in dropped}
    classes = sorted(set(train.values()))
    if len(classes) < 2:
        raise ConfigError(
            f"propagation needs at least {min_per_class} reviewed labels in each of 2 or more categories; "
            f"have {dict(counts) or 'none'} for taxonomy {tax.id}"
        )
    ids = list(train)
    y = [train[t] for t in ids]
    X = _frame(lab, ids)
    from tqdm import tqdm

    n_folds = max(2, min(folds, min(Counter(y).values())))
    bar = tqdm(
        total=n_folds * (2 if control else 1) + 1, desc="propagate: fits", unit="fit", disable=not progress
    )
    k, pred = cross_validate(X, y, seed, folds, bar)
    per_class = f1_score(y, list(pred), labels=classes, average=None, zero_division=0)
    control_acc = None
    if control:
        rng = np.random.default_rng(seed)
        shuffled = list(rng.permutation(y))
        _, cpred = cross_validate(X, shuffled, seed, folds, bar)
        control_acc = float(accuracy_score(shuffled, list(cpred)))
    model = CalibratedModel(seed).fit(X, np.asarray(y))
    bar.update(1)
    bar.close()
    judged = {r for r in lab.read("judge_labels", ["trajectory_id"]).column("trajectory_id").to_pylist()}
    targets = sorted(
        r["trajectory_id"]
        for r in trajs
        if (r["outcome"] == "failure" or r["trajectory_id"] in judged) and r["trajectory_id"] not in known
    )
    model_id = short_id(
        "pm", MODEL_VERSION, str(seed), json.dumps(sorted(train.items()), separators=(",", ":"))
    )
    n_features = len(
        model.model_.calibrated_classifiers_[0].estimator.named_steps["features"].get_feature_names_out()
    )
    rows = []
    if targets:
        proba = model.predict_proba(_frame(lab, targets))
        now = datetime.now(timezone.utc)
        for tid, p in zip(targets, proba):
            i = int(np.argmax(p))
            rows.append(
                {
                    "trajectory_id": tid,
                    "model_id": model_id,
                    "taxonomy_id": tax.id,
                    "taxonomy_version": str(tax.version),
                    "category": str(model.classes_[i]),
                    "probability": float(p[i]),
                    "probabilities": json.dumps(
                        {str(c): round(float(v), 6) for c, v in zip(model.classes_, p)}
                    ),
                    "uncertainty": float(1.0 - p[i]),
                    "created_at": now,
                }
            )
    report = PropagationReport(
        taxonomy_id=tax.id,
        model_id=model_id,
        n_train=len(y),
        class_counts=dict(sorted(Counter(y).items())),
        dropped=dropped,
        cv_folds=k,
        cv_accuracy=float(accuracy_score(y, list(pred))),
        macro_f1=float(f1_score(y, list(pred), average="macro", zero_division=0)),
        per_class_f1={c: float(f) for c, f in zip(classes, per_class)},
        chance_accuracy=max(Counter(y).values()) / len(y),
        control_accuracy=control_acc,
        n_predicted=len(rows),
        n_features=int(n_features),
        predicted_counts=dict(sorted(Counter(r["category"] for r in rows).items())),
    )
    if write:
        others = [r for r in lab.read("predicted_labels").to_pylist() if r["taxonomy_id"] != tax.id]
        with lab.write("propagate") as txn:
            txn.clear("predicted_labels")
            txn.append("predicted_labels", others + rows)
            txn.summary["predicted_labels"] = len(rows)
        report.written = True
    return report
