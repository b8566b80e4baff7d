"""Tool-usage analytics: plain `.sql` analyses over a lab (trajlab/analysis/sql/) and their Python API.

Each function returns an `AnalysisResult` (Arrow table + the exact SQL + params + what the lab is
missing). Statistics SQL does not do well (bootstrap over trajectories, exact and permutation tests,
multiple-comparison corrections) run vectorized in numpy on the SQL's per-trajectory output. The calls
per (trajectory, tool), the expensive part of a gap query, can be materialized once per version of the
steps (`refresh_tool_usage`; the `tool_usage` view). See docs/analysis.md.
"""

from ._analyses import (
    FAILURE_SOURCES,
    capability_usage,
    error_recovery,
    failure_distribution,
    media_strategy,
    step_funnel,
    token_efficiency,
)
from ._catalog import (
    COUNT_SOURCES,
    GROUP_COLUMNS,
    TOOL_KEYS,
    AnalysisInfo,
    get_analysis,
    list_analyses,
    normalize_by,
    parse_value,
    tool_counts_sql,
    tool_use_sql,
)
from ._gaps import gaps, gaps_schema, one_outcome_sources
from ._materialize import AUTO_MATERIALIZE_CALLS, ToolUsageFile, refresh_tool_usage, tool_usage_rows
from ._result import MISSING_HINTS, AnalysisResult, missing_hint, read_metadata
from ._run import LABEL_TABLES, LabFacts, connection, lab_facts, run_analysis, run_sql
from ._stats import CORRECTIONS, TESTS, adjust_pvalues
from ._usage import TOOL_USAGE_DIR, ToolUsage, tool_usage_current

ANALYSES: dict[str, str] = {
    "gaps": "gaps",
    "capability": "capability_usage",
    "tokens": "token_efficiency",
    "media": "media_strategy",
    "failures": "failure_distribution",
    "funnel": "step_funnel",
    "recovery": "error_recovery",
}
"""Shipped analyses that have a Python API (with statistics and missing-data checks), by SQL name."""

__all__ = [
    "ANALYSES",
    "AUTO_MATERIALIZE_CALLS",
    "CORRECTIONS",
    "COUNT_SOURCES",
    "FAILURE_SOURCES",
    "GROUP_COLUMNS",
    "LABEL_TABLES",
    "MISSING_HINTS",
    "TESTS",
    "TOOL_KEYS",
    "TOOL_USAGE_DIR",
    "AnalysisInfo",
    "AnalysisResult",
    "LabFacts",
    "ToolUsage",
    "ToolUsageFile",
    "adjust_pvalues",
    "capability_usage",
    "connection",
    "error_recovery",
    "failure_distribution",
    "gaps",
    "gaps_schema",
    "get_analysis",
    "lab_facts",
    "list_analyses",
    "media_strategy",
    "missing_hint",
    "normalize_by",
    "one_outcome_sources",
    "parse_value",
    "read_metadata",
    "refresh_tool_usage",
    "run_analysis",
    "run_sql",
    "step_funnel",
    "token_efficiency",
    "tool_counts_sql",
    "tool_usage_current",
    "tool_usage_rows",
    "tool_use_sql",
]
