"""Run metadata sidecars: attach task ids, outcomes, splits... to runs whose files do not record them.

Most runners write no task id, benchmark or grade (a Codex rollout has no success field at all). A
`trajlab-meta.jsonl` file anywhere under an ingested folder, or a file given with `--meta`, adds
them. Each line is one JSON object with a key and the fields to set:

    {"source": "runs/codex/rollout-...jsonl", "task_id": "v-017", "outcome": "failure", "split": "train"}
    {"native_id": "019e1625-789d-...", "benchmark": "omnigaia", "expected_answer": "42"}

`source` is a path relative to the meta file (or absolute); `native_id` is the runner's session or
instance id. Sidecar values override what the adapter found; `metadata` objects are merged.
Lines that cannot be used are quarantined with their file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

META_NAMES = ("trajlab-meta.jsonl",)
META_SUFFIX = ".trajlab-meta.jsonl"
FIELDS = frozenset(
    [
        "task_id",
        "task",
        "benchmark",
        "split",
        "condition",
        "tags",
        "domain",
        "difficulty",
        "model",
        "harness",
        "reasoning_effort",
        "outcome",
        "reward",
        "outcome_source",
        "expected_answer",
        "final_answer",
        "metadata",
    ]
)


def is_meta_file(path: Path) -> bool:
    return path.name in META_NAMES or path.name.endswith(META_SUFFIX)


@dataclass
class MetaIndex:
    by_source: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_native: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[tuple[str, int, str, bytes]] = field(default_factory=list)  # (file, line, reason, raw)
    lines: int = 0

    def lookup(self, source_path: str, native_id: str | None) -> dict[str, Any] | None:
        found = self.by_source.get(source_path)
        if found is None and native_id:
            found = self.by_native.get(native_id)
        return found

    def __bool__(self) -> bool:
        return bool(self.by_source or self.by_native)


def load_meta(files: list[Path]) -> MetaIndex:
    idx = MetaIndex()
    for f in files:
        try:
            data = f.read_bytes()
        except OSError as e:
            idx.problems.append((str(f), 0, f"cannot read meta file: {e}", b""))
            continue
        for n, raw in enumerate(data.splitlines(), 1):
            if not raw.strip():
                continue
            idx.lines += 1
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                idx.problems.append((str(f), n, f"meta line {n}: not valid JSON ({e})", raw))
                continue
            if not isinstance(obj, dict):
                idx.problems.append((str(f), n, f"meta line {n}: expected an object", raw))
                continue
            key_source = obj.pop("source", None)
            key_native = obj.pop("native_id", None)
            if not key_source and not key_native:
                idx.problems.append((str(f), n, f"meta line {n}: needs `source` or `native_id`", raw))
                continue
            unknown = set(obj) - FIELDS
            if unknown:
                idx.problems.append(
                    (
                        str(f),
                        n,
                        f"meta line {n}: unknown fields {sorted(unknown)}; allowed: {sorted(FIELDS)}",
                        raw,
                    )
                )
                continue
            if "outcome" in obj and obj["outcome"] not in ("success", "failure", "unknown"):
                idx.problems.append(
                    (str(f), n, f"meta line {n}: outcome must be success, failure or unknown", raw)
                )
                continue
            if key_source:
                p = Path(key_source)
                p = p if p.is_absolute() else (f.parent / p)
                idx.by_source[str(p.absolute())] = obj
            if key_native:
                idx.by_native[str(key_native)] = obj
    return idx


def apply_meta(t: dict[str, Any], meta: dict[str, Any]) -> None:
    for k, v in meta.items():
        if v is None:
            continue
        if k == "metadata" and isinstance(v, dict):
            cur = t.get("metadata")
            base = orjson.loads(cur) if isinstance(cur, str) and cur else (cur or {})
            t["metadata"] = orjson.dumps({**base, **v}).decode()
        elif k == "tags":
            t["tags"] = sorted({*(t.get("tags") or []), *v})
        else:
            t[k] = v
    if "outcome" in meta and "outcome_source" not in meta:
        t["outcome_source"] = "trajlab-meta"
