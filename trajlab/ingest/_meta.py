"""Run metadata sidecars: attach task ids, outcomes, splits... to runs whose files do not record them.

Most runners write no task id, benchmark or grade (a Codex rollout has no success field at all). A
`trajlab-meta.jsonl` (or `*.trajlab-meta.jsonl`) file anywhere under an ingested folder, or a file
given with `--meta`, adds them. Each line is one JSON object with a key and the fields to set:

    {"source": "runs/codex/rollout-...jsonl", "task_id": "v-017", "outcome": "failure", "split": "train"}
    {"native_id": "019e1625-789d-...", "benchmark": "omnigaia", "expected_answer": "42"}

`source` is a path relative to the meta file (or absolute); `native_id` is the runner's session or
instance id. A `source` entry wins over a `native_id` entry for the same run. Sidecar values override
what the adapter found; `metadata` objects are merged and `tags` are added. Lines that cannot be used
(not JSON, no key, unknown fields, values of the wrong type) are quarantined with their file and line.
The lab remembers the sidecars it has read; when a sidecar changes, the runs it applies to are
re-ingested.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..fsutil import path_text
from ..schema import OUTCOMES, digest_bytes

META_NAMES = ("trajlab-meta.jsonl",)
META_SUFFIX = ".trajlab-meta.jsonl"
_STR = (str,)
_NUM = (int, float)
# field -> accepted JSON types (bool is rejected where a number is expected)
FIELDS: dict[str, tuple[type, ...]] = {
    "task_id": _STR,
    "task": _STR,
    "benchmark": _STR,
    "split": _STR,
    "condition": _STR,
    "tags": (list,),
    "domain": _STR,
    "difficulty": (str, int),
    "model": _STR,
    "harness": _STR,
    "reasoning_effort": _STR,
    "outcome": _STR,
    "reward": _NUM,
    "outcome_source": _STR,
    "expected_answer": (str, int, float),
    "final_answer": _STR,
    "metadata": (dict,),
}


_TYPE_NAMES = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "list": "a list",
    "dict": "an object",
}


def is_meta_file(path: Path) -> bool:
    return path.name in META_NAMES or path.name.endswith(META_SUFFIX)


def norm_path(p: str | os.PathLike[str]) -> str:
    """Absolute, normalized (`..` folded) path string used as the key of a source."""
    return os.path.normpath(os.path.abspath(os.path.expanduser(os.fspath(p))))


@dataclass
class MetaProblem:
    path: str
    line: int
    offset: int
    reason: str
    raw: bytes


@dataclass
class MetaIndex:
    by_source: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_native: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[MetaProblem] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # meta file -> non-blank lines (records)

    def lookup(self, source_path: str, native_id: str | None) -> dict[str, Any] | None:
        found = self.by_source.get(source_path)
        if found is None and native_id:
            found = self.by_native.get(str(native_id))
        return found

    def digest_of(self, entries: list[dict[str, Any]]) -> str | None:
        if not entries:
            return None
        return digest_bytes(orjson.dumps(entries, option=orjson.OPT_SORT_KEYS))

    def __bool__(self) -> bool:
        return bool(self.by_source or self.by_native)


def _check(obj: dict[str, Any]) -> str | None:
    """Why the entry cannot be used, or None."""
    unknown = sorted(set(obj) - set(FIELDS))
    if unknown:
        return f"unknown fields {unknown}; allowed: {sorted(FIELDS)}"
    for k, v in obj.items():
        if v is None:
            continue
        types = FIELDS[k]
        if isinstance(v, bool) or not isinstance(v, types):
            names = " or ".join(_TYPE_NAMES.get(t.__name__, f"a {t.__name__}") for t in types)
            return f"`{k}` must be {names}, got {type(v).__name__} {str(v)[:40]!r}"
    if obj.get("outcome") is not None and obj["outcome"] not in OUTCOMES:
        return f"`outcome` must be one of {', '.join(OUTCOMES)}, got {obj['outcome']!r}"
    if obj.get("tags") is not None and not all(isinstance(t, str) for t in obj["tags"]):
        return "`tags` must be a list of strings"
    if isinstance(obj.get("reward"), float) and obj["reward"] != obj["reward"]:
        return "`reward` is NaN"
    return None


def load_meta(files: list[Path]) -> MetaIndex:
    idx = MetaIndex()
    for f in files:
        key = path_text(f)
        try:
            data = f.read_bytes()
        except OSError as e:
            idx.problems.append(MetaProblem(key, 0, 0, f"{f.name}: cannot read meta file: {e}", b""))
            idx.lines[key] = 1
            continue
        n_lines = 0
        offset = 0
        for n, raw in enumerate(data.splitlines(keepends=True), 1):
            off = offset
            offset += len(raw)
            if not raw.strip():
                continue
            n_lines += 1
            where = f"{f.name} line {n} (byte {off})"
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                idx.problems.append(MetaProblem(key, n, off, f"{where}: not valid JSON ({e})", raw))
                continue
            if not isinstance(obj, dict):
                idx.problems.append(MetaProblem(key, n, off, f"{where}: expected a JSON object", raw))
                continue
            key_source = obj.pop("source", None)
            key_native = obj.pop("native_id", None)
            if not (isinstance(key_source, str) and key_source) and not (
                isinstance(key_native, (str, int)) and str(key_native)
            ):
                idx.problems.append(MetaProblem(key, n, off, f"{where}: needs `source` or `native_id`", raw))
                continue
            why = _check(obj)
            if why is not None:
                idx.problems.append(MetaProblem(key, n, off, f"{where}: {why}", raw))
                continue
            if isinstance(key_source, str) and key_source:
                p = Path(os.path.expanduser(key_source))
                idx.by_source[norm_path(p if p.is_absolute() else f.parent / p)] = obj
            if key_native is not None and str(key_native):
                idx.by_native[str(key_native)] = obj
        idx.lines[key] = n_lines
    return idx


def apply_meta(t: dict[str, Any], meta: dict[str, Any]) -> None:
    for k, v in meta.items():
        if v is None:
            continue
        if k == "metadata":
            cur = t.get("metadata")
            base = orjson.loads(cur) if isinstance(cur, str) and cur else (cur or {})
            if not isinstance(base, dict):
                base = {"value": base}
            t["metadata"] = orjson.dumps({**base, **v}).decode()
        elif k == "tags":
            t["tags"] = sorted({*(t.get("tags") or []), *v})
        elif k in ("difficulty", "expected_answer"):
            t[k] = str(v)
        elif k == "reward":
            t[k] = float(v)
        else:
            t[k] = v
    if "outcome" in meta and "outcome_source" not in meta:
        t["outcome_source"] = "trajlab-meta"
