"""Derive Arrow schemas from the table models, so the Parquet files and the docs never disagree."""

from __future__ import annotations

import types
import typing
from datetime import datetime
from functools import cache
from typing import Any, Literal, get_args, get_origin

import pyarrow as pa
from pydantic import BaseModel

_SCALARS: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    bytes: pa.large_binary(),
    datetime: pa.timestamp("us", tz="UTC"),
}


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """Strip `X | None` and return (X, nullable)."""
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def arrow_type(annotation: Any) -> pa.DataType:
    inner, _ = _unwrap(annotation)
    origin = get_origin(inner)
    if origin is Literal:
        return pa.string()
    if origin is list:
        (item,) = get_args(inner)
        return pa.list_(arrow_type(item))
    if inner in _SCALARS:
        return _SCALARS[inner]
    raise TypeError(f"no Arrow type for annotation {annotation!r}")


@cache
def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The Arrow schema of a table model; field descriptions go into field metadata."""
    fields = []
    for name, info in model.model_fields.items():
        _, nullable = _unwrap(info.annotation)
        meta = {"description": info.description or ""}
        fields.append(pa.field(name, arrow_type(info.annotation), nullable=nullable, metadata=meta))
    return pa.schema(fields)


def default_row(model: type[BaseModel]) -> dict[str, Any]:
    """Defaults of every field that has one (used to fill rows built as sparse dicts)."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if info.default_factory is not None:
            out[name] = info.default_factory()  # type: ignore[call-arg]
        elif not info.is_required():
            out[name] = info.default
    return out
