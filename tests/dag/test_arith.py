"""Literal arithmetic handed to Python, checked against what it printed (`trajlab.dag._arith`)."""

from __future__ import annotations

import pytest

from trajlab.dag._arith import checked_arithmetic, inline_python, literal_result


@pytest.mark.parametrize(
    ("code", "value"),
    [
        ("print(288 + 112 + 304)", 704),
        ("print(22 * 49)", 1078),
        ("print(round(sum([40.19, 2.7, 50.2]) * (1 + 15/100), 2))", 107.05),
        ("print(-(3 - 10) // 2 % 5)", 3),
        ("print(max(3, 7, 1) - min([4, 2]))", 5),
        ("print(abs(-2.5) * 2 ** 3)", 20.0),
        ("  print(1.5e3 / 3)\n", 500.0),
    ],
)
def test_literal_arithmetic_is_evaluated(code: str, value: float) -> None:
    assert literal_result(code) == value


@pytest.mark.parametrize(
    "code",
    [
        "print(x + 1)",  # a name
        "import os; print(1 + 1)",  # more than one statement
        "print('1' + '2')",  # strings
        "print(1 / 0)",
        "print(10 ** 100000)",  # a power too large to evaluate
        "print(True + 1)",
        "print(__import__('os').getpid())",
        "print(sum(range(10)))",  # not over literals
        "print(1 +",  # not Python
        "print(1, 2)",
        "print(" + "(" * 200 + "1" + ")" * 200 + ")",  # nested too deep
        "print(" + " + ".join(["1"] * 1500) + ")",  # too long to check
    ],
)
def test_anything_else_is_not_checked(code: str) -> None:
    assert literal_result(code) is None


def test_the_code_of_a_command_or_a_python_tool() -> None:
    assert inline_python('python3 -c "print(2 + 3)"', None) == "print(2 + 3)"
    assert inline_python("/usr/bin/python3.11 -c 'print(2 + 3)'", None) == "print(2 + 3)"
    assert inline_python('python3 -c "print(2 + 3)" | tee out.txt', None) is None  # the output went on
    assert inline_python("python3 solve.py", None) is None
    assert inline_python(None, '{"code": "print(2 + 3)"}') == "print(2 + 3)"
    assert inline_python(None, "{not json") is None


def _step(command: str, output: str, **kw: object) -> dict[str, object]:
    return {"tool": "python", "command": command, "output": output, "is_error": False, **kw}


def test_checked_arithmetic() -> None:
    assert checked_arithmetic(_step('python3 -c "print(288 + 112 + 304)"', "704\n"))
    assert checked_arithmetic(_step('python3 -c "print(0.1 + 0.2)"', "0.30000000000000004"))
    assert not checked_arithmetic(_step('python3 -c "print(288 + 112 + 304)"', "705"))  # not what it gives
    assert not checked_arithmetic(_step('python3 -c "print(288 + 112 + 304)"', "704", is_error=True))
    assert not checked_arithmetic(_step('python3 -c "print(288 + 112 + 304)"', "Traceback\n704"))
    assert not checked_arithmetic({**_step('python3 -c "print(2 + 2)"', "4"), "tool": "bash"})
