"""Failure labelling: an LLM judge over any OpenAI-compatible endpoint, and an offline rules judge.

`judge_lab(lab, taxonomy, settings)` labels failed trajectories with a structured, validated answer
(category, secondary categories, decisive step, evidence quotes, rationale, confidence) and stores it
in `judge_labels`; `rules_judge(lab, taxonomy)` does the same from step/DAG signals without a model;
`evaluate(lab, gold)` and `evaluate_who_and_when(lab)` score either against human labels.
`LLMSettings` and `LLMClient` are reusable by other stages that call a model (e.g. distillation).
"""

from ._answer import Answer, parse_answer, quote_found
from ._cache import CACHE_DIRNAME, ResponseCache, cache_key
from ._client import ClientStats, Completion, LLMClient, LLMRequestError
from ._eval import (
    classification_metrics,
    evaluate,
    evaluate_who_and_when,
    format_eval,
    load_gold,
    step_metrics,
)
from ._llm import LLMJudge, Outcome
from ._prompt import PROMPT_VERSION, answer_schema, prompt_hash, system_prompt, user_message
from ._render import Rendering, RenderOptions, render_trajectory
from ._rules import CAPABILITIES, RULES_VERSION, Hit, RulesVerdict, decide, detect
from ._run import (
    JudgeInterrupted,
    JudgeRunReport,
    judge_lab,
    rules_judge,
    rules_prompt_hash,
    select_trajectories,
)
from ._settings import LLMSettings
from ._tokens import estimate_tokens
from ._view import TrajectoryView, iter_views, load_view, view_from_rows

__all__ = [
    "CACHE_DIRNAME",
    "CAPABILITIES",
    "PROMPT_VERSION",
    "RULES_VERSION",
    "Answer",
    "ClientStats",
    "Completion",
    "Hit",
    "JudgeInterrupted",
    "JudgeRunReport",
    "LLMClient",
    "LLMJudge",
    "LLMRequestError",
    "LLMSettings",
    "Outcome",
    "RenderOptions",
    "Rendering",
    "ResponseCache",
    "RulesVerdict",
    "TrajectoryView",
    "answer_schema",
    "cache_key",
    "classification_metrics",
    "decide",
    "detect",
    "estimate_tokens",
    "evaluate",
    "evaluate_who_and_when",
    "format_eval",
    "iter_views",
    "judge_lab",
    "load_gold",
    "load_view",
    "parse_answer",
    "prompt_hash",
    "quote_found",
    "render_trajectory",
    "rules_judge",
    "rules_prompt_hash",
    "select_trajectories",
    "step_metrics",
    "system_prompt",
    "user_message",
    "view_from_rows",
]
