"""The labels panel of a trajectory: judge, human, gold and predicted labels, and the review form.

Saving goes through `submit_review` (trajlab.review); the form never writes anywhere else.
"""

from __future__ import annotations

import itertools
import re
from typing import TYPE_CHECKING, Any

from dash import ALL, Input, Output, State, dcc, html, no_update
from dash import ctx as dash_ctx
from dash.exceptions import PreventUpdate

from ..errors import TrajlabError
from ..review import SPECIAL_CATEGORIES
from ._components import message, pre, problems_message
from ._review import TrajectoryLabels, submit_review, trajectory_labels
from ._text import clean_line

if TYPE_CHECKING:
    from ._app import DashContext
    from ._page_trajectory import TrajectoryData


_LINK_IDS = itertools.count()


def category_options(ctx: DashContext) -> list[dict[str, str]]:
    tax = ctx.source.taxonomy
    names = {c.id: c.name for c in getattr(tax, "categories", [])}
    names.update({"not_a_failure": "Not a failure", "unsure": "Unsure"})
    return [
        {"label": f"{names.get(c, c)} ({c})", "value": c} for c in [*tax.category_ids, *SPECIAL_CATEGORIES]
    ]


def _step_button(step: int | None, label: str | None = None) -> Any:
    if step is None:
        return html.Span("none", className="muted")
    # The same step is often linked several times in one panel (decisive step, evidence, candidates):
    # `n` keeps the ids unique, as Dash requires (duplicate ids silently disable the callback).
    return html.Button(
        label or f"step {step}",
        id={"type": "goto-step", "step": int(step), "n": next(_LINK_IDS)},
        className="link-button",
    )


def _judge_block(ctx: DashContext, r: dict[str, Any], under_review: bool) -> html.Div:
    sec = ctx.secrets
    who = "LLM judge" if r["judge"] != "rules" else "rules judge"
    title: list[Any] = [html.B(who), f" ({clean_line(r.get('model'), 40, sec)})" if r.get("model") else ""]
    if under_review:
        title.append(html.Span("under review", className="chip small"))
    body: list[Any] = [html.Div(title, className="label-title")]
    if r["status"] != "labeled":
        body.append(
            html.Div(f"{r['status']}: {clean_line(r.get('status_reason'), 300, sec)}", className="muted")
        )
        return html.Div(body, className="label-block judge")
    conf = r.get("confidence")
    pill_id: dict[str, Any] = {"id": "judge-category"} if under_review else {}
    body.append(
        html.Div(
            [
                html.Span(r.get("category") or "(none)", className="category-pill", **pill_id),
                f" confidence {conf:.2f}" if conf is not None else "",
                " · secondary: " + ", ".join(r["secondary_categories"])
                if r.get("secondary_categories")
                else "",
            ]
        )
    )
    body.append(html.Div(["decisive step: ", _step_button(r.get("decisive_step_index"))]))
    ev = list(r.get("evidence_steps") or [])
    quotes = list(r.get("evidence_quotes") or [])
    verified = list(r.get("evidence_verified") or [])
    if ev:
        items = []
        for i, s in enumerate(ev):
            q = quotes[i] if i < len(quotes) else None
            v = verified[i] if i < len(verified) else None
            mark = "" if v is None else (" ✓ found in step" if v else " ✗ not found in step")
            items.append(
                html.Li(
                    [
                        _step_button(s),
                        f" “{clean_line(q, 240, sec)}”" if q else "",
                        html.Span(mark, className="muted"),
                    ]
                )
            )
        body += [html.Div("evidence:"), html.Ul(items, className="evidence")]
    if r.get("rationale"):
        body += [html.Div("rationale:"), pre(r["rationale"], "block short", secrets=sec)]
    if r.get("coverage"):
        body.append(html.Div(f"rule: {clean_line(r['coverage'], 200, sec)}", className="muted"))
    return html.Div(body, className="label-block judge")


