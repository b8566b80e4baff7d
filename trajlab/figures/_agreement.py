"""Agreement: the confusion matrix of a judge against adjudicated (gold) or human majority labels."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import pyarrow as pa

from ..errors import ConfigError
from ..review import agreement
from ..store import query
from ._result import FigureResult, LabLike, open_lab, skipped
from ._style import category_label, category_order, safe_text, styled

JUDGE_SQL = """\
-- each judge's latest `labeled` label per trajectory (the rater names of trajlab.review.agreement)
SELECT 'judge:' || judge AS rater, trajectory_id, category, decisive_step_index
FROM judge_labels
WHERE status = 'labeled'
QUALIFY row_number() OVER (PARTITION BY judge, trajectory_id ORDER BY created_at DESC, label_id) = 1
"""

HUMAN_SQL = """\
-- human reference: each annotator's latest label, then the trajectory's majority (ties: unsure)
WITH latest AS (
    SELECT trajectory_id, annotator, category
    FROM human_labels
    QUALIFY row_number() OVER (
        PARTITION BY trajectory_id, annotator ORDER BY created_at DESC, source_line DESC) = 1
),
votes AS (
    SELECT trajectory_id, category, count(*) AS votes,
        max(count(*)) OVER (PARTITION BY trajectory_id) AS top
    FROM latest GROUP BY trajectory_id, category
)
SELECT trajectory_id, CASE WHEN count(*) > 1 THEN 'unsure' ELSE min(category) END AS category
FROM votes WHERE votes = top GROUP BY trajectory_id
"""

REFERENCES = ("gold", "human")


def agreement_confusion(
    lab: LabLike,
    width: str = "single",
    reference: str = "gold",
    judge: str | None = None,
) -> FigureResult:
    """Confusion matrix: rows = reference label (`gold` adjudicated, or `human` majority), columns = the
    judge's label; cells show counts, shaded by the share of the row. `judge` names the rater
    (`judge:llm`, `judge:rules`, or `llm`/`rules`; default: the LLM judge when there is one).
    `unsure` references are left out, as in `trajlab agreement`; a missing judge label is `(none)`.
    """
    name, title = "agreement_confusion", "Judge vs reference labels"
    if reference not in REFERENCES:
        raise ConfigError(f"reference must be gold or human, not {reference!r}")
    lab = open_lab(lab)
    params: dict[str, Any] = {"reference": reference, "judge": judge}
    sql = JUDGE_SQL if reference == "gold" else JUDGE_SQL + "\n;\n" + HUMAN_SQL
    need = "gold_labels" if reference == "gold" else "human_labels"
    for table, reason in (("judge_labels", "no judge labels"), (need, f"no {reference} labels")):
        if lab.rows(table) == 0:
            return skipped(name, title, reason, width, sql=sql, params=params, analysis="review.agreement")
    if reference == "gold":
        report = agreement(lab, k=1)
        confusions = report.confusion
    else:
        judges = query(lab, JUDGE_SQL).to_pylist()
        humans = query(lab, HUMAN_SQL).to_pylist()
        rows: list[dict[str, Any]] = [{**r, "kind": "judge"} for r in judges]
        rows += [{"rater": "gold", "kind": "gold", **r} for r in humans]
        confusions = agreement(rows, k=1).confusion
    if not confusions:
        return skipped(
            name,
            title,
            f"no trajectory has both a judge label and a {reference} label",
            width,
            sql=sql,
            params=params,
            analysis="review.agreement",
        )
    rater = _pick(list(confusions), judge)
    c = confusions[rater]
    params.update(judge=rater, n=c["n"], accuracy=c["accuracy"], coverage=c["coverage"])
    labels = [str(x) for x in c["labels"]]
    order = category_order([x for x in labels if x != "(none)"]) + (["(none)"] if "(none)" in labels else [])
    idx = [labels.index(x) for x in order]
    matrix = [[c["matrix"][i][j] for j in idx] for i in idx]
    refs = [x for x in order if x != "(none)"]
    ref_rows = [(x, matrix[order.index(x)]) for x in refs if sum(matrix[order.index(x)]) > 0]
    cols = [x for j, x in enumerate(order) if any(m[j] for _, m in ref_rows) or x in refs]
    data_rows = []
    for ref, counts in ref_rows:
        total = sum(counts)
        for x in cols:
            n = counts[order.index(x)]
            data_rows.append(
                {"reference": ref, "judge": x, "n": n, "row_share": n / total if total else None}
            )
    data = pa.Table.from_pylist(data_rows)
    z = [[r["row_share"] for r in data_rows if r["reference"] == ref] for ref, _ in ref_rows]
    text = [
        [str(r["n"]) if r["n"] else "" for r in data_rows if r["reference"] == ref] for ref, _ in ref_rows
    ]
    ylab = [category_label(ref) for ref, _ in ref_rows]
    xlab = [category_label(x) for x in cols]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=xlab,
            y=ylab,
            text=text,
            texttemplate="%{text}",
            colorscale=[[0.0, "#FFFFFF"], [1.0, "#0072B2"]],
            zmin=0,
            zmax=1,
            xgap=1,
            ygap=1,
            colorbar={"title": {"text": "row share", "side": "right"}, "tickformat": ".0%", "len": 0.9},
            hovertemplate="reference %{y}, judge %{x}: %{text} (%{z:.0%} of row)<extra></extra>",
        )
    )
    styled(fig, width, height_in=1.2 + 0.22 * len(ylab))
    ref_title = "adjudicated (gold)" if reference == "gold" else "human majority"
    fig.update_xaxes(title={"text": f"{safe_text(rater, 40)} label"}, tickangle=-35, showline=False, ticks="")
    fig.update_yaxes(
        title={"text": ref_title}, autorange="reversed", showgrid=False, showline=False, ticks=""
    )
    return FigureResult(
        name,
        title,
        fig,
        data,
        sql,
        params,
        "review.agreement",
        notes=[
            f"{rater} vs {reference}: accuracy {c['accuracy']:.3f} over {c['n']} trajectories "
            f"({c['n']} of {c['n_gold']} {reference}-labeled)"
        ],
        caption=f"Confusion of the {rater} labels against {ref_title} labels over {c['n']} failed "
        f"trajectories (accuracy {c['accuracy']:.0%}); cells give counts, shading the share of the row.",
        width=width,
    )


def _pick(raters: list[str], judge: str | None) -> str:
    if judge:
        want = judge if judge.startswith("judge:") else f"judge:{judge}"
        hits = [r for r in raters if r == want or r.startswith(want + "/")]
        if not hits:
            raise ConfigError(f"no confusion matrix for judge {judge!r}; judges: {', '.join(raters)}")
        return hits[0]
    llm = [r for r in raters if r.startswith("judge:llm")]
    return (llm or sorted(raters))[0]
