"""A fixed DAG input and a digest of every DAG row built from it, to prove that speed work on the DAG
builder changes no node, edge or metric.

The input is the ingest golden input (every adapter fixture, a corpus-shaped sample, broken files; see
tests/ingest/golden_rows.py) plus 12 generated omni-modal example tasks (seed 3), ingested into one lab.
`snapshot(lab)` gives, per DAG table, {row key: xxh3 of the row as canonical JSON}; `built_at` is left
out and trajectory ids are kept (they are content hashes of the inputs, stable across runs). The
recorded snapshot is `golden_dag.json`; rewrite it (only when a change of DAG rows is intended) with:

    python tests/dag/golden_dag.py --write
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import xxhash

from trajlab.store import Lab

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden_dag.json"
KEYS = {
    "dag_nodes": ("trajectory_id", "node_id"),
    "dag_edges": ("trajectory_id", "src", "dst", "type", "artifact", "rule"),
    "dag_metrics": ("trajectory_id",),
}
VOLATILE = {"built_at"}


def golden_rows() -> Any:
    """tests/ingest/golden_rows.py, loaded by path (test folders are not packages)."""
    spec = importlib.util.spec_from_file_location(
        "golden_rows_for_dag", HERE.parent / "ingest" / "golden_rows.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build_golden_lab(tmp: Path) -> tuple[Lab, Path]:
    """Ingest the fixed input into tmp/lab (no DAGs yet); returns (lab, input root)."""
    from trajlab.examples import generate_examples
    from trajlab.ingest import ingest

    root = golden_rows().build_input(tmp / "in")
    generate_examples(root / "examples", n_tasks=12, seed=3)
    ingest([root], tmp / "lab", workers=1, progress=False)
    return Lab.open(tmp / "lab"), root


def _canon(v: Any, root: str) -> Any:
    if isinstance(v, str):
        return v.replace(root, "<root>")
    if isinstance(v, list):
        return [_canon(x, root) for x in v]
    if isinstance(v, dict):
        return {k: _canon(x, root) for k, x in v.items()}
    return v


def snapshot(lab: Lab, root: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for table, key_cols in KEYS.items():
        rows: dict[str, str] = {}
        for row in lab.read(table).to_pylist():
            row = {k: _canon(v, str(root)) for k, v in row.items() if k not in VOLATILE}
            key = "|".join(str(row.get(k)) for k in key_cols)
            digest = xxhash.xxh3_64_hexdigest(orjson.dumps(row, option=orjson.OPT_SORT_KEYS))
            if key in rows:  # parallel edges of the same type and artifact: keep them all
                n = 1
                while f"{key}#{n}" in rows:
                    n += 1
                key = f"{key}#{n}"
            rows[key] = digest
        out[table] = dict(sorted(rows.items()))
    return out


def dag_snapshot(tmp: Path, workers: int = 1) -> dict[str, dict[str, str]]:
    from trajlab.dag import build_lab

    lab, root = build_golden_lab(tmp)
    rep = build_lab(lab, progress=False, workers=workers)
    assert not rep.failed, rep.failed[:3]
    return snapshot(Lab.open(lab.root), root)


def main() -> None:
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as d:
        snap = dag_snapshot(Path(d))
    GOLDEN.write_bytes(orjson.dumps(snap, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    print(f"wrote {GOLDEN}: " + ", ".join(f"{t} {len(v)} rows" for t, v in snap.items()))


if __name__ == "__main__":
    main()
