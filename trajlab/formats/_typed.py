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


def _text(v: Any) -> str:
    if isinstance(v, (list, dict)):
        text = as_text(v)
        if text:
            return text
        return orjson.dumps(v, default=str).decode()
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _fix(row: dict[str, Any], kinds: dict[str, str], where: str, anomalies: list[str]) -> None:
    for k, v in list(row.items()):
        kind = kinds.get(k)
        if v is None or kind is None:
            continue
        if kind == "str":
            if not isinstance(v, str) and not (k in _JSON_COLUMNS and isinstance(v, (dict, list))):
                row[k] = _text(v)
        elif kind == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                num = v if isinstance(v, float) and v.is_integer() else None
                if isinstance(v, str) and v.strip().lstrip("-").isdigit():
                    num = int(v)
                row[k] = int(num) if num is not None else None
                if num is None:
                    anomalies.append(f"{where}{k}: dropped non-integer value {str(v)[:40]!r}")
            if row[k] is not None and not _INT64[0] <= row[k] <= _INT64[1]:
                anomalies.append(f"{where}{k}: dropped out-of-range value {row[k]}")
                row[k] = None
        elif kind == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                try:
                    row[k] = float(v) if isinstance(v, str) else None
                except ValueError:
                    row[k] = None
                if row[k] is None:
                    anomalies.append(f"{where}{k}: dropped non-numeric value {str(v)[:40]!r}")
        elif kind == "bool":
            if not isinstance(v, bool):
                row[k] = bool(v)
        elif kind == "list":
            row[k] = [_text(x) for x in v if x is not None] if isinstance(v, list) else None


def typed_rows(t: dict[str, Any], steps: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Coerce the trajectory and step dicts in place to their column types; returns them."""
    raw = t.pop("anomalies", None)
    anomalies = [_text(a) for a in raw if a is not None] if isinstance(raw, list) else []
    _fix(t, _kinds(Trajectory), "", anomalies)
    skinds = _kinds(Step)
    for i, s in enumerate(steps):
        _fix(s, skinds, f"step {i} ", anomalies)
    t["anomalies"] = anomalies
    return t, steps
