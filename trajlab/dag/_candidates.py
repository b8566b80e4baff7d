"""Ranked candidates for the decisive step: where a run most likely went wrong, with the signal why.

Each candidate is `{"step_index": int | None, "reason": str, "signal": str, "score": float}` (plus
`term`, the answer value it traces, for `unevidenced_origin`); a null step means something that never happened (a missing modality branch). Scores are fixed per signal
(see `SIGNALS` and docs/dag.md) so the judges can compare them across runs; a step that triggers
several signals keeps its best one and names the others in its reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._answer import SHORT_ANSWER_WORDS, content_words, is_evidence, numbers_in, task_text, term_re
from ._arith import checked_arithmetic
from ._stepio import SETUP_TOOLS

if TYPE_CHECKING:
    from ._build import _Builder

SIGNALS: dict[str, float] = {
    "unrecovered_error_on_answer_path": 0.95,
    "unrecovered_error": 0.90,
    "last_unrecovered_error": 0.88,
    "single_frame_sampling": 0.87,
    "unevidenced_origin": 0.865,
    "knowledge_instead_of_evidence": 0.862,
    "answer_without_modality": 0.86,
    "missing_modality_branch": 0.85,
    "answer_unsupported": 0.83,
    "answer_value_unsupported": 0.80,
    "unobserved_source": 0.78,
    "modality_branch_unused": 0.75,
    "external_knowledge_on_answer_path": 0.74,
    "answer_source": 0.70,
    "no_final_answer": 0.70,
    "perception_step": 0.62,
    "later_unrecovered_error": 0.60,
    "stopped_after": 0.55,
    "superseded_error": 0.50,
    "first_error": 0.45,
    "cascade_error": 0.40,
    "failed_answer": 0.35,
}
"""Signal -> base score. Later entries of the same signal lose 0.02 each (most recent first)."""
MAX_CANDIDATES = 10
ORIGIN_MAX_STATEMENTS = 50
"""A term of the answer that more messages than this state is common talk, not a claim to trace."""
_CASCADE = ("sibling tool call errored", "cancelled because", "canceled because", "aborted because another")
_WEB_TOOLS = frozenset(["web_search", "web_fetch", "browser", "curl", "wget", "http", "lynx", "w3m"])
_SINGLE_FRAME = ("-frames:v 1 ", "-vframes 1 ", "-frames 1 ")
_SOURCE_RULES = frozenset(["answer-value", "answer-term", "answer-derived"])
_MEDIA = ("audio", "video", "image", "document")


class _Ranker:
    def __init__(self) -> None:
        self.by_step: dict[int | None, dict[str, Any]] = {}
        self.nulls: list[dict[str, Any]] = []

    def add(self, step: int | None, signal: str, reason: str, rank: int = 0, term: str | None = None) -> None:
        score = round(max(SIGNALS[signal] - 0.02 * rank, 0.05), 3)
        cand: dict[str, Any] = {"step_index": step, "reason": reason, "signal": signal, "score": score}
        if term is not None:
            cand["term"] = term
        if step is None:
            self.nulls.append(cand)
            return
        old = self.by_step.get(step)
        if old is None:
            self.by_step[step] = cand
        elif score > old["score"]:
            cand["reason"] += f"; also {old['signal']}"
            self.by_step[step] = cand
        elif signal != old["signal"] and f"also {signal}" not in old["reason"]:
            old["reason"] += f"; also {signal}"

    def ranked(self) -> list[dict[str, Any]]:
        allc = [*self.by_step.values(), *self.nulls]
        allc.sort(key=lambda c: (-c["score"], c["step_index"] is None, c["step_index"] or 0))
        return allc[:MAX_CANDIDATES]


def _what(b: _Builder, i: int) -> str:
    n = b.nodes[i]
    return f"step {i} ({n['tool'] or n['kind']}: {n['label'] or ''})"


def rank_candidates(b: _Builder, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """The ranked candidates of one built DAG (see the module docstring and docs/dag.md)."""
    r = _Ranker()
    _errors(b, ctx, r)
    missing = _modalities(b, ctx, r)
    _answer(b, ctx, r, missing)
    _origins(b, ctx, r)
    if ctx["errors"]:
        v = ctx["errors"][0]
        if b.nodes[v]["kind"] == "action":
            state = "recovered" if v in ctx["recovered"] else "not recovered"
            _add_error(b, r, v, "first_error", f"first error: {_what(b, v)} ({state})")
        else:  # an orphan result, an API error, a harness's parse-error feedback: no call to retry
            _add_error(b, r, v, "first_error", f"first error: {_what(b, v)}")
    answer = ctx["answer"]
    if not r.by_step and not r.nulls and answer is not None and b.t.get("outcome") == "failure":
        # nothing else points anywhere (an answer with no values or names to check, no errors): the
        # answer the grader rejected is where to look
        r.add(
            answer,
            "failed_answer",
            f"the run failed and no other signal fired: its answer, {_what(b, answer)}",
        )
    return r.ranked()


def _errors(b: _Builder, ctx: dict[str, Any], r: _Ranker) -> None:
    """Errors never recovered. A failed attempt that was retried (and the retry failed too) is
    superseded by its retry: the end of each failed retry chain stands for the episode."""
    nodes = b.nodes
    retried = set(ctx["retries"])
    plain = []
    for v in ctx["unrecovered"]:
        out = (b.by_idx[v].get("output") or "")[:300].lower()
        what = "timed out" if nodes[v]["status"] == "timeout" else "failed"
        if any(c in out for c in _CASCADE):
            _add_error(b, r, v, "cascade_error", f"{_what(b, v)} {what} because a sibling call failed")
        elif v in ctx["on"]:
            _add_error(
                b,
                r,
                v,
                "unrecovered_error_on_answer_path",
                f"{_what(b, v)} {what}, was never retried successfully, and its output still reached the answer",
            )
        elif v in retried:
            _add_error(
                b,
                r,
                v,
                "superseded_error",
                f"{_what(b, v)} {what}; its retry (step {ctx['retries'][v]}) failed too",
            )
        else:
            plain.append(v)
    for k, v in enumerate(plain):
        what = "timed out" if nodes[v]["status"] == "timeout" else "failed"
        if k == 0:
            _add_error(
                b,
                r,
                v,
                "unrecovered_error",
                f"first unrecovered error: {_what(b, v)} {what} and no retry succeeded",
            )
        elif k == len(plain) - 1:
            _add_error(
                b,
                r,
                v,
                "last_unrecovered_error",
                f"last unrecovered error before the answer: {_what(b, v)} {what}",
            )
        else:
            _add_error(
                b, r, v, "later_unrecovered_error", f"{_what(b, v)} {what} and no retry succeeded", rank=k - 1
            )


def _add_error(b: _Builder, r: _Ranker, v: int, signal: str, reason: str, rank: int = 0) -> None:
    """A candidate at a failed (or last) step; when that step ran code an earlier step wrote
    (`executes_step`), the candidate is that author: the executor only ran what it was given."""
    k = b.author_of.get(v)
    if k is None:
        r.add(v, signal, reason, rank)
    else:
        r.add(k, signal, f"{reason} (the code it ran was written by step {k})", rank)


def _modalities(b: _Builder, ctx: dict[str, Any], r: _Ranker) -> list[str]:
    """Required modalities with no step, or whose branch never reached the answer; returns them."""
    nodes = b.nodes
    by_mod: dict[str, list[int]] = {}
    for v in ctx["actions"]:
        if nodes[v]["tool"] not in SETUP_TOOLS:
            by_mod.setdefault(nodes[v]["modality"], []).append(v)
    branches: dict[str, str] = ctx["branches"]
    lacking: list[str] = []
    for m in ctx["required"]:
        steps_m = by_mod.get(m, []) or (
            [v for v in by_mod.get("video", []) if nodes[v]["branch"]] if m == "image" else []
        )
        if not steps_m:
            r.add(None, "missing_modality_branch", f"the task needs {m} but no step processed {m}")
            lacking.append(m)
            continue
        mine = [v for v in sorted(nodes) if nodes[v]["branch"] and branches.get(nodes[v]["branch"]) == m]
        if mine and not any(v in ctx["on"] for v in mine):
            last = mine[-1]
            lacking.append(m)
            r.add(
                last,
                "modality_branch_unused",
                f"the {m} branch ({nodes[last]['branch']}) never reached the answer; it stops at {_what(b, last)}",
            )
        if m == "video":
            frames = [v for v in mine if b.by_idx[v].get("tool") == "ffmpeg" and b.io[v].produced]
            singles = [
                v for v in frames if any(f in (b.by_idx[v].get("command") or "") + " " for f in _SINGLE_FRAME)
            ]
            if singles and len(singles) == len(frames):
                r.add(
                    singles[-1],
                    "single_frame_sampling",
                    f"the video was sampled at a single frame only ({_what(b, singles[-1])})",
                )
    return lacking


def _answer(b: _Builder, ctx: dict[str, Any], r: _Ranker, lacking: list[str]) -> None:
    nodes = b.nodes
    answer: int | None = ctx["answer"]
    support: dict[str, Any] = ctx["support"]
    on: set[int] = ctx["on"]
    required: list[str] = ctx["required"]
    if answer is None:
        if ctx["actions"]:
            r.add(None, "no_final_answer", "the run ended without a final answer")
            last = ctx["actions"][-1]
            _add_error(
                b, r, last, "stopped_after", f"the run stopped without an answer after {_what(b, last)}"
            )
        return
    if lacking:
        r.add(
            answer,
            "answer_without_modality",
            f"step {answer} answered without {' or '.join(lacking)} evidence the task needs",
        )
    # with no evidence step at all (a model answering from memory) "nothing supports it" singles out nothing
    evidenced = any(is_evidence(b, i) for i in nodes if i < answer)
    unsupported = evidenced and support["terms"] and not support["supported"]
    if unsupported:
        r.add(
            answer,
            "answer_unsupported",
            f"no evidence step supports any value, path or word the final answer (step {answer}) states",
        )
    elif evidenced and support["unsupported_values"]:
        vals = ", ".join(support["unsupported_values"][:5])
        r.add(
            answer,
            "answer_value_unsupported",
            f"the final answer (step {answer}) states {vals}, which no tool output contains",
        )
    hidden: list[int] = []
    if unsupported or (evidenced and support["unsupported_values"]):
        # Steps whose results the runner did not record (a hosted web search, say) may hold what we cannot see.
        hidden = [
            v
            for v in ctx["actions"]
            if v < answer and nodes[v]["status"] == "no-output" and nodes[v]["tool"] not in SETUP_TOOLS
        ]
        for k, v in enumerate(hidden[-3:][::-1]):
            r.add(
                v,
                "unobserved_source",
                f"{_what(b, v)} returned nothing the log shows; the unsupported answer may come from it",
                rank=k,
            )
    sources = sorted(
        {
            s
            for (s, d, t), (_, rule) in b.edges.items()
            if d == answer and t == "answer" and rule in _SOURCE_RULES and nodes[s]["kind"] == "action"
        },
        reverse=True,
    )
    webs: list[int] = []
    if required and "web" not in required:
        webs = sorted(
            (
                v
                for v in on
                if nodes[v]["kind"] == "action"
                and nodes[v]["modality"] == "web"
                and nodes[v]["tool"] in _WEB_TOOLS
            ),
            reverse=True,
        )
        for k, v in enumerate(webs):
            r.add(
                v,
                "external_knowledge_on_answer_path",
                f"{_what(b, v)} brought outside knowledge into the answer of a {'/'.join(required)} task",
                rank=k,
            )
        if lacking:
            # the answer lacks the media evidence the task needs and stands on a web step instead (on
            # its path, or an unrecorded search it may come from): that step is where the run turned
            # from the evidence to outside knowledge, more telling than the answer that followed
            outside = [*webs, *(v for v in hidden if nodes[v]["tool"] in _WEB_TOOLS)]
            if outside:
                v = max(outside)
                r.add(
                    v,
                    "knowledge_instead_of_evidence",
                    f"{_what(b, v)} brought outside knowledge where the task's {' or '.join(lacking)} "
                    "evidence was needed, and the answer stands on it",
                )
    for k, v in enumerate(sources):
        # Whether a misread value or a wrong formula went into a computation whose arithmetic is right
        # cannot be told from the log (the example runs plant both), so the rank stays; the reason says
        # which part is checked, for the judge.
        checked = (
            " (its arithmetic over the literals it was given checks out: a wrong value in them or a wrong "
            "formula, not the arithmetic)"
            if checked_arithmetic(b.by_idx[v])
            else ""
        )
        r.add(
            v,
            "answer_source",
            f"{_what(b, v)} printed the value the final answer states{checked}",
            rank=3 * k,
        )
    media = sorted(
        (
            v
            for v in on
            if nodes[v]["kind"] == "action"
            and nodes[v]["modality"] in (required or _MEDIA)
            and nodes[v]["status"] == "ok"
        ),
        reverse=True,
    )
    for k, v in enumerate(media):
        r.add(
            v,
            "perception_step",
            f"{_what(b, v)} extracted the {nodes[v]['modality']} evidence the answer rests on",
            rank=k,
        )


def _origins(b: _Builder, ctx: dict[str, Any], r: _Ranker) -> None:
    """A value or name the final answer gives that no tool output, tool argument or input shows before
    it: the earliest message (text or reasoning) that states it is where it came from, unevidenced (a
    claim from memory, a misread page retold, arithmetic done in the head)."""
    answer: int | None = ctx["answer"]
    if answer is None or b.nodes[answer]["kind"] != "text":
        return
    text = b.by_idx[answer].get("text") or ""
    final = (b.t.get("final_answer") or "").strip()
    if final and final in text:
        text = final
    elif len(text.split()) > SHORT_ANSWER_WORDS:
        return
    task = task_text(b)
    terms = [v for v in numbers_in(text) if not (v in task and term_re(v).search(task))]
    terms += [w for w in content_words(text, task.lower()) if w[0].isupper()]
    if not terms:
        return
    nodes = b.nodes
    statements: list[tuple[int, str]] = []
    shown: list[str] = []
    for i in sorted(nodes):
        if i >= answer:
            break
        s = b.by_idx[i]
        if nodes[i]["kind"] in ("text", "reasoning"):
            if s.get("text"):
                statements.append((i, s["text"]))
            continue
        if nodes[i]["tool"] == "image_read":
            # the model looked at an image: what it says next may be read off the picture, which the
            # log does not hold as text, so later statements are not traced
            break
        shown += [x for x in (s.get("arguments"), s.get("output"), s.get("text")) if x]
    k = 0
    for term in terms:
        forms = list(dict.fromkeys((term, term.lower(), term.upper(), term.capitalize())))
        # a substring test first (in C), the boundary regex only where the term occurs at all
        if any(f in x and term_re(f).search(x) for x in shown for f in forms):
            continue
        rx = term_re(term)
        hits = [i for i, x in statements if term in x and rx.search(x)]
        if not hits or len(hits) > ORIGIN_MAX_STATEMENTS:
            continue
        first = hits[0]
        r.add(
            first,
            "unevidenced_origin",
            f"{_what(b, first)} first states {term!r}, which the final answer (step {answer}) gives and no "
            "tool output, argument or input shows",
            rank=k,
            term=term,
        )
        k += 1
