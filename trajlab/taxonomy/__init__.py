"""Failure taxonomies: versioned, schema-checked YAML files of categories with decision rules.

`load_taxonomy("omni-failure")` finds a taxonomy by id (./taxonomy, $TRAJLAB_TAXONOMY_PATH, then the
copies bundled with trajlab) or by path; `validate_file(path)` lists problems naming file, line and field.
"""

from ._load import (
    BUNDLED_DIR,
    ENV_PATH,
    available_ids,
    find_taxonomy,
    load_taxonomy,
    search_dirs,
    validate_file,
    validate_text,
)
from ._model import (
    DETECTORS,
    RESERVED_LABELS,
    TAXONOMY_FORMAT,
    Category,
    Example,
    Signal,
    Taxonomy,
    TieBreaker,
    taxonomy_json_schema,
)
from ._render import to_markdown, to_text

__all__ = [
    "BUNDLED_DIR",
    "DETECTORS",
    "ENV_PATH",
    "RESERVED_LABELS",
    "TAXONOMY_FORMAT",
    "Category",
    "Example",
    "Signal",
    "Taxonomy",
    "TieBreaker",
    "available_ids",
    "find_taxonomy",
    "load_taxonomy",
    "search_dirs",
    "taxonomy_json_schema",
    "to_markdown",
    "to_text",
    "validate_file",
    "validate_text",
]
