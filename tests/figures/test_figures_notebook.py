"""notebooks/figures.ipynb runs from a clean folder and reproduces every figure and table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajlab.figures import FIGURES, find_browser

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "figures.ipynb"


@pytest.mark.slow
@pytest.mark.browser
def test_notebook_reproduces_every_figure_and_table(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    if find_browser() is None:
        pytest.skip("no Chromium (apt-get install chromium)")
    out = tmp_path / "out"
    monkeypatch.setenv("TRAJLAB_NOTEBOOK_OUT", str(out))
    monkeypatch.setenv("TRAJLAB_NOTEBOOK_TASKS", "20")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"
    ]
    assert not errors
    index = json.loads((out / "figures" / "index.json").read_text())
    assert index["skipped"] == {} and index["failed"] == {}
    for name in FIGURES:
        assert index["produced"][name] == [f"{name}.pdf", f"{name}.png", f"{name}.svg"]
        assert (out / "figures" / f"{name}.pdf").stat().st_size > 1000
        assert (out / "tables" / f"{name}.tex").read_text().count("\\toprule") == 1
    printed = "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if "text" in o
    )
    for name in FIGURES:
        assert f"{name}: " in printed
    # the example runs plant a skill bonus: the figure's numbers come from the lab the notebook built
    side = json.loads((out / "figures" / "accuracy_by_difficulty.json").read_text())
    assert {r["condition"] for r in side["data"]} == {"no-skill", "skill"}
    assert side["lab"] == str(out / "lab")
