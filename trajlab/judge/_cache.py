"""Content-hash cache of model responses: a rerun with the same prompts sends zero requests.

One small JSON file per response under `<dir>/<2 hex>/<64 hex>.json`, written atomically, so
concurrent workers and an interrupted run never leave a half-written entry (a crash may lose the
newest entries, which only costs those requests again).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

CACHE_DIRNAME = "_judge_cache"
"""Default cache folder inside a lab (a leading `_` keeps Parquet readers and lab recovery away)."""


def cache_key(payload: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


class ResponseCache:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._dirs: set[str] = set()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        p = self._path(key)
        try:
            data = orjson.loads(p.read_bytes())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> bool:
        """Atomic (temp file + rename) but not fsynced: losing an entry in a crash costs one request.

        False when the entry cannot be written (a full disk, a read-only folder): the cache only saves
        requests, so the answer it was given is still used and judging goes on."""
        p = self._path(key)
        tmp: str | None = None
        try:
            if key[:2] not in self._dirs:
                p.parent.mkdir(parents=True, exist_ok=True)
                self._dirs.add(key[:2])
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=p.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(orjson.dumps(value))
            os.replace(tmp, p)
        except OSError:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            return False
        except BaseException:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            raise
        return True

    def delete(self, key: str) -> None:
        """Forget one response (an answer that could not be used), so the next run asks again."""
        self._path(key).unlink(missing_ok=True)

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.is_dir() else 0
