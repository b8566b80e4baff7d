"""Guidance items: a Do item names the exceptions that Avoid items of its skill make to it."""

from __future__ import annotations

from trajlab.distill._features import Example
from trajlab.distill._mine import Rule
from trajlab.distill._render import guidance


def _rule(feature: str, direction: str, command: str, scope: str = "all") -> Rule:
    return Rule(
        feature=feature,
        direction=direction,
        scope=scope,
        n_scope=100,
        n_scope_success=60,
        n_with=20,
        n_with_success=16 if direction == "do" else 4,
        confidence=0.8,
        lift=1.33,
        p_value=0.01,
        examples=[Example("t1", 3, command)],
    )


PY_C = _rule("flag:python -c", "do", 'python3 -c "print(sum([1, 2]))"')
CV2 = _rule("import:cv2", "avoid", "python3 -c \"import cv2; cap = cv2.VideoCapture('talk.mp4')\"")
WHISPER = _rule("use:whisper", "do", "whisper talk.wav --model small")
SMALL = _rule("flag:whisper --model small", "do", "whisper talk.wav --model small")
TINY = _rule("flag:whisper --model tiny", "avoid", "whisper talk.wav --model tiny")


def test_a_do_item_names_the_avoid_items_that_narrow_it() -> None:
    rules = [PY_C, CV2, WHISPER, SMALL, TINY]
    do_python = guidance(PY_C, rules)
    assert "(but not scripts that import `cv2`: see Avoid)" in do_python
    # the Avoid item's example shows what it is about, not the same `python3 -c "..."` as the Do item
    assert '`python3 -c "import cv2; ..."`' in guidance(CV2, rules)
    assert '`python3 -c "..."`' in do_python
    assert "(but not `whisper --model tiny`: see Avoid)" in guidance(WHISPER, rules)
    # a flag with the same option is the alternative, not an exception
    assert "but not" not in guidance(SMALL, rules)
    # alone, or with the Avoid rule of another scope, the items stay as they were
    assert "but not" not in guidance(PY_C)
    other = _rule("import:cv2", "avoid", 'python3 -c "import cv2"', scope="domain=audio")
    assert "but not" not in guidance(PY_C, [PY_C, other])


def test_avoid_rules_of_all_runs_narrow_a_scoped_do_rule() -> None:
    scoped = _rule("use:python", "do", "python3 solve.py", scope="domain=video")
    assert "import `cv2`" in guidance(scoped, [scoped, CV2])
