"""Taxonomy access for review: accept a loaded taxonomy or a reference to one."""

from __future__ import annotations

import os
from typing import Any, Protocol

from ..errors import ConfigError, TrajlabError
from ._records import SPECIAL_CATEGORIES


class TaxonomyLike(Protocol):
    """What review needs from a taxonomy (`trajlab.taxonomy.Taxonomy` satisfies it)."""

    id: str
    version: str

    @property
    def category_ids(self) -> list[str]: ...


DEFAULT_TAXONOMY = "omni-failure"


def resolve_taxonomy(ref: Any) -> TaxonomyLike:
    """A taxonomy object as is, or `trajlab.taxonomy.load_taxonomy(ref)` for an id or a path."""
    if ref is None:
        ref = DEFAULT_TAXONOMY
    if isinstance(ref, (str, os.PathLike)):
        from ..taxonomy import load_taxonomy

        try:
            return load_taxonomy(ref)
        except TrajlabError:
            raise
        except (OSError, KeyError, ValueError) as e:
            raise ConfigError(f"cannot load taxonomy {str(ref)!r}: {e}") from e
    for attr in ("id", "version", "category_ids"):
        if not hasattr(ref, attr):
            raise ConfigError(f"{ref!r} is not a taxonomy (no {attr!r})")
    return ref


def human_categories(tax: TaxonomyLike) -> list[str]:
    """Categories a human may assign: the taxonomy's plus `not_a_failure` and `unsure`."""
    return [*tax.category_ids, *SPECIAL_CATEGORIES]


def category_name(tax: TaxonomyLike, category_id: str) -> str:
    for c in getattr(tax, "categories", []) or []:
        if getattr(c, "id", None) == category_id:
            return str(getattr(c, "name", category_id))
    return {"not_a_failure": "Not a failure", "unsure": "Unsure"}.get(category_id, category_id)
