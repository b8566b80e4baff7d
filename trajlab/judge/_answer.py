"""Parse and validate a judge's answer: categories in the taxonomy, steps that exist, sane values."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..taxonomy import Taxonomy
from ._prompt import MAX_EVIDENCE, MAX_QUOTE

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.I)
_STEP = re.compile(r"^#?\s*(\d+)$")


@dataclass
class Answer:
    primary: str
    secondary: list[str]
    decisive_step: int
    evidence_steps: list[int]
    evidence_quotes: list[str]
    rationale: str
    confidence: float
    decisive_in_window: bool = True
    evidence_verified: list[bool] = field(default_factory=list)


def _json(content: str) -> tuple[Any, str | None]:
    text = _FENCE.sub("", content.strip())
    try:
        return json.loads(text), None
    except ValueError as e:
        first, last = text.find("{"), text.rfind("}")
        if 0 <= first < last:
            try:
                return json.loads(text[first : last + 1]), None
            except ValueError:
                pass
        return None, f"the reply is not valid JSON ({str(e).split(':')[0]}); reply with one JSON object"


def _step(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        m = _STEP.match(v.strip())
        if m:
            return int(m.group(1))
    return None


def _norm(text: str) -> str:
    return " ".join(text.replace("…", " ").replace("...", " ").split()).lower()


def quote_found(quote: str, haystack: str) -> bool:
    q = _norm(quote)
    return bool(q) and q in _norm(haystack)


def _range(steps: set[int]) -> str:
    return f"#{min(steps)}-#{max(steps)}" if steps else "none"


def parse_answer(
    content: str,
    tax: Taxonomy,
    valid_steps: set[int],
    step_texts: Mapping[int, str] | Callable[[int], str] | None = None,
    windowed: bool = False,
) -> tuple[Answer | None, list[str]]:
    """The validated answer, or None with the problems (phrased so they can be sent back to the model)."""
    data, err = _json(content)
    if err:
        return None, [err]
    if not isinstance(data, dict):
        return None, ["the reply must be a JSON object"]
    problems: list[str] = []
    ids = tax.category_ids
    primary = data.get("primary_category")
    if not isinstance(primary, str) or primary not in tax:
        problems.append(f"primary_category {primary!r} is not a category of {tax.id}; choose one of {ids}")
    secondary_raw = data.get("secondary_categories") or []
    secondary: list[str] = []
    if not isinstance(secondary_raw, list):
        problems.append("secondary_categories must be a list of category ids")
    else:
        for c in secondary_raw:
            if not isinstance(c, str) or c not in tax:
                problems.append(f"secondary category {c!r} is not a category of {tax.id}")
            elif c != primary and c not in secondary:
                secondary.append(c)
    decisive = _step(data.get("decisive_step"))
    if decisive is None:
        problems.append(f"decisive_step must be a step number, got {data.get('decisive_step')!r}")
    elif decisive not in valid_steps:
        problems.append(
            f"decisive_step {decisive} is not a step of this run (steps are {_range(valid_steps)})"
        )
    ev_raw = data.get("evidence")
    ev_steps: list[int] = []
    quotes: list[str] = []
    if not isinstance(ev_raw, list) or not ev_raw:
        problems.append("evidence must be a non-empty list of {step, quote} objects")
    else:
        for k, e in enumerate(ev_raw[:MAX_EVIDENCE]):
            if not isinstance(e, dict):
                problems.append(f"evidence[{k}] must be an object with step and quote")
                continue
            st = _step(e.get("step"))
            if st is None or st not in valid_steps:
                problems.append(f"evidence[{k}].step {e.get('step')!r} is not a step of this run")
                continue
            q = e.get("quote")
            ev_steps.append(st)
            quotes.append(str(q)[:MAX_QUOTE] if q is not None else "")
    rationale = data.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        problems.append("rationale must be a non-empty string")
    conf = data.get("confidence")
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= float(conf) <= 1:
        problems.append(f"confidence must be a number between 0 and 1, got {conf!r}")
    in_window = data.get("decisive_in_window", True)
    if windowed and not isinstance(in_window, bool):
        problems.append("decisive_in_window must be true or false")
    if problems:
        return None, problems
    if step_texts is None:
        verified = [False] * len(quotes)
    elif callable(step_texts):
        verified = [quote_found(q, step_texts(s)) for s, q in zip(ev_steps, quotes)]
    else:
        verified = [quote_found(q, step_texts.get(s, "")) for s, q in zip(ev_steps, quotes)]
    return (
        Answer(
            primary=str(primary),
            secondary=secondary,
            decisive_step=int(decisive),  # type: ignore[arg-type]
            evidence_steps=ev_steps,
            evidence_quotes=quotes,
            rationale=str(rationale).strip(),
            confidence=float(conf),  # type: ignore[arg-type]
            decisive_in_window=bool(in_window),
            evidence_verified=verified,
        ),
        [],
    )
