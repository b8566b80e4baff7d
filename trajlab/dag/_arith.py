"""Arithmetic an agent handed to Python as literals, checked against what Python printed.

`python3 -c "print(288 + 112 + 304)"` answering 704 did the sum right: if the run's answer was wrong,
the numbers it was given (a misheard transcript, a misread frame) or the formula are where to look,
not the arithmetic. The candidates say so in the reason of such an answer source; they keep its rank,
since which of the two went wrong the log cannot tell.

Only a `print(...)` of number literals joined by + - * / // % (and small powers), with `round`, `abs`,
`sum`, `min` and `max` over literals, counts; anything else (a name, a string, a script file) is not
checked. The expression is evaluated here on its own AST, never by `eval`.
"""

from __future__ import annotations

import ast
import json
import math
import operator
from collections.abc import Callable
from typing import Any

from ..normalize import parse_shell, program_name

MAX_CODE_CHARS = 2_000
_MAX_POW = 64
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_LIST_FUNCS: dict[str, Callable[[list[Any]], Any]] = {"sum": sum, "min": min, "max": max}


class _NotLiteral(Exception):
    pass


def _value(node: ast.AST, depth: int = 0) -> Any:
    if depth > 100:
        raise _NotLiteral
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand, depth + 1)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _value(node.left, depth + 1), _value(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            if not (isinstance(b, int) and 0 <= b <= _MAX_POW and abs(a) < 1e12):
                raise _NotLiteral
            return a**b
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise _NotLiteral
        return op(a, b)  # ZeroDivisionError is caught by the caller
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        name, args = node.func.id, node.args
        if name in _LIST_FUNCS and len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
            items = [_value(x, depth + 1) for x in args[0].elts]
            return _LIST_FUNCS[name](items) if items else 0
        if name in ("min", "max") and len(args) >= 2:
            return _LIST_FUNCS[name]([_value(x, depth + 1) for x in args])
        if name == "abs" and len(args) == 1:
            return abs(_value(args[0], depth + 1))
        if name == "round" and len(args) in (1, 2):
            digits = [_value(x, depth + 1) for x in args[1:]]
            if digits and not isinstance(digits[0], int):
                raise _NotLiteral
            return round(_value(args[0], depth + 1), *digits)
    raise _NotLiteral


def literal_result(code: str) -> int | float | None:
    """The value `code` prints when it is one `print(<arithmetic over number literals>)`, else None."""
    if len(code) > MAX_CODE_CHARS:
        return None
    try:
        tree = ast.parse(code.strip())
    except (SyntaxError, ValueError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    call = tree.body[0].value
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "print"
        and len(call.args) == 1
        and not call.keywords
    ):
        return None
    try:
        v = _value(call.args[0])
    except (_NotLiteral, ArithmeticError, ValueError, TypeError, RecursionError):
        return None
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def inline_python(command: str | None, arguments: str | None) -> str | None:
    """The code of `python -c CODE` (one simple command), or of a runner's python tool (`{"code": ...}`)."""
    if command:
        parsed = parse_shell(command)
        if len(parsed.commands) != 1:
            return None
        argv = parsed.commands[0].argv
        if len(argv) < 3 or program_name(argv[0]) != "python" or "-c" not in argv:
            return None
        k = argv.index("-c")
        return argv[k + 1] if k + 1 < len(argv) else None
    if arguments and arguments.startswith("{"):
        try:
            args = json.loads(arguments)
        except ValueError:
            return None
        code = args.get("code") if isinstance(args, dict) else None
        return code if isinstance(code, str) else None
    return None


def checked_arithmetic(step: dict[str, Any]) -> bool:
    """Whether the step is a Python print of literal arithmetic whose output is that arithmetic's value."""
    if step.get("is_error") or step.get("tool") != "python":
        return False
    code = inline_python(step.get("command"), step.get("arguments"))
    if code is None:
        return False
    want = literal_result(code)
    out = (step.get("output") or "").strip()
    if want is None or not out or "\n" in out:
        return False
    try:
        got = float(out)
    except ValueError:
        return False
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
