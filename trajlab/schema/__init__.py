"""The lab schema: documented table models, their Arrow schemas and content-hash ids."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ._arrow import arrow_schema, arrow_type, default_row
from ._core import (
    CALL_MODALITIES,
    MODALITIES,
    OUTCOMES,
    SCHEMA_VERSION,
    STEP_KINDS,
    Quarantine,
    Source,
    Step,
    Table,
    Trajectory,
)
from ._dag import EDGE_TYPES, NODE_STATUSES, DagEdge, DagMetrics, DagNode
from ._ids import DIGEST_ALGORITHM, digest_bytes, short_id, step_id, trajectory_id
from ._labels import NOT_A_FAILURE, UNSURE, GoldLabel, HumanLabel, JudgeLabel, PredictedLabel

TABLES: dict[str, type[Table]] = {
    "trajectories": Trajectory,
    "steps": Step,
    "sources": Source,
    "quarantine": Quarantine,
    "dag_nodes": DagNode,
    "dag_edges": DagEdge,
    "dag_metrics": DagMetrics,
    "judge_labels": JudgeLabel,
    "human_labels": HumanLabel,
    "gold_labels": GoldLabel,
    "predicted_labels": PredictedLabel,
}
"""Every table a lab can hold, by name. Stages only write tables listed here."""


def table_model(name: str) -> type[Table]:
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(TABLES)}") from None


def schema_as_dict() -> dict[str, Any]:
    """The whole lab schema as plain data (used by `trajlab schema --json`)."""
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "id_digest": DIGEST_ALGORITHM, "tables": {}}
    for name, model in TABLES.items():
        sch = arrow_schema(model)
        out["tables"][name] = {
            "doc": (model.__doc__ or "").strip(),
            "columns": [
                {
                    "name": f.name,
                    "type": str(f.type),
                    "nullable": f.nullable,
                    "description": model.model_fields[f.name].description or "",
                }
                for f in sch
            ],
        }
    return out


def schema_as_markdown() -> str:
    d = schema_as_dict()
    lines = [f"# trajlab lab schema v{d['schema_version']}", ""]
    for name, t in d["tables"].items():
        lines += [
            f"## `{name}`",
            "",
            t["doc"],
            "",
            "| column | type | null | description |",
            "|---|---|---|---|",
        ]
        for c in t["columns"]:
            lines.append(
                f"| `{c['name']}` | {c['type']} | {'yes' if c['nullable'] else 'no'} | {c['description']} |"
            )
        lines.append("")
    return "\n".join(lines)


def json_schema(name: str) -> str:
    model: type[BaseModel] = table_model(name)
    return json.dumps(model.model_json_schema(), indent=2)


__all__ = [
    "CALL_MODALITIES",
    "DIGEST_ALGORITHM",
    "EDGE_TYPES",
    "MODALITIES",
    "NODE_STATUSES",
    "NOT_A_FAILURE",
    "OUTCOMES",
    "SCHEMA_VERSION",
    "STEP_KINDS",
    "TABLES",
    "UNSURE",
    "DagEdge",
    "DagMetrics",
    "DagNode",
    "GoldLabel",
    "HumanLabel",
    "JudgeLabel",
    "PredictedLabel",
    "Quarantine",
    "Source",
    "Step",
    "Table",
    "Trajectory",
    "arrow_schema",
    "arrow_type",
    "default_row",
    "digest_bytes",
    "json_schema",
    "schema_as_dict",
    "schema_as_markdown",
    "short_id",
    "step_id",
    "table_model",
    "trajectory_id",
]
