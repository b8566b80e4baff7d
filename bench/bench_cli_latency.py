"""Benchmark: wall time of the quick interactive commands, this code against a base revision (not a test).

    python bench/bench_cli_latency.py --base ef963bf              # 9 interleaved rounds
    python bench/bench_cli_latency.py --base ef963bf --rounds 15 --json bench/out/cli_latency.json

A command like `trajlab sql LAB "select 1"` does almost no work: its time is the interpreter start-up
and the imports. Each round runs every command once as this checkout's code and once as the `trajlab`
package of `--base` (extracted under bench/out/rev-REV by `git archive` and put first on PYTHONPATH), in
fresh processes, alternating which goes first; a warm-up round is discarded. Reported: the median wall
time of each command for both, their ratio (base / this: above 1 is faster now), and the modules each
imports that only other stages need. The lab is the example run set (`trajlab examples`, ingested and
its DAGs built), made once under bench/out/cli-lab.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HEAVY = ("pandas", "scipy", "pyarrow.dataset", "plotly", "dash", "sklearn", "polars", "networkx")

# Runs one command in this process and prints the heavy modules it imported (the timed run is separate)
PROBE = """
import contextlib, io, json, sys
args, heavy = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["trajlab", *args]
from trajlab.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""
RUN = "import sys; from trajlab.cli import main; sys.argv = ['trajlab', *sys.argv[1:]]; main()"


def checkout(rev: str) -> Path:
    dest = HERE / "out" / f"rev-{rev}"
    if not (dest / "trajlab" / "__init__.py").exists():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "trajlab"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def make_lab(dest: Path) -> tuple[Path, str]:
    lab = dest / "lab"
    if not (lab / "lab.json").exists():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for cmd in (
            ["examples", str(dest / "runs")],
            ["ingest", str(dest / "runs"), "--out", str(lab)],
            ["dag", str(lab)],
        ):
            subprocess.run([sys.executable, "-c", RUN, *cmd], check=True, capture_output=True, cwd=ROOT)
    out = subprocess.run(
        [sys.executable, "-c", RUN, "sql", str(lab), "select min(trajectory_id) from trajectories", "--format",
         "csv"],
        check=True, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    return lab, out.stdout.strip().splitlines()[-1]


def env_for(code: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    return env


def timed(args: list[str], env: dict[str, str]) -> float:
    # outside the repository, so that the working folder does not shadow PYTHONPATH's revision
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", RUN, *args], env=env, cwd=HERE / "out", capture_output=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"trajlab {' '.join(args)} failed ({p.returncode}): {p.stderr.decode()[-500:]}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="git revision to compare against")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    a = ap.parse_args()
    lab, tid = make_lab(HERE / "out" / "cli-lab")
    commands = {
        "sql select 1": ["sql", str(lab), "select 1"],
        "sql tool_calls": ["sql", str(lab), "select tool, count(*) from tool_calls group by all"],
        "sql --views": ["sql", str(lab), "--views"],
        "analyze capability": ["analyze", "capability", str(lab)],
        "dag show": ["dag", "show", str(lab), tid[:10]],
        "schema steps": ["schema", "steps"],
        "gaps": ["gaps", str(lab)],
    }
    codes = {"this": env_for(None), "base": env_for(checkout(a.base))}
    heavy = {
        (name, which): json.loads(
            subprocess.run(
                [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
                env=env, cwd=HERE / "out", capture_output=True, text=True, check=True,
            ).stdout.strip().splitlines()[-1]
        )
        for name, args in commands.items()
        for which, env in codes.items()
    }  # fmt: skip
    times: dict[tuple[str, str], list[float]] = {k: [] for k in heavy}
    for r in range(a.rounds + 1):
        order = ["this", "base"] if r % 2 else ["base", "this"]
        for name, args in commands.items():
            for which in order:
                dt = timed(args, codes[which])
                if r:  # round 0 warms the page cache
                    times[(name, which)].append(dt)
        print(f"round {r}/{a.rounds} done", file=sys.stderr)
    rows = []
    print(f"\n{'command':20s} {'base s':>8s} {'this s':>8s} {'base/this':>10s}  heavy imports (base -> this)")
    for name in commands:
        b, t = statistics.median(times[(name, "base")]), statistics.median(times[(name, "this")])
        hb, ht = heavy[(name, "base")], heavy[(name, "this")]
        print(f"{name:20s} {b:8.3f} {t:8.3f} {b / t:9.2f}x  {','.join(hb) or '-'} -> {','.join(ht) or '-'}")
        rows.append({"command": name, "base_s": b, "this_s": t, "ratio": b / t, "heavy_base": hb, "heavy_this": ht,
                     "all_base": times[(name, "base")], "all_this": times[(name, "this")]})  # fmt: skip
    load = os.getloadavg()
    print(f"\nmedians of {a.rounds} interleaved rounds; base = {a.base}; load average {load[0]:.2f}")
    if a.json:
        a.json.write_text(
            json.dumps({"base": a.base, "rounds": a.rounds, "load": load, "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
