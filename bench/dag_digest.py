"""One digest of every step DAG built from a lab: the check that a speed change to the DAG rules changed
no node, edge, metric or candidate.

    python bench/dag_digest.py LAB                        # the build as installed (compiled or not)
    TRAJLAB_PURE_PYTHON=1 python bench/dag_digest.py LAB  # the same rules run from their Python source

Run it on the same lab before and after a change (for example on the benchmark labs of bench_dag.py, on
the example runs, on ../shared/corpus ingested): the digests must be equal. It builds in memory with
`trajlab.dag.build_dag` from the steps as `build_lab` streams them and writes nothing; `built_at`, the
only field that depends on the clock, is left out.
"""

from __future__ import annotations

import argparse
import hashlib

import orjson
from tqdm import tqdm

from trajlab.dag import build_dag
from trajlab.dag._scan import grouped_steps, locate, make_tasks
from trajlab.dag._store import _trajectory_rows
from trajlab.store import Lab, query


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lab")
    a = ap.parse_args()
    lab = Lab.open(a.lab)
    ids = query(lab, "SELECT trajectory_id FROM trajectories ORDER BY trajectory_id", as_="arrow")
    todo = ids.column(0).to_pylist()
    where, counts = locate(lab, set(todo))
    trows = _trajectory_rows(lab, todo)
    digest = hashlib.sha256()
    n = 0
    with tqdm(total=sum(counts.values()), unit="step", unit_scale=True, desc="dag digest") as bar:
        for task in make_tasks(where, counts, trows, 1 << 62):
            for tid, steps in grouped_steps(task.batches(16_384), task.counts):
                dag = build_dag(task.trajectories[tid], steps)
                metrics = {k: v for k, v in dag.metrics.items() if k != "built_at"}
                digest.update(orjson.dumps([dag.nodes, dag.edges, metrics], option=orjson.OPT_SORT_KEYS))
                n += 1
                bar.update(len(steps))
    print(f"{n} DAGs ({sum(counts.values())} steps): sha256 {digest.hexdigest()}")


if __name__ == "__main__":
    main()
