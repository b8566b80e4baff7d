"""Keep adapter rows to the column types of the lab schema, whatever the input file held.

Runner files are untrusted JSON: a field that should hold a string can hold a number, a list or an
object, and one such value would make the whole batch unwritable. Adapters that copy loosely typed
fields pass their rows through `typed_rows` before yielding them, so an odd value costs only that
value (converted to text, or dropped with an anomaly), never the file.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson
import pyarrow as pa

from ..schema import Step, Trajectory, arrow_schema
from ._base import as_text

# Columns the finishing step serialises itself (dicts/lists become JSON there).
_JSON_COLUMNS = {"metadata", "arguments"}
_INT64 = (-(2**63), 2**63 - 1)


@cache
def _kinds(model: type) -> dict[str, str]:
    out = {}
    for f in arrow_schema(model):
        t = f.type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            out[f.name] = "str"
        elif pa.types.is_integer(t):
            out[f.name] = "int"
        elif pa.types.is_floating(t):
            out[f.name] = "float"
        elif pa.types.is_boolean(t):
            out[f.name] = "bool"
        elif pa.types.is_list(t):
            out[f.name] = "list"
    return out


def text_of(v: Any) -> str:
    """A value of the wrong type for a text column, as the text stored instead (JSON for containers)."""
    if isinstance(v, (list, dict)):
        text = as_text(v)
        if text:
            return text
        return orjson.dumps(v, default=str).decode()
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@cache
def _ok_types(model: type) -> dict[str, tuple[type, ...]]:
    """Per column, the Python types that need no conversion (checked with `type(v) in ...`)."""
    ok: dict[str, tuple[type, ...]] = {}
    for name, kind in _kinds(model).items():
        if kind == "str":
            ok[name] = (str, dict, list) if name in _JSON_COLUMNS else (str,)
        elif kind == "float":
            ok[name] = (float, int)
        elif kind == "bool":
            ok[name] = (bool,)
        else:  # ints are range-checked, lists checked item by item
            ok[name] = ()
    return ok


def _fix(row: dict[str, Any], model: type, where: str, anomalies: list[str]) -> None:
    kinds, ok = _kinds(model), _ok_types(model)
    for k, v in row.items():
        if v is None:
            continue
        tv = type(v)
        good = ok.get(k)
        if good is None or tv in good or (tv is int and kinds[k] == "int" and _INT64[0] <= v <= _INT64[1]):
            continue
        row[k] = _convert(k, v, kinds[k], where, anomalies)


def _convert(k: str, v: Any, kind: str, where: str, anomalies: list[str]) -> Any:
    if kind == "str":
        return text_of(v)
    if kind == "int":
        num = None
        if (isinstance(v, float) and v.is_integer()) or (
            isinstance(v, str) and v.strip().lstrip("-").isdigit()
        ):
            num = int(v)
        elif isinstance(v, int) and not isinstance(v, bool):
            num = v
        if num is None or not _INT64[0] <= num <= _INT64[1]:
            anomalies.append(f"{where}{k}: dropped value {str(v)[:40]!r} (not a 64-bit integer)")
            return None
        return num
    if kind == "float":
        if isinstance(v, str):
            try:
                return float(v)
            except ValueError:
                pass
        anomalies.append(f"{where}{k}: dropped non-numeric value {str(v)[:40]!r}")
        return None
    if kind == "bool":
        return bool(v)
    if kind == "list":
        return (
            [x if type(x) is str else text_of(x) for x in v if x is not None] if isinstance(v, list) else None
        )
    return v


def typed_rows(t: dict[str, Any], steps: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Coerce the trajectory and step dicts in place to their column types; returns them."""
    raw = t.pop("anomalies", None)
    anomalies = [text_of(a) for a in raw if a is not None] if isinstance(raw, list) else []
    _fix(t, Trajectory, "", anomalies)
    for i, s in enumerate(steps):
        _fix(s, Step, f"step {i} ", anomalies)
    t["anomalies"] = anomalies
    return t, steps
