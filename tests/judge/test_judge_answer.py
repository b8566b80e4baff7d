"""Validation of judge answers: categories in the taxonomy, steps that exist, sane values."""

from __future__ import annotations

import json

import pytest

from trajlab.judge import answer_schema, parse_answer, quote_found
from trajlab.taxonomy import load_taxonomy

TAX = load_taxonomy("omni-failure")
STEPS = {0, 1, 2, 3, 4, 5}
TEXTS = {2: "whisper podcast.mp3\nbash: line 1: whisper: command not found", 3: "pip install openai-whisper"}


def good(**over):
    d = {
        "primary_category": "tool_infrastructure",
        "secondary_categories": ["insufficient_exploration"],
        "decisive_step": 3,
        "evidence": [
            {"step": 2, "quote": "whisper: command not found"},
            {"step": 3, "quote": "made up quote"},
        ],
        "rationale": "The ASR tool was missing and could not be installed.",
        "confidence": 0.8,
    }
    d.update(over)
    return json.dumps(d)


def test_valid_answer_is_parsed_and_quotes_are_checked() -> None:
    a, problems = parse_answer(good(), TAX, STEPS, TEXTS)
    assert problems == []
    assert a is not None
    assert (a.primary, a.secondary, a.decisive_step) == (
        "tool_infrastructure",
        ["insufficient_exploration"],
        3,
    )
    assert a.evidence_steps == [2, 3]
    assert a.evidence_verified == [True, False]
    assert a.confidence == 0.8


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json at all", "the reply is not valid JSON"),
        ("[1, 2]", "the reply must be a JSON object"),
        (
            good(primary_category="not_a_failure"),
            "primary_category 'not_a_failure' is not a category of omni-failure",
        ),
        (good(secondary_categories=["bogus"]), "secondary category 'bogus' is not a category"),
        (good(decisive_step=99), "decisive_step 99 is not a step of this run (steps are #0-#5)"),
        (good(decisive_step="the third"), "decisive_step must be a step number"),
        (good(evidence=[{"step": 42, "quote": "x"}]), "evidence[0].step 42 is not a step of this run"),
        (good(evidence=[]), "evidence must be a non-empty list"),
        (good(rationale=""), "rationale must be a non-empty string"),
        (good(confidence=85), "confidence must be a number between 0 and 1, got 85"),
        (good(confidence=True), "confidence must be a number between 0 and 1"),
    ],
)
def test_invalid_answers_name_the_problem(content: str, problem: str) -> None:
    a, problems = parse_answer(content, TAX, STEPS, TEXTS)
    assert a is None
    assert any(p.startswith(problem) for p in problems), problems


def test_lenient_on_fences_prose_and_step_strings() -> None:
    content = (
        "Here you go:\n```json\n" + good(decisive_step="#3", evidence=[{"step": "2", "quote": "x"}]) + "\n```"
    )
    a, problems = parse_answer(content, TAX, STEPS, TEXTS)
    assert problems == [] and a is not None
    assert a.decisive_step == 3 and a.evidence_steps == [2]


def test_secondary_drops_primary_and_duplicates() -> None:
    a, _ = parse_answer(
        good(secondary_categories=["tool_infrastructure", "reasoning_calculation", "reasoning_calculation"]),
        TAX,
        STEPS,
    )
    assert a is not None and a.secondary == ["reasoning_calculation"]


def test_long_quotes_are_cut_to_200_chars() -> None:
    a, _ = parse_answer(good(evidence=[{"step": 2, "quote": "q" * 500}]), TAX, STEPS)
    assert a is not None and len(a.evidence_quotes[0]) == 200


def test_schema_restricts_categories_and_steps() -> None:
    s = answer_schema(TAX, steps=[0, 2, 5])
    assert s["properties"]["primary_category"]["enum"] == TAX.category_ids
    assert s["properties"]["decisive_step"] == {"type": "integer", "enum": [0, 2, 5]}
    assert s["properties"]["evidence"]["items"]["properties"]["step"]["enum"] == [0, 2, 5]
    assert s["additionalProperties"] is False and set(s["required"]) == set(s["properties"])
    assert "decisive_in_window" in answer_schema(TAX, windowed=True)["properties"]


def test_quote_found_ignores_case_whitespace_and_ellipses() -> None:
    assert quote_found("Command  NOT found", "bash: whisper: command not\nfound")
    assert quote_found("whisper: command…", "whisper: command not found")  # a trailing ellipsis is tolerated
    assert not quote_found("", "anything")
    assert not quote_found("absent words", "something else")
