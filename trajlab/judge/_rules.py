"""The offline rules judge: transparent detectors over step and DAG signals, no model needed.

Each detector looks for one documented signal (taxonomy `signals[].detector`); the taxonomy maps the
detector to a category. What the rules judge can decide: environment failures (missing tools and
modules, permissions, timeouts, network, resources), a media modality the task needs that was never
processed, a media tool that ran and failed or sampled a single frame, an unrecovered exception in the
agent's own code, and loops. From the DAG's `unevidenced_origin` candidate it also labels, with low
confidence, an answer value that no tool output, argument or input shows: a claim a message made
(`unsupported_claim`) or arithmetic a message did in its head (`mental_arithmetic`). What it cannot
decide, and abstains on: whether a transcript, an OCR reading or a fact was *wrong* when the tools ran
fine and the answer repeats what they showed, and reasoning errors that leave no unevidenced value.
Those need an LLM judge or a human.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ._signals import (
    INSTALLERS,
    INTERPRETERS,
    MEDIA,
    STRONG_FAMILIES,
    error_family,
    has_traceback,
    is_action,
    is_extraction,
    modality_of,
    needed_modalities,
    quote,
    recovered,
    scan_text,
    single_frame,
    tool_of,
)
from ._view import TrajectoryView

RULES_VERSION = "rules-2"
"""rules-2: `unsupported_claim` and `mental_arithmetic` from the DAG's `unevidenced_origin` candidates."""

CAPABILITIES = (
    "decides: environment failures (command not found, missing module, permission, timeout, network, "
    "out of memory/disk) that were never recovered; a media modality the task needs (audio, video, image) "
    "that was never processed; media tools that ran and failed or extracted a single frame; unrecovered "
    "exceptions in the agent's own code; loops of identical steps; with low confidence, an answer value no "
    "tool output shows, first stated by a message (a claim, or arithmetic done in the message). Cannot "
    "decide (abstains): a wrong transcript, OCR reading or fact from tools that ran fine when the answer "
    "repeats what they showed, and wrong reasoning that leaves no unevidenced value."
)

# Groups in decision order: the first group with a hit decides the primary category.
_GROUP = {
    "network_error": 1,
    "permission_denied": 1,
    "resource_exhausted": 1,
    "timeout": 1,
    "missing_dependency": 1,
    "command_not_found": 1,
    "asr_never_run": 2,
    "frames_never_extracted": 2,
    "image_never_viewed": 2,
    "asr_failed": 3,
    "frames_failed": 3,
    "sparse_frames": 3,
    "code_exception": 4,
    "repeated_step": 5,
    "web_never_searched": 5,
    "mental_arithmetic": 6,
    "unsupported_claim": 6,
}
_NEVER = {"audio": "asr_never_run", "video": "frames_never_extracted", "image": "image_never_viewed"}
_FAILED = {"audio": "asr_failed", "video": "frames_failed"}
_ARITHMETIC_RE = re.compile(r"\d\s*(?:[-+*/×x÷]|\bplus\b|\bminus\b|\btimes\b)\s*\(?\$?\d|=\s*\$?-?\d")
_WORKED_RE = re.compile(
    r"\b(?:sum|subtotal|add(?:ing|ed)? (?:them |it |these )?up|average|difference|multipl\w+|divid\w+|"
    r"percent|ratio|twice|half of|doubled?)\b",
    re.I,
)
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?![\w])")
_EMPTY_OUTPUT = re.compile(r"frame=\s*0\b|output file is empty|nothing was encoded|no speech detected", re.I)


@dataclass
class Hit:
    detector: str
    step_index: int | None
    quote: str
    confidence: float
    note: str
    weak: bool = False
    """An infra error the agent never tried to work around (may really be insufficient exploration)."""
    modality: str | None = None


@dataclass
class RulesVerdict:
    category: str | None
    decisive_step: int | None
    confidence: float | None
    hits: list[Hit] = field(default_factory=list)
    used: list[Hit] = field(default_factory=list)
    secondary: list[str] = field(default_factory=list)
    rationale: str = ""
    coverage: str = ""
    unmapped: list[str] = field(default_factory=list)


def _decisive_of(view: TrajectoryView, step: dict[str, Any]) -> int:
    """The step that introduced a failure: an execution step points at the step whose code it ran."""
    meta = step.get("metadata")
    if isinstance(meta, str) and "executes_step" in meta:
        import json

        try:
            m = json.loads(meta)
        except ValueError:
            m = {}
        src = m.get("executes_step") if isinstance(m, dict) else None
        if isinstance(src, int) and src in view.step_indexes:
            return src
    return int(step["step_index"])