def labels_body(ctx: DashContext, d: TrajectoryData, labels: TrajectoryLabels) -> list[Any]:
    sec = ctx.secrets
    out: list[Any] = []
    warning = problems_message(labels.problems, ctx.source.store, sec)
    if warning is not None:
        out.append(warning)
    if not ctx.blind:
        if labels.judge:
            for r in labels.judge:
                out.append(
                    _judge_block(
                        ctx,
                        r,
                        labels.under_review is not None and r["label_id"] == labels.under_review["label_id"],
                    )
                )
        else:
            out.append(message("No judge label yet (`trajlab judge LAB`)."))
    else:
        out.append(message("Blind review: judge labels are hidden."))
    if d.dag.candidates:
        out.append(
            html.Div(
                [
                    html.Div(html.B("DAG decisive-step candidates"), className="label-title"),
                    html.Ol(
                        [
                            html.Li(
                                [
                                    _step_button(
                                        c.get("step_index"),
                                        None if c.get("step_index") is not None else "missing branch",
                                    ),
                                    f" {clean_line(c.get('reason'), 200, sec)} ({c.get('signal')}, {c.get('score', 0):.2f})",
                                ]
                            )
                            for c in d.dag.candidates[:3]
                        ]
                    ),
                ],
                className="label-block candidates",
            )
        )
    humans = []
    for h in labels.human:
        step = h.get("decisive_step_index")
        humans.append(
            html.Li(
                [
                    html.B(clean_line(h["annotator"], 40, sec)),
                    f" ({'file ' + str(h.get('dataset')) + '/' if h.get('live') else 'lab, dataset '}"
                    f"{clean_line(h['annotator'], 40, sec) + '.jsonl' if h.get('live') else h.get('dataset')}): ",
                    html.Span(h["category"], className="category-pill human"),
                    " · decisive ",
                    _step_button(step),
                    f" · {h['review_action']}" if h.get("review_action") else "",
                    f" · “{clean_line(h['note'], 200, sec)}”" if h.get("note") else "",
                ],
                className="human-label",
            )
        )
    out.append(
        html.Div(
            [
                html.Div(html.B("Human labels"), className="label-title"),
                html.Ul(humans) if humans else html.Div("none yet", className="muted"),
            ],
            className="label-block humans",
            id="human-labels",
        )
    )
    if labels.gold:
        g = labels.gold[0]
        out.append(
            html.Div(
                [
                    html.B("Gold: "),
                    html.Span(g["category"], className="category-pill"),
                    f" ({g['method']})",
                    " · decisive ",
                    _step_button(g.get("decisive_step_index")),
                ],
                className="label-block",
            )
        )
    if labels.predicted and not ctx.blind:
        p = labels.predicted[0]
        out.append(
            html.Div(
                [
                    html.B("Predicted: "),
                    f"{p['category']} (p = {p['probability']:.2f}; classifier, not a review)",
                ],
                className="label-block muted",
            )
        )
    return out


def labels_layout(ctx: DashContext, d: TrajectoryData) -> html.Div:
    return html.Div(
        [
            html.H3("Labels"),
            html.Div(id="labels-body"),
            html.H4("Your review"),
            html.Div(id="review-as", className="hint"),
            html.Div(
                [
                    html.Button(
                        "Accept judge label",
                        id="review-accept",
                        className="primary",
                        style={"display": "none"} if ctx.blind else None,
                    ),
                    html.Span(" or give your own label:", className="muted"),
                ],
                className="review-row",
            ),
            html.Div(
                [
                    html.Label("category", htmlFor="review-category"),
                    dcc.Dropdown(
                        id="review-category",
                        options=category_options(ctx),
                        placeholder="choose a category",
                        clearable=True,
                    ),
                ],
                className="review-field",
            ),
            html.Div(
                [
                    html.Label("decisive step", htmlFor="review-decisive"),
                    # text, checked on the server: a number input hands Dash None for `2.7` or `-1`,
                    # which would save a label with no decisive step instead of refusing it
                    dcc.Input(
                        id="review-decisive",
                        type="text",
                        inputMode="numeric",
                        placeholder="step",
                        style={"width": "7em"},
                    ),
                    html.Button("use selected step", id="review-use-selected", className="small"),
                ],
                className="review-field",
            ),
            html.Div(
                [
                    html.Label("evidence steps", htmlFor="review-evidence"),
                    dcc.Input(
                        id="review-evidence", type="text", placeholder="e.g. 3, 7", style={"width": "12em"}
                    ),
                ],
                className="review-field",
            ),
            html.Div(
                [
                    html.Label("note", htmlFor="review-note"),
                    dcc.Textarea(id="review-note", style={"width": "100%", "height": "60px"}),
                ],
                className="review-field",
            ),
            html.Button("Save label", id="review-save", className="primary"),
            html.Div(id="review-msg"),
        ],
        className="panel labels",
    )


