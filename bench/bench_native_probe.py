"""Probe (not a test, not part of trajlab): how fast would a compiled ingest core parse the benchmark corpus?

    python bench/bench_native_probe.py                  # the bench_ingest corpus, 3 interleaved runs
    python bench/bench_native_probe.py --runs 5

Ingest's unmet speed goal (at least 50% of the parse-only limit in one process) cannot be reached by the
Python adapters: `bench_ingest.py --modes parse,phases` shows that parse-only + finishing the rows +
Arrow conversion alone already take the whole budget. This probe measures the first stage of the way
out, a compiled core: `bench/native_probe` (Rust, PyO3 0.17 and serde_json 1.0 from Debian's packaged
crates, built offline with `cargo build --release`) parses every line into typed records that keep the
fields the Codex and Claude Code adapters read and skip the rest, without making Python objects and with
the GIL released. Modes, each in a fresh process, interleaved:

  parse       the goal's baseline, as bench_ingest.py measures it: every line of every file, orjson.loads
  native-1    read each file and parse it with the probe, one thread
  native-2    the same on two threads of this one process (the probe releases the GIL), files split in
              two halves of equal bytes
  columns-1   read each file, parse it and build step columns in Arrow's layout (kind, text, call id,
              tool name, arguments, output, timestamp, exit code; one row per message, reasoning, tool
              call or tool result), handed to pyarrow as buffers (`pa.Array.from_buffers`): the
              mechanics of a JSON-to-Arrow core, not the adapters' rules (no finishing, no tool
              normalization, no ids), so a floor for such a core, not its speed
  columns-2   the same on two threads of this one process

Before timing, one columns-1 run validates every Arrow array it builds (`Table.validate(full=True)`).

Needs cargo and `apt-get install librust-pyo3-dev librust-serde-json-dev`; says what is missing otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBE = HERE / "native_probe"
OUT = HERE / "out" / "native_probe"

WORKER = r"""
import glob, json, os, sys, time, threading
mode, corpus, lib = sys.argv[1], sys.argv[2], sys.argv[3]
VALIDATE = len(sys.argv) > 4
files = sorted(glob.glob(os.path.join(corpus, "**", "*.jsonl"), recursive=True))
if mode == "parse":
    import orjson
    loads = orjson.loads
    t0 = time.perf_counter(); c0 = time.process_time(); n = 0
    for f in files:
        with open(f, "rb") as fh:
            for line in fh:
                loads(line); n += 1
else:
    sys.path.insert(0, lib)
    import pyarrow as pa
    from trajlab_native_probe import parse_typed, step_columns
    def table(cols):
        arrays, names = [], []
        for name, n, nulls, valid, offsets, data in cols:
            validity = pa.py_buffer(valid) if nulls else None
            if name == "exit_code":
                arrays.append(pa.Array.from_buffers(pa.int64(), n, [validity, pa.py_buffer(offsets)], nulls))
            else:
                arrays.append(pa.Array.from_buffers(
                    pa.string(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], nulls))
            names.append(name)
        return pa.Table.from_arrays(arrays, names=names)
    def work(part, out):
        n = 0
        for f in part:
            with open(f, "rb") as fh:
                if mode.startswith("columns"):
                    t = table(step_columns(fh.read()))
                    if VALIDATE:
                        t.validate(full=True)
                    n += t.num_rows
                else:
                    n += parse_typed(fh.read())[0]
        out.append(n)
    halves, load = ([], []), [0, 0]
    for f in sorted(files, key=os.path.getsize, reverse=True):
        k = 0 if load[0] <= load[1] else 1
        halves[k].append(f); load[k] += os.path.getsize(f)
    counts = []
    t0 = time.perf_counter(); c0 = time.process_time()
    if mode in ("native-1", "columns-1"):
        work(files, counts)
    else:
        th = threading.Thread(target=work, args=(halves[1], counts))
        th.start(); work(halves[0], counts); th.join()
    n = sum(counts)
print("RESULT " + json.dumps({"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0, "records": n}))
"""


def build() -> Path:
    """Build the probe offline; the folder holding `trajlab_native_probe.so`."""
    if shutil.which("cargo") is None:
        raise SystemExit("cargo is not installed (rustup's or Debian's `cargo`)")
    registry = Path("/usr/share/cargo/registry")
    missing = [c for c in ("pyo3-0.17", "serde_json-1") if not list(registry.glob(f"{c}*"))]
    if missing:
        raise SystemExit(
            f"Debian's crates {missing} are not in {registry}: "
            "apt-get install librust-pyo3-dev librust-serde-json-dev"
        )
    env = dict(os.environ, PYO3_PYTHON=sys.executable, CARGO_TARGET_DIR=str(OUT / "target"))
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=PROBE, env=env, check=True)
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.copy(OUT / "target" / "release" / "libtrajlab_native_probe.so", OUT / "trajlab_native_probe.so")
    return OUT


def measure(mode: str, corpus: Path, lib: Path, validate: bool = False) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", WORKER, mode, str(corpus), str(lib), *(["validate"] if validate else [])],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(next(x for x in r.stdout.splitlines() if x.startswith("RESULT "))[7:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=HERE / "out" / "corpus")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if not a.corpus.exists():
        raise SystemExit(f"no corpus at {a.corpus}: run bench/bench_ingest.py (or synth_rollouts.py) first")
    lib = build()
    total = sum(f.stat().st_size for f in a.corpus.rglob("*.jsonl"))
    checked = measure("columns-1", a.corpus, lib, validate=True)  # every Arrow array validated in full
    print(f"columns: {checked['records']:,} step rows, every array valid", file=sys.stderr)
    modes = ["parse", "native-1", "native-2", "columns-1", "columns-2"]
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for r in range(a.runs):
        for m in modes if r % 2 == 0 else modes[::-1]:
            res = measure(m, a.corpus, lib)
            runs[m].append(res)
            what = "step rows" if m.startswith("columns") else "records"
            print(f"run {r + 1} {m:9s} {res['seconds']:6.2f} s  {res['records']:,} {what}", file=sys.stderr)
    for group in (modes[:3], modes[3:]):  # records parsed; step rows built
        counts = {m: {x["records"] for x in runs[m]} for m in group}
        if len(set().union(*counts.values())) != 1:
            raise SystemExit(f"the modes saw different counts: {counts}")
    print(f"\n{total / 1e6:.0f} MB; medians of {a.runs} runs (wall s / CPU s):")
    med = {m: statistics.median(x["seconds"] for x in rs) for m, rs in runs.items()}
    for m, rs in runs.items():
        cpu = statistics.median(x["cpu"] for x in rs)
        print(f"- {m}: {med[m]:.2f} / {cpu:.2f} ({total / 1e6 / med[m]:.0f} MB/s)")
    for m in modes[1:]:
        per = [p["seconds"] / x["seconds"] for p, x in zip(runs["parse"], runs[m])]
        print(f"- {m} / parse-only throughput, paired by round: median {statistics.median(per):.2f}x")


if __name__ == "__main__":
    main()