def _infra_hits(view: TrajectoryView) -> list[Hit]:
    hits = []
    steps = view.steps
    for pos, s in enumerate(steps):
        if not is_action(s) or not view.is_failed(s):
            continue
        fam = error_family(s)
        if fam is None:
            continue
        idx = int(s["step_index"])
        if recovered(view, idx):
            continue
        mod = modality_of(view, s)
        later = steps[pos + 1 :]
        tried_again = any(
            is_action(x) and (tool_of(x) in INSTALLERS or (mod in MEDIA and is_extraction(view, x, mod)))
            for x in later
        )
        weak = fam not in STRONG_FAMILIES and not tried_again and tool_of(s) not in INSTALLERS
        conf = 0.8 if not weak else 0.6
        note = f"unrecovered {fam.replace('_', ' ')} in {tool_of(s) or 'a tool'} (#{idx})"
        hits.append(Hit(fam, _decisive_of(view, s), quote(s), conf, note, weak=weak, modality=mod))
    return hits


def _media_hits(view: TrajectoryView, infra: list[Hit]) -> list[Hit]:
    hits: list[Hit] = []
    need = needed_modalities(view)
    final = view.final_step_index()
    abandoned = {h.step_index for h in infra if h.weak}
    for mod, why in need.items():
        attempts = [s for s in view.steps if is_extraction(view, s, mod)]
        real = [
            s
            for s in attempts
            if _decisive_of(view, s) not in abandoned and int(s["step_index"]) not in abandoned
        ]
        if not real:
            what = {
                "audio": "no audio step (ASR, audio extraction)",
                "video": "no frames extracted",
                "image": "the image was never opened or analysed",
            }[mod]
            gave_up = f"; one failed attempt abandoned at #{attempts[0]['step_index']}" if attempts else ""
            hits.append(
                Hit(_NEVER[mod], final, "", 0.75, f"{mod} needed ({why}) but {what}{gave_up}", modality=mod)
            )
            continue
        ok = [s for s in real if not view.is_failed(s)]
        if not ok and all(tool_of(s) in INTERPRETERS for s in real):
            # Only ad-hoc scripts were tried, they failed, and the agent moved on: never processed.
            hits.append(
                Hit(
                    _NEVER[mod],
                    final,
                    quote(real[-1]),
                    0.7,
                    f"{mod} needed ({why}) but only a failing ad-hoc script (#{real[-1]['step_index']}) touched it",
                    modality=mod,
                )
            )
            continue
        if mod in _FAILED:
            failed = [
                s
                for s in real
                if view.is_failed(s)
                and error_family(s) is None
                and tool_of(s) not in INTERPRETERS
                and not recovered(view, int(s["step_index"]))
            ]
            empty = [
                s
                for s in ok
                if _EMPTY_OUTPUT.search(scan_text(s, ("output",))) or not str(s.get("output") or "").strip()
            ]
            bad = failed + ([] if len(empty) < len(ok) else empty)
            if bad:
                s = bad[-1]
                hits.append(
                    Hit(
                        _FAILED[mod],
                        int(s["step_index"]),
                        quote(s),
                        0.6,
                        f"{mod} step #{s['step_index']} ({tool_of(s)}) failed or produced nothing and was not redone",
                        modality=mod,
                    )
                )
                continue
        if mod == "video" and ok and all(single_frame(s) for s in ok):
            s = ok[0]
            hits.append(
                Hit(
                    "sparse_frames",
                    int(s["step_index"]),
                    str(s.get("command") or "")[:160],
                    0.55,
                    f"the only video extraction (#{s['step_index']}) took a single frame",
                    modality=mod,
                )
            )
    return hits


def _code_hits(view: TrajectoryView, infra_steps: set[int]) -> list[Hit]:
    hits = []
    for s in view.steps:
        idx = int(s["step_index"])
        if not is_action(s) or not view.is_failed(s) or idx in infra_steps or error_family(s) is not None:
            continue
        if modality_of(view, s) not in (None, "compute", "text", "file") or not has_traceback(s):
            continue
        if recovered(view, idx):
            continue
        hits.append(
            Hit(
                "code_exception",
                _decisive_of(view, s),
                quote(s, re.compile(r"Error|Exception")),
                0.5,
                f"unrecovered exception in the agent's code at #{idx}",
            )
        )
    return hits[:1]


def _repeat_hits(view: TrajectoryView) -> list[Hit]:
    run: list[dict[str, Any]] = []
    best: list[dict[str, Any]] = []

    def key(s: dict[str, Any]) -> tuple[Any, ...]:
        body = s.get("command") or s.get("arguments") or s.get("text") or ""
        return (s.get("agent_id"), s.get("kind"), " ".join(str(body).split())[:500])

    for s in view.steps:
        if s.get("kind") not in ("tool_call", "assistant") or not (
            s.get("command") or s.get("arguments") or s.get("text")
        ):
            run = []
            continue
        if run and key(run[-1]) == key(s):
            run.append(s)
        else:
            run = [s]
        if len(run) > len(best):
            best = list(run)
    if len(best) < 3:
        return []
    s = best[0]
    return [
        Hit(
            "repeated_step",
            int(s["step_index"]),
            str(s.get("command") or s.get("text") or "")[:160],
            0.5,
            f"the same step repeated {len(best)} times from #{s['step_index']}",
        )
    ]


