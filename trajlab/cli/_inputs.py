"""Reading user-given input files for commands: errors name the option and the file at fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputFileError

GROUND_TRUTH = "ground_truth.jsonl"


def read_ground_truth(folder: str | Path, option: str) -> list[dict[str, Any]]:
    """The rows of a `trajlab examples` folder's ground_truth.jsonl (FOLDER or FOLDER/..)."""
    from ..examples import load_ground_truth

    p = Path(folder)
    found = next((d / GROUND_TRUTH for d in (p, p.parent) if (d / GROUND_TRUTH).is_file()), None)
    if found is None:
        raise ConfigError(
            f"{option} {folder}: no {GROUND_TRUTH} there (give a folder made by `trajlab examples`)"
        )
    try:
        rows = load_ground_truth(found.parent)
    except OSError as e:
        raise InputFileError(str(found), f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputFileError(str(found), f"not UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise InputFileError(str(found), f"not valid JSON: {e.msg}") from None
    if not all(isinstance(r, dict) for r in rows):
        raise InputFileError(str(found), "every line must be a JSON object")
    return rows
