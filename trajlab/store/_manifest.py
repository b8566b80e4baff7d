"""The lab manifest (`lab.json`): which Parquet parts make up each table at the current generation.

The manifest is the commit point of every write: parts are staged, moved into their table folder,
and only become part of the lab when the new manifest replaces the old one with an atomic rename.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import LabError
from ..fsutil import atomic_write_text
from ..schema import SCHEMA_VERSION

MANIFEST_NAME = "lab.json"
LAB_FORMAT = "trajlab-lab"
HISTORY_LIMIT = 500


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class PartEntry:
    path: str  # relative to the lab root, e.g. "steps/part-g000003-1a2b3c4d.parquet"
    rows: int
    bytes: int


@dataclass
class TableEntry:
    parts: list[PartEntry] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    updated_at: str = ""
    generation: int = 0

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)


@dataclass
class Manifest:
    format: str = LAB_FORMAT
    schema_version: int = SCHEMA_VERSION
    generation: int = 0
    created_at: str = ""
    updated_at: str = ""
    trajlab_version: str = ""
    tables: dict[str, TableEntry] = field(default_factory=dict)
    migrations: list[str] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=False)

    @classmethod
    def from_dict(cls, d: Any, where: str) -> Manifest:
        if not isinstance(d, dict):
            raise LabError(f"{where}: corrupt manifest (a JSON {type(d).__name__}, not an object)")
        if d.get("format") != LAB_FORMAT:
            raise LabError(f"{where}: not a trajlab lab manifest (format={d.get('format')!r})")
        tables_in = d.get("tables", {})
        if not isinstance(tables_in, dict):
            raise LabError(f"{where}: corrupt manifest (`tables` is not an object)")
        tables = {name: _table_entry(name, t, where) for name, t in tables_in.items()}
        try:
            return cls(
                format=d["format"],
                schema_version=int(d["schema_version"]),
                generation=int(d.get("generation", 0)),
                created_at=d.get("created_at", ""),
                updated_at=d.get("updated_at", ""),
                trajlab_version=d.get("trajlab_version", ""),
                tables=tables,
                migrations=list(d.get("migrations", [])),
                history=list(d.get("history", [])),
            )
        except KeyError as e:
            raise LabError(f"{where}: corrupt manifest (missing field {e})") from e
        except (TypeError, ValueError, AttributeError) as e:
            raise LabError(f"{where}: corrupt manifest ({e})") from e


def _table_entry(name: str, t: Any, where: str) -> TableEntry:
    """One table's entry, checked field by field so that a damaged one is named."""

    def bad(what: str) -> LabError:
        return LabError(f"{where}: corrupt manifest (table {name!r}: {what})")

    if not isinstance(t, dict):
        raise bad("not an object")
    parts_in = t.get("parts", [])
    if not isinstance(parts_in, list):
        raise bad("`parts` is not a list")
    parts = []
    for i, p in enumerate(parts_in):
        if not isinstance(p, dict) or set(p) != {"path", "rows", "bytes"}:
            raise bad(f"part {i} is not an object with path, rows and bytes")
        path, rows, size = p["path"], p["rows"], p["bytes"]
        if not isinstance(path, str) or not path or Path(path).is_absolute() or ".." in Path(path).parts:
            raise bad(f"part {i} path {path!r} is not a path inside the lab")
        if not (isinstance(rows, int) and isinstance(size, int)) or rows < 0 or size < 0:
            raise bad(f"part {i} ({path}) rows/bytes are not counts")
        parts.append(PartEntry(path, rows, size))
    try:
        return TableEntry(
            parts=parts,
            schema_version=int(t.get("schema_version", 1)),
            updated_at=str(t.get("updated_at", "")),
            generation=int(t.get("generation", 0)),
        )
    except (TypeError, ValueError) as e:
        raise bad(str(e)) from e


def read_manifest(root: Path) -> Manifest:
    path = root / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LabError(
            f"{root}: not a lab (no {MANIFEST_NAME}); create one with `trajlab ingest ... --out {root}`"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise LabError(f"{path}: corrupt manifest: {e}") from e
    except IsADirectoryError:
        raise LabError(f"{path}: is a folder, not the lab manifest") from None
    except OSError as e:
        raise LabError(f"{path}: cannot read the lab manifest ({e.strerror or e})") from None
    return Manifest.from_dict(data, str(path))


def write_manifest(root: Path, manifest: Manifest) -> None:
    path = atomic_write_text(root / MANIFEST_NAME, manifest.to_json())
    # the temporary file was private (0600): make the manifest as readable as the lab folder and its
    # parts, so that others who may read the lab can open it
    os.chmod(path, root.stat().st_mode & 0o666)