def _web_hits(view: TrajectoryView) -> list[Hit]:
    domain = str(view.trajectory.get("domain") or "").lower()
    if domain not in ("web", "knowledge", "search", "browsing"):
        return []
    if any(modality_of(view, s) == "web" for s in view.steps if is_action(s)):
        return []
    return [Hit("web_never_searched", view.final_step_index(), "", 0.5, f"domain={domain} but no web step")]


def _computed(view: TrajectoryView, idx: int, term: str, text: str) -> bool:
    """Did the message at `idx` work the number out: an arithmetic expression or word (sum, subtotal,
    average, ...), or other numbers that the task or an earlier tool output shows (it combined evidence,
    in its head)?"""
    if _ARITHMETIC_RE.search(text) or _WORKED_RE.search(text):
        return True
    # at most 20 numbers against the head and tail of each output: a message or log made of numbers
    # must not cost numbers x output bytes
    others = list(dict.fromkeys(n for n in _NUMBER_RE.findall(text) if n != term and len(n.strip("-")) > 1))[
        :20
    ]
    if not others:
        return False
    shown = [str(view.trajectory.get("task") or "")]
    shown += [scan_text(s, ("output",)) for s in view.steps if is_action(s) and int(s["step_index"]) < idx]
    return any(n in x for n in others for x in shown)


def _claim_hits(view: TrajectoryView) -> list[Hit]:
    """A value of the final answer no tool output, argument or input shows (the DAG's
    `unevidenced_origin`): the message that first stated it made a claim or did arithmetic in its head."""
    hits: list[Hit] = []
    by_idx = {int(s["step_index"]): s for s in view.steps}
    for c in view.candidates():
        if not isinstance(c, dict) or c.get("signal") != "unevidenced_origin":
            continue
        idx, term = c.get("step_index"), c.get("term")
        if not isinstance(idx, int):
            continue
        step = by_idx.get(idx)
        if step is None or not isinstance(term, str) or not term:
            continue
        text = str(step.get("text") or "")
        first_line = text.strip().splitlines()[0][:160] if text.strip() else ""
        if (term[:1].isdigit() or term[:1] == "-") and _computed(view, idx, term, text):
            note = f"#{idx} worked out {term}, which the answer gives, without running any computation"
            hits.append(Hit("mental_arithmetic", idx, first_line, 0.5, note))
        else:
            note = f"#{idx} stated {term}, which the answer gives and no tool output, argument or input shows"
            hits.append(Hit("unsupported_claim", idx, first_line, 0.45, note))
    return hits[:2]


def detect(view: TrajectoryView) -> list[Hit]:
    """Every detector that fires on the trajectory."""
    infra = _infra_hits(view)
    media = _media_hits(view, infra)
    never_mods = {h.modality for h in media if h.detector in _NEVER.values()}
    # A weak infra error on a modality that was then never processed is the abandonment behind a
    # never-run signal, not an environment failure: keep it only as context.
    infra = [h for h in infra if not (h.weak and h.modality in never_mods)]
    code = _code_hits(view, {h.step_index for h in infra if h.step_index is not None})
    return infra + media + code + _repeat_hits(view) + _web_hits(view) + _claim_hits(view)


def decide(view: TrajectoryView, detector_map: dict[str, str]) -> RulesVerdict:
    if not view.steps:
        return RulesVerdict(None, None, None, coverage="abstained: no steps recorded")
    hits = detect(view)
    mapped = [h for h in hits if h.detector in detector_map]
    unmapped = sorted({h.detector for h in hits if h.detector not in detector_map})
    if not mapped:
        reason = "no rule applies"
        need = needed_modalities(view)
        if need:
            reason += f" ({', '.join(sorted(need))} processed without a detectable failure)"
        if unmapped:
            reason += f"; fired but not in this taxonomy: {', '.join(unmapped)}"
        return RulesVerdict(
            None, None, None, hits, [], [], "", f"abstained: {reason}. {CAPABILITIES}", unmapped
        )
    group = min(_GROUP.get(h.detector, 9) for h in mapped)
    top = [h for h in mapped if _GROUP.get(h.detector, 9) == group]
    if group == 1:
        strong = [h for h in top if not h.weak] or top
        chosen = strong[-1]  # the last failed attempt: after it the agent gave up
    else:
        chosen = min(top, key=lambda h: (h.step_index if h.step_index is not None else 10**9, -h.confidence))
    category = detector_map[chosen.detector]
    secondary = []
    for h in mapped:
        c = detector_map[h.detector]
        if c != category and c not in secondary:
            secondary.append(c)
    used = [chosen] + [h for h in mapped if h is not chosen]
    rationale = "; ".join(h.note for h in used[:4])
    coverage = f"rule {chosen.detector}: {chosen.note}"
    return RulesVerdict(
        category,
        chosen.step_index,
        chosen.confidence,
        hits,
        used,
        secondary[:3],
        rationale,
        coverage,
        unmapped,
    )