def _step(value: Any) -> int | None:
    """The decisive step typed in the form: empty -> None, else one step number (0, 1, 2 ...)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not (text.isascii() and text.isdigit()):
        raise ValueError(f"the decisive step must be one step number (0, 1, 2 ...), not {text!r}")
    return int(text)


def _steps(text: str | None) -> list[int] | None:
    if not text or not text.strip():
        return None
    parts = [p for p in re.split(r"[\s,;]+", text.strip()) if p]
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise ValueError(f"evidence steps must be step numbers separated by commas, not {text!r}")
    return [int(p) for p in parts]


def register_labels(app: Any, ctx: DashContext) -> None:
    @app.callback(
        Output("labels-body", "children"),
        Output("review-as", "children"),
        Output("review-accept", "style"),
        Input("traj-id", "data"),
        Input("labels-version", "data"),
        Input("annotator", "value"),
    )
    def _labels(tid: str | None, _v: Any, annotator: str | None) -> tuple[Any, Any, dict[str, str] | None]:
        if not tid:
            raise PreventUpdate
        d = ctx.trajectories.get(ctx, tid)
        annotator = (annotator or "").strip()  # the name saving uses (`_save` strips it too)
        try:
            who: Any = (
                f"reviewing as {annotator} → {ctx.source.store.path_for(annotator)}"
                if annotator
                else "enter your name as reviewer (top right) to save labels"
            )
        except TrajlabError as e:  # a name that cannot be a file name (`../x`, `<img ...>`)
            who = message(str(e), "error")
        labels = trajectory_labels(ctx.source, tid)
        can_accept = not ctx.blind and labels.under_review is not None
        hide = None if can_accept else {"display": "none"}
        try:
            return labels_body(ctx, d, labels), who, hide
        except TrajlabError as e:
            return [message(str(e), "error")], who, hide

    @app.callback(
        Output("review-msg", "children"),
        Output("labels-version", "data"),
        Input("review-accept", "n_clicks"),
        Input("review-save", "n_clicks"),
        State("review-category", "value"),
        State("review-decisive", "value"),
        State("review-evidence", "value"),
        State("review-note", "value"),
        State("annotator", "value"),
        State("traj-id", "data"),
        State("labels-version", "data"),
        prevent_initial_call=True,
    )
    def _save(
        _a: int | None,
        _s: int | None,
        category: str | None,
        decisive: Any,
        evidence: str | None,
        note: str | None,
        annotator: str | None,
        tid: str,
        version: int | None,
    ) -> tuple[html.Div, Any]:
        accept = dash_ctx.triggered_id == "review-accept"
        try:
            res = submit_review(
                ctx.source,
                tid,
                (annotator or "").strip(),
                accept=accept,
                # "Accept" takes the judge's label as it is: category, decisive step and evidence.
                category=None if accept else category,
                decisive_step_index=None if accept else _step(decisive),
                evidence_steps=None if accept else _steps(evidence),
                note=(note or "").strip() or None,
                mode="blind" if ctx.blind else "normal",
                reviewers_per_item=ctx.reviewers,
            )
        except (TrajlabError, ValueError) as e:
            return message(str(e), "error"), no_update
        return message(res.message, "ok"), (version or 0) + 1

    @app.callback(
        Output("review-decisive", "value"),
        Input("review-use-selected", "n_clicks"),
        State("selected-step", "data"),
        prevent_initial_call=True,
    )
    def _use_selected(_n: int | None, step: int | None) -> int:
        if step is None:
            raise PreventUpdate
        return step

    # A step link (decisive step, evidence, candidates, human labels) opens that step in the inspector.
    # Clientside: Dash also calls pattern-matching callbacks when their components appear, and a
    # server round trip for each labels panel drawn would only answer "nothing to do".
    app.clientside_callback(
        """function (clicks) {
            const dc = window.dash_clientside;
            const t = (dc.callback_context.triggered || [])[0];
            if (!t || !t.value || !(clicks || []).some(Boolean)) { return dc.no_update; }
            return JSON.parse(t.prop_id.slice(0, t.prop_id.lastIndexOf('.'))).step;
        }""",
        Output("selected-step", "data", allow_duplicate=True),
        Input({"type": "goto-step", "step": ALL, "n": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
