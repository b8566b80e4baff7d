"""Measure the DAG's decisive-step candidates against the Who&When human annotations.

    python bench/eval_candidates_whowhen.py                        # ../shared/corpus/who_and_when
    python bench/eval_candidates_whowhen.py --corpus DIR [--json]

Who&When logs (multi-agent runs, one step per message) carry the human-annotated decisive mistake: the
step (`mistake_step`, equal to `steps.step_index`) and the agent (`mistake_agent`), which the adapter
keeps in `trajectories.metadata.who_and_when`. The script ingests DIR into a temporary lab, builds the
DAGs and reports, over the annotated runs, how often the annotated step is the DAG's top candidate
(top-1) or among its first three distinct candidate steps (top-3), and how often the top candidate's
agent is the annotated agent; against trivial baselines: the first error step, the last step, and a
uniformly random step (expected accuracy). It only measures: nothing is tuned to this set. Since
2026-12-02 candidate rules are designed by reading only the runs of the *design* half (files numbered 1
mod 4); the *check* half (3 mod 4) is read only through this script's figures, so its figures are the
honest ones for rules added since. (The benchmark's other half is held out by its authors and is not
here.) Exits 0 with a note when the corpus is absent.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "who_and_when"


def _rows(corpus: Path) -> list[dict[str, Any]]:
    from trajlab.dag import build_lab
    from trajlab.ingest import ingest
    from trajlab.store import Lab

    with tempfile.TemporaryDirectory() as d:
        ingest([corpus], Path(d) / "lab", workers=1, progress=False)
        lab = Lab.open(Path(d) / "lab")
        rep = build_lab(lab, progress=False, workers=1)
        if rep.failed:
            sys.exit(f"DAG builds failed: {rep.failed[:3]}")
        lab = Lab.open(lab.root)
        trajs = {t["trajectory_id"]: t for t in lab.read("trajectories").to_pylist()}
        metrics = {m["trajectory_id"]: m for m in lab.read("dag_metrics").to_pylist()}
        steps: dict[str, dict[int, str]] = defaultdict(dict)  # step index -> agent
        for n in lab.read("dag_nodes").to_pylist():
            steps[n["trajectory_id"]][n["node_id"]] = n["agent_id"]
    out = []
    for tid, t in trajs.items():
        meta = t.get("metadata")
        meta = orjson.loads(meta) if isinstance(meta, (str, bytes)) else (meta or {})
        ann = meta.get("who_and_when") or {}
        ms = ann.get("mistake_step")
        if not isinstance(ms, int) or ms not in steps[tid]:
            continue
        m = metrics[tid]
        cands = orjson.loads(m["decisive_candidates"] or "[]")
        ranked = list(dict.fromkeys(c["step_index"] for c in cands if c["step_index"] is not None))
        out.append(
            {
                "trajectory_id": tid,
                "subset": meta.get("subset") or "?",
                "half": _half(t.get("source_path") or ""),
                "mistake_step": ms,
                "mistake_agent": ann.get("mistake_agent"),
                "ranked": ranked,
                "first_error": m["first_error_step"],
                "last": max(steps[tid]),
                "n_steps": len(steps[tid]),
                "agents": steps[tid],
            }
        )
    return out


def _half(source_path: str) -> str:
    """`design` for files numbered 1 mod 4, `check` for 3 mod 4 (the folder holds the odd numbers)."""
    stem = Path(source_path).stem
    if not stem.isdigit():
        return "?"
    return "design" if int(stem) % 4 == 1 else "check"


def _score(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = len(rows)
    if not n:
        return {"runs": 0}

    def share(hits: int | float) -> float:
        return round(100 * hits / n, 1)

    top1 = sum(1 for r in rows if r["ranked"][:1] == [r["mistake_step"]])
    top3 = sum(1 for r in rows if r["mistake_step"] in r["ranked"][:3])
    agent1 = sum(1 for r in rows if r["ranked"] and r["agents"].get(r["ranked"][0]) == r["mistake_agent"])
    return {
        "runs": n,
        "with_candidates": sum(1 for r in rows if r["ranked"]),
        "dag_top1": share(top1),
        "dag_top3": share(top3),
        "dag_top1_agent": share(agent1),
        "first_error": share(sum(1 for r in rows if r["first_error"] == r["mistake_step"])),
        "last_step": share(sum(1 for r in rows if r["last"] == r["mistake_step"])),
        "last_step_agent": share(sum(1 for r in rows if r["agents"].get(r["last"]) == r["mistake_agent"])),
        "random_step": share(sum(1 / r["n_steps"] for r in rows)),
        "random_step_top3": share(sum(min(3, r["n_steps"]) / r["n_steps"] for r in rows)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args()
    if not a.corpus.is_dir():
        print(f"skipped: no Who&When corpus at {a.corpus}")
        return
    rows = _rows(a.corpus)
    by = defaultdict(list)
    for r in rows:
        by[r["subset"]].append(r)
    halves = defaultdict(list)
    for r in rows:
        halves[r["half"]].append(r)
    table = {
        "all": _score(rows),
        **{k: _score(v) for k, v in sorted(by.items())},
        **{f"{k} half": _score(v) for k, v in sorted(halves.items())},
    }
    if a.json:
        print(orjson.dumps(table, option=orjson.OPT_INDENT_2).decode())
        return
    cols = list(table["all"])
    print(f"{'':22}" + "".join(f"{k:>20}" for k in table))
    for c in cols:
        print(f"{c:22}" + "".join(f"{t.get(c, '')!s:>20}" for t in table.values()))
    print("(percent of annotated runs; top-3 = among the first three distinct candidate steps)")


if __name__ == "__main__":
    main()
