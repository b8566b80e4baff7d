"""Stage 2: step DAGs of trajectories, their metrics and ranked decisive-step candidates.

`build_dag(trajectory, steps)` turns one trajectory's rows into a `StepDag`; `build_lab(lab)` does it
for every trajectory of a lab (incremental, streaming) and stores `dag_nodes`, `dag_edges` and
`dag_metrics`; `load_dag` reads one back; `render_text` and `export` show and write it.
The rules are documented in docs/dag.md.
"""

from ._analyze import required_modalities
from ._build import build_dag
from ._candidates import SIGNALS
from ._model import DAG_VERSION, StepDag
from ._render import EXPORT_FORMATS, export, render_text
from ._store import DagInterrupted, DagReport, build_lab, load_dag, read_steps, resolve_trajectory_id

__all__ = [
    "DAG_VERSION",
    "EXPORT_FORMATS",
    "SIGNALS",
    "DagInterrupted",
    "DagReport",
    "StepDag",
    "build_dag",
    "build_lab",
    "export",
    "load_dag",
    "read_steps",
    "render_text",
    "required_modalities",
    "resolve_trajectory_id",
]
