"""A fixed ingest input and a digest of every row it produces, to prove that speed work changes no row.

The input is every adapter fixture (tests/fixtures/formats, codex, claude_code), a small synthesized
sample in the shape of the benchmark corpus (tests/fixtures/ingest_golden: Codex rollouts with unified
exec, Claude Code sessions with a sub-agent) and a few broken files made here (a line that is not JSON,
invalid UTF-8, a cut-off last line, an empty file), so the quarantine rows are covered too.

`snapshot(lab, root)` gives, per table, {row key: xxh3 of the row as canonical JSON}. Columns that
change between runs (`ingested_at`, `mtimes_ns`) are left out and the temporary input folder is
written as `<root>`. The recorded snapshot is `golden_rows.json`; rewrite it (only when a change of
ingested rows is intended) with:

    python tests/ingest/golden_rows.py --write

The snapshot also records the adapter versions and `ROWS_VERSION` it was made with (`_versions`). A
rewrite in which trajectory or step rows of a format changed, while neither that adapter's `version`
nor `ROWS_VERSION` moved, is refused: existing labs would keep the old rows, since incremental ingest
re-parses unchanged files only when those versions change.
"""

from __future__ import annotations

import base64
import datetime as dt
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import xxhash

from trajlab.store import Lab

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
GOLDEN = HERE / "golden_rows.json"
INPUTS = ("formats", "codex", "claude_code", "ingest_golden")
VOLATILE = {"ingested_at", "mtimes_ns"}
KEYS = {
    "trajectories": ("trajectory_id",),
    "steps": ("step_id",),
    "sources": ("source_path",),
    "quarantine": ("unit_path", "source_path", "line", "byte_offset", "reason"),
}

BROKEN = {
    "broken/rollout-2026-01-01T00-00-00-bad1.jsonl": (
        b'{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"bad1"}}\n'
        b"this is not json\n"
        b'{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message",'
        b'"role":"user","content":[{"type":"input_text","text":"caf\xc3"}]}}\n'
        b'{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"function_call",'
        b'"name":"exec_command","arguments":"{\\"cmd\\":\\"ls -la\\"}","call_id":"c1"}}\n'
        b'{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"function_c'
    ),
    "broken/empty.jsonl": b"",
}


def build_input(dest: Path) -> Path:
    """Copy the fixtures and write the broken files under `dest`; returns `dest`."""
    for name in INPUTS:
        shutil.copytree(FIXTURES / name, dest / name)
    for rel, data in BROKEN.items():
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return dest


def _canon(v: Any, root: str) -> Any:
    if isinstance(v, str):
        return v.replace(root, "<root>")
    if isinstance(v, bytes):
        return "b64:" + base64.b64encode(v).decode()
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, list):
        return [_canon(x, root) for x in v]
    if isinstance(v, dict):
        return {k: _canon(x, root) for k, x in v.items()}
    return v


def canonical_rows(lab: Lab, table: str, root: Path) -> dict[str, dict[str, Any]]:
    """Rows of `table` keyed by their key columns, volatile columns dropped, paths relative to `root`."""
    out: dict[str, dict[str, Any]] = {}
    for row in lab.read(table).to_pylist():
        row = {k: _canon(v, str(root)) for k, v in row.items() if k not in VOLATILE}
        key = "|".join(str(row.get(k)) for k in KEYS[table])
        assert key not in out, f"{table}: duplicate key {key}"
        out[key] = row
    return out


def row_digest(row: dict[str, Any]) -> str:
    return xxhash.xxh3_64_hexdigest(orjson.dumps(row, option=orjson.OPT_SORT_KEYS))


def snapshot(lab: Lab, root: Path) -> dict[str, dict[str, str]]:
    return {t: {k: row_digest(r) for k, r in sorted(canonical_rows(lab, t, root).items())} for t in KEYS}


def diff_snapshots(
    now: dict[str, dict[str, str]], want: dict[str, dict[str, str]], tables: Iterable[str]
) -> list[str]:
    """New, missing and changed rows between two snapshots, table by table (also used by the DAG golden
    test)."""
    out = []
    for table in tables:
        a, b = now.get(table, {}), want.get(table, {})
        out += [f"{table}: new row {k}" for k in sorted(a.keys() - b.keys())]
        out += [f"{table}: missing row {k}" for k in sorted(b.keys() - a.keys())]
        out += [f"{table}: changed row {k}" for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]
    return out


def ingest_snapshot(tmp: Path, workers: int = 1) -> tuple[dict[str, dict[str, str]], Lab, Path]:
    from trajlab.ingest import ingest

    root = build_input(tmp / "in")
    ingest([root], tmp / "lab", workers=workers, progress=False)
    lab = Lab.open(tmp / "lab")
    return snapshot(lab, root), lab, root


def versions() -> dict[str, int]:
    from trajlab.formats import ROWS_VERSION, adapters

    return {"rows": ROWS_VERSION, **{a.name: a.version for a in adapters()}}


def unbumped(
    now: dict[str, dict[str, str]], want: dict[str, Any], lab: Lab, root: Path, current: dict[str, int]
) -> list[str]:
    """Formats whose trajectory or step rows changed (or vanished) against `want` while neither their
    adapter's version nor ROWS_VERSION differs from the versions `want` was recorded with."""
    old = want.get("_versions") or {}
    if old.get("rows", 1) != current["rows"]:
        return []
    fmt = {r["trajectory_id"]: r["format"] for r in canonical_rows(lab, "trajectories", root).values()}
    steps = canonical_rows(lab, "steps", root)
    changed: set[str] = set()
    for table in ("trajectories", "steps"):
        a, b = now.get(table, {}), want.get(table, {})
        for k in b:
            if k not in a:
                changed.add("(a format whose rows vanished)")
            elif a[k] != b[k]:
                tid = k if table == "trajectories" else steps[k]["trajectory_id"]
                changed.add(fmt[tid])
    return sorted(f for f in changed if f not in old or old.get(f, 1) == current.get(f))


def main() -> None:
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    want = orjson.loads(GOLDEN.read_bytes()) if GOLDEN.exists() else {}
    current = versions()
    with tempfile.TemporaryDirectory() as d:
        snap, lab, root = ingest_snapshot(Path(d))
        stale = unbumped(snap, want, lab, root, current) if want else []
    if stale:
        sys.exit(
            f"rows of {', '.join(stale)} changed but no version did: bump that adapter's `version` (or "
            "ROWS_VERSION in trajlab/formats/_finish.py for a change every adapter's rows go through), "
            "so that existing labs re-parse their files, then write again"
        )
    out: dict[str, Any] = {**snap, "_versions": current}
    GOLDEN.write_bytes(orjson.dumps(out, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    print(f"wrote {GOLDEN}: " + ", ".join(f"{t} {len(v)} rows" for t, v in snap.items()))


if __name__ == "__main__":
    main()
