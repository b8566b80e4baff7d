"""The quick commands (`trajlab sql`, `analyze`, `dag show`, `schema`) do not import the heavy libraries
that only other stages need: pandas (which `pyarrow.dataset` imports: 0.4-0.5 s), scipy (0.15 s),
plotly, dash, scikit-learn, polars. Before, `trajlab sql LAB "select 1"` took 1.6-2.0 s, 1.7 s of it
imports. `dag show` may import pandas: pyarrow does as soon as it converts any Python value
(`pa.scalar("x", pa.string())`), which looking up one trajectory's rows needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trajlab.dag import build_lab
from trajlab.ingest import ingest

HEAVY = ["pandas", "scipy", "pyarrow.dataset", "plotly", "dash", "sklearn", "polars"]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

RUN = """
import contextlib, io, json, sys
from trajlab.cli import main
args, watched = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["trajlab", *args]
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = 0
    try:
        main()
    except SystemExit as e:
        code = e.code
heavy = sorted(m for m in watched if m in sys.modules)
print(json.dumps({"code": code, "heavy": heavy, "out": out.getvalue()[:200]}))
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("cost") / "lab"
    ingest([FIXTURES / "codex"], root, workers=1, progress=False)
    build_lab(root, workers=1, progress=False)
    from trajlab.store import Lab

    tid = Lab.open(root).read("trajectories", ["trajectory_id"]).column(0)[0].as_py()
    return root, tid


@pytest.mark.parametrize(
    "args",
    [
        ["sql", "{lab}", "select count(*) from tool_calls"],
        ["sql", "{lab}", "--views"],
        ["analyze", "capability", "{lab}"],
        ["dag", "show", "{lab}", "{prefix}"],
        ["schema", "steps"],
    ],
)
def test_quick_commands_do_not_import_the_heavy_libraries(lab: tuple[Path, str], args: list[str]) -> None:
    root, tid = lab
    argv = [a.format(lab=root, prefix=tid[:8]) for a in args]
    heavy = [m for m in HEAVY if not (m == "pandas" and args[0] == "dag")]
    p = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(argv), json.dumps(heavy)], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["code"] in (0, None), (r, p.stderr)
    assert r["out"].strip(), r  # the command did its work
    assert r["heavy"] == [], f"trajlab {' '.join(args)} imported {r['heavy']}"
