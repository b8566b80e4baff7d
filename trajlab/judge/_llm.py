"""Judge one trajectory with an LLM: render, ask, validate, re-ask once, combine windows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConfigError
from ..redact import redact
from ..taxonomy import Taxonomy
from ._answer import Answer, parse_answer
from ._client import LLMClient, LLMRequestError
from ._prompt import answer_schema, reask_message, system_prompt, user_message
from ._render import Rendering, RenderOptions, render_trajectory
from ._settings import LLMSettings
from ._tokens import estimate_tokens
from ._view import TrajectoryView

RESERVE_TOKENS = 64
"""Prompt tokens kept free for the message wrapper around the run."""


@dataclass
class Outcome:
    """What judging one trajectory produced (one judge_labels row plus accounting)."""

    trajectory_id: str
    status: str
    reason: str | None = None
    answer: Answer | None = None
    requests: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    windows: int = 1
    rendering: Rendering | None = None


@dataclass
class PlannedRequest:
    trajectory_id: str
    messages: list[dict[str, str]]
    schema: dict[str, Any]
    tokens: int
    cached: bool


class LLMJudge:
    """Everything needed to judge trajectories with one model and one taxonomy."""

    def __init__(self, taxonomy: Taxonomy, settings: LLMSettings, client: LLMClient | None):
        self.tax = taxonomy
        self.settings = settings
        self.client = client
        short = settings.short_answers
        self.system = system_prompt(taxonomy, settings.taxonomy_detail, short=short)
        self.system_windowed = system_prompt(taxonomy, settings.taxonomy_detail, windowed=True, short=short)
        budget = settings.max_prompt_tokens - estimate_tokens(self.system_windowed) - RESERVE_TOKENS
        if budget < 300:
            raise ConfigError(
                f"the taxonomy prompt alone takes ~{estimate_tokens(self.system_windowed):,} tokens; raise "
                f"--max-prompt-tokens above {settings.max_prompt_tokens:,} or use taxonomy_detail=compact"
            )
        self.render_options = RenderOptions(
            max_tokens=budget, redact=settings.redact, max_windows=settings.max_windows
        )

    def render_settings(self) -> dict[str, Any]:
        o = self.render_options
        return {
            "max_tokens": o.max_tokens,
            "redact": o.redact,
            "error_max_chars": o.error_max_chars,
            "max_windows": o.max_windows,
        }

    def messages_for(self, rendering: Rendering) -> list[list[dict[str, str]]]:
        """The first request of each window (a single-window run has one)."""
        if rendering.windowed:
            return [
                [
                    {"role": "system", "content": self.system_windowed},
                    {"role": "user", "content": user_message(w.text)},
                ]
                for w in rendering.windows
            ]
        return [
            [
                {"role": "system", "content": self.system},
                {"role": "user", "content": user_message(rendering.text)},
            ]
        ]

    def schemas_for(self, rendering: Rendering) -> list[dict[str, Any]]:
        """The answer schema of each request: step numbers limited to the steps the request shows."""
        if rendering.windowed:
            short = self.settings.short_answers
            return [answer_schema(self.tax, True, sorted(w.step_indexes), short) for w in rendering.windows]
        return [answer_schema(self.tax, False, sorted(rendering.step_indexes), self.settings.short_answers)]

    def render(self, view: TrajectoryView) -> Rendering:
        return render_trajectory(view, self.render_options)

    def plan(self, view: TrajectoryView, use_cache: bool = True) -> tuple[Rendering, list[PlannedRequest]]:
        """What judging would send (for --dry-run): requests, estimated tokens, and cache hits
        (none with `use_cache=False`: every request would be sent)."""
        r = self.render(view)
        if r.too_long:
            return r, []
        out = []
        for msgs, schema in zip(self.messages_for(r), self.schemas_for(r)):
            tokens = sum(estimate_tokens(m["content"]) for m in msgs) + 8
            cached = False
            if use_cache and self.client is not None and self.client.cache is not None:
                key = self.client.cache_key(msgs, schema, "failure_label")
                cached = self.client.cache.get(key) is not None
            out.append(PlannedRequest(view.trajectory_id, msgs, schema, tokens, cached))
        return r, out

    # -- judging -----------------------------------------------------------------------------------

    def judge(self, view: TrajectoryView, use_cache: bool = True) -> Outcome:
        tid = view.trajectory_id
        if not view.steps:
            return Outcome(tid, "unjudgeable", "no steps recorded")
        r = self.render(view)
        if r.too_long:
            return Outcome(tid, "unjudgeable", r.too_long, rendering=r, windows=0)
        texts = self._step_texts(view)
        valid = view.step_indexes
        out = Outcome(tid, "error", windows=len(r.windows) or 1, rendering=r)
        answers: list[tuple[int, Answer]] = []
        for k, (msgs, schema) in enumerate(zip(self.messages_for(r), self.schemas_for(r))):
            try:
                ans, problems = self._ask(msgs, schema, valid, texts, r.windowed, use_cache, out)
            except LLMRequestError as e:
                out.reason = f"request failed: {e}"
                return out
            if ans is None:
                where = f" (window {k + 1} of {len(r.windows)})" if r.windowed else ""
                out.reason = "invalid answer after one re-ask" + where + ": " + "; ".join(problems)[:600]
                return out
            answers.append((k, ans))
        out.answer = _combine(answers)
        out.status = "labeled"
        if r.windowed:
            out.reason = f"judged in {len(r.windows)} windows"
        return out

    def _ask(
        self,
        msgs: list[dict[str, str]],
        schema: dict[str, Any],
        valid: set[int],
        texts: Callable[[int], str],
        windowed: bool,
        use_cache: bool,
        out: Outcome,
    ) -> tuple[Answer | None, list[str]]:
        assert self.client is not None
        comp = self.client.chat(msgs, schema, "failure_label", use_cache=use_cache)
        self._account(comp, out)
        ans, problems = parse_answer(comp.content, self.tax, valid, texts, windowed)
        if ans is not None:
            return ans, []
        # One re-ask, showing the model its answer and what was wrong with it.
        msgs2 = [
            *msgs,
            {"role": "assistant", "content": comp.content},
            {"role": "user", "content": reask_message(problems)},
        ]
        comp2 = self.client.chat(msgs2, schema, "failure_label", use_cache=use_cache)
        self._account(comp2, out)
        ans2, problems2 = parse_answer(comp2.content, self.tax, valid, texts, windowed)
        if ans2 is None:
            # The trajectory ends as `error`, which the next run retries: it must ask the model
            # again, not replay these two unusable answers from the cache.
            self.client.forget(msgs, schema, "failure_label")
            self.client.forget(msgs2, schema, "failure_label")
        return ans2, problems2

    @staticmethod
    def _account(comp: Any, out: Outcome) -> None:
        out.requests += comp.attempts
        out.cache_hits += 1 if comp.cached else 0
        out.prompt_tokens += comp.prompt_tokens
        out.completion_tokens += comp.completion_tokens

    def _step_texts(self, view: TrajectoryView) -> Callable[[int], str]:
        """The (redacted) text of a step, computed only for the steps an answer quotes."""
        by_idx = {int(s["step_index"]): s for s in view.steps}
        cache: dict[int, str] = {}

        def text_of(i: int) -> str:
            if i not in cache:
                s = by_idx.get(i, {})
                parts = [s.get(n) or "" for n in ("text", "command", "arguments", "output", "stderr")]
                text = "\n".join(p for p in parts if p)
                cache[i] = redact(text) if self.settings.redact else text
            return cache[i]

        return text_of


def _combine(answers: list[tuple[int, Answer]]) -> Answer:
    """One answer from the windows: the most confident window that places the mistake inside itself.

    The primary categories other such windows found become secondary categories.
    """
    if len(answers) == 1:
        return answers[0][1]
    inside = [a for a in answers if a[1].decisive_in_window] or answers
    best = max(inside, key=lambda ka: (ka[1].confidence, -ka[0]))[1]
    others = []
    for _, a in answers:
        if a is not best and a.decisive_in_window and a.primary != best.primary and a.primary not in others:
            others.append(a.primary)
    secondary = [c for c in dict.fromkeys([*best.secondary, *others]) if c != best.primary][:3]
    return replace(best, secondary=secondary)
