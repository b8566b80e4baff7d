"""The catalog of shipped `.sql` analyses: their header docs, parameters and placeholders.

Every file in `trajlab/analysis/sql/` starts with a comment header::

    -- @title One line saying what it computes
    -- @kind analysis            (or `view`: also registered as a DuckDB view of that name)
    -- @by model, domain         (default grouping of the Python API, optional)
    -- @param bins=10 what the parameter means       (a DuckDB `$bins` parameter and its default)
    -- free text ...

Placeholders let one file serve any grouping; they are filled in before DuckDB sees the SQL:
`{{by}}` becomes the grouping columns each followed by a comma (`model, harness, `) and
`{{partition_by}}` becomes `PARTITION BY model, harness` (both become nothing without grouping);
`{{key}}` becomes the expression that names a call's tool (see TOOL_KEYS); `{{tool_counts}}` becomes a
relation with one row per (trajectory, tool it called) and its `n_calls` (see `tool_counts_sql`);
`{{tool_use}}` a relation whose sums per trajectory and tool are the calls and whether the tool was used
(see `tool_use_sql`), cheaper to compute from steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ConfigError, QueryError

GROUP_COLUMNS: tuple[str, ...] = (
    "model",
    "harness",
    "benchmark",
    "reasoning_effort",
    "domain",
    "difficulty",
    "runner",
    "format",
    "condition",
    "split",
    "task_id",
)
"""Trajectory columns an analysis can be grouped by."""

GROUP_ALIASES: dict[str, str] = {"effort": "reasoning_effort", "reasoning": "reasoning_effort"}

USED_CALL = "kind = 'tool_call' AND coalesce(tool_seq, 1) <> 0"
"""The tool calls that count as uses of their tool: all but those numbered `tool_seq = 0`, calls of a
program the shell did not find (`whisper: command not found`; `trajlab.normalize.program_not_found`)
and the harness's own setup calls (Terminal-Bench's `asciinema rec`, agent install). Parts written
before `tool_seq` read it as null: their calls all count."""

PLACEHOLDERS = ("by", "partition_by", "key", "tool_counts", "tool_use")

# coalesce(tool, tool_name, '(unknown)'), written as a CASE: DuckDB evaluates coalesce over strings by
# materializing every value (0.2 s of a 0.5 s gap query on 10M calls) and this CASE only where tool is null
_TOOL = "CASE WHEN tool IS NULL THEN coalesce(tool_name, '(unknown)') ELSE tool END"

TOOL_KEYS: dict[str, str] = {
    "tool": _TOOL,
    "tool_modality": f"{_TOOL} || coalesce(':' || modality, '')",
    "program": f"unnest(CASE WHEN len(programs) > 0 THEN list_distinct(programs) ELSE [{_TOOL}] END)",
}
"""What counts as one "tool" for `{{key}}`: the normalized tool (default), the tool with the call's
modality (`python:video` vs `python:compute`), or every distinct program of the command line. The
`tool` key is the one `steps.tool_seq` numbers calls by."""

COUNT_SOURCES = ("auto", "tool_usage", "steps")
"""Where `{{tool_counts}}` takes the per-trajectory tool counts from: `tool_usage` (the materialized
table, see `refresh_tool_usage`), `steps` (counted on the fly), or `auto` (the table when it is
current for the lab's steps, else steps)."""


def tool_counts_sql(key: str | None = None, source: str = "steps") -> str:
    """The relation `{{tool_counts}}` stands for: columns trajectory_id, tool, n_calls, one row per
    trajectory and tool (under `key`) it called.

    `source="steps"` counts the tool-call rows of `steps` (a GROUP BY with one group per trajectory
    and tool: the expensive part of a gap query); `source="tool_usage"` reads the same rows from the
    `tool_usage` view, which is the materialized table when it is current.
    """
    key = key or "tool"
    if key not in TOOL_KEYS:
        raise ConfigError(f"key must be one of {', '.join(TOOL_KEYS)}, not {key!r}")
    if source == "tool_usage":
        return f"(SELECT trajectory_id, tool, n_calls FROM tool_usage WHERE key = '{key}')"
    if source != "steps":
        raise ConfigError(f"tool counts come from tool_usage or steps, not {source!r}")
    # one line: the placeholder may also appear in a `--` comment
    return (
        "(SELECT trajectory_id, tool, count(*) AS n_calls FROM (SELECT trajectory_id, "
        f"{TOOL_KEYS[key]} AS tool FROM steps WHERE {USED_CALL}) GROUP BY ALL)"
    )


def tool_use_sql(key: str | None = None, source: str = "steps") -> str:
    """The relation `{{tool_use}}` stands for: columns trajectory_id, tool, n_calls, n_users, such that
    summing n_calls over a set of trajectories gives their calls of the tool and summing n_users the
    number of them that called it at least once.

    From `tool_usage` or a GROUP BY (see `tool_counts_sql`) that is one row per trajectory and tool
    with n_users 1. From `steps` under the `tool` key it is one row per call, n_users 1 on the
    trajectory's first call of the tool (`tool_seq = 1`): no GROUP BY with a group per trajectory and
    tool, which took about half the time of a gap query on 10M calls. Parts written before `tool_seq`
    existed read it as null; their calls are counted by the GROUP BY (a branch that Parquet statistics
    prune when no part lacks it). Either way a call of a program the shell did not find is no use of
    the tool (see USED_CALL).
    """
    key = key or "tool"
    counts = tool_counts_sql(key, source)
    grouped = f"(SELECT trajectory_id, tool, n_calls, 1 AS n_users FROM {counts})"
    if source != "steps" or key != "tool":
        return grouped
    legacy = (
        "(SELECT trajectory_id, tool, count(*) AS n_calls, 1 AS n_users FROM (SELECT trajectory_id, "
        f"{TOOL_KEYS[key]} AS tool FROM steps WHERE kind = 'tool_call' AND tool_seq IS NULL) GROUP BY ALL)"
    )
    return (
        f"(SELECT trajectory_id, {TOOL_KEYS[key]} AS tool, 1 AS n_calls, (tool_seq = 1)::INTEGER AS n_users "
        f"FROM steps WHERE tool_seq > 0 UNION ALL SELECT * FROM {legacy})"
    )


_PLACEHOLDER_RE = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_PARAM_RE = re.compile(r"^@param\s+(\w+)=(\S*)\s*(.*)$")


@dataclass(frozen=True)
class AnalysisInfo:
    """One shipped `.sql` file: its name, documentation, parameters (with defaults) and placeholders."""

    name: str
    title: str
    kind: str
    description: str
    path: Path
    params: dict[str, Any] = field(default_factory=dict)
    param_docs: dict[str, str] = field(default_factory=dict)
    default_by: tuple[str, ...] = ()
    placeholders: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def groupable(self) -> bool:
        return "by" in self.placeholders


def parse_value(raw: str) -> Any:
    """A parameter value from text: empty -> None, integers, floats, true/false, else the string."""
    s = raw.strip()
    if s == "" or s.lower() in ("null", "none"):
        return None
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    for cast in (int, float):
        try:
            return cast(s)
        except ValueError:
            pass
    return s


def parse_header(name: str, path: Path, text: str) -> AnalysisInfo:
    title, kind = name, "analysis"
    by: tuple[str, ...] = ()
    params: dict[str, Any] = {}
    docs: dict[str, str] = {}
    desc: list[str] = []
    for line in text.splitlines():
        if not line.startswith("--"):
            if line.strip():
                break
            continue
        body = line[2:].strip()
        if body.startswith("@title"):
            title = body[len("@title") :].strip()
        elif body.startswith("@kind"):
            kind = body[len("@kind") :].strip()
        elif body.startswith("@by"):
            by = tuple(c.strip() for c in body[len("@by") :].split(",") if c.strip())
        elif m := _PARAM_RE.match(body):
            params[m.group(1)] = parse_value(m.group(2))
            docs[m.group(1)] = m.group(3).strip()
        else:
            desc.append(body)
    if kind not in ("analysis", "view"):
        raise ConfigError(f"{path}: @kind must be `analysis` or `view`, not {kind!r}")
    found = tuple(dict.fromkeys(_PLACEHOLDER_RE.findall(text)))
    return AnalysisInfo(
        name=name,
        title=title,
        kind=kind,
        description="\n".join(desc).strip(),
        path=path,
        params=params,
        param_docs=docs,
        default_by=by,
        placeholders=found,
    )


@cache
def _catalog() -> dict[str, AnalysisInfo]:
    root = resources.files("trajlab.analysis") / "sql"
    out: dict[str, AnalysisInfo] = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            name = entry.name[: -len(".sql")]
            path = Path(str(entry))
            out[name] = parse_header(name, path, entry.read_text(encoding="utf-8"))
    return out


def list_analyses(kind: str | None = None) -> list[AnalysisInfo]:
    """The shipped SQL analyses (and views), sorted by name; `kind` filters to `analysis` or `view`."""
    return [a for a in _catalog().values() if kind is None or a.kind == kind]


def get_analysis(name: str) -> AnalysisInfo:
    try:
        return _catalog()[name]
    except KeyError:
        known = ", ".join(_catalog())
        raise QueryError(f"no analysis named {name!r}; known: {known}") from None


def view_sql() -> dict[str, str]:
    """The `@kind view` files as {view name: SQL}, registered on every analysis connection."""
    return {a.name: a.text for a in list_analyses("view")}


def normalize_by(by: str | Iterable[str] | None) -> tuple[str, ...]:
    """Validated grouping columns (aliases resolved, duplicates dropped); raises ConfigError."""
    if by is None:
        return ()
    items = [by] if isinstance(by, str) else list(by)
    cols: list[str] = []
    for item in items:
        for raw in str(item).split(","):
            c = raw.strip().lower()
            if not c:
                continue
            c = GROUP_ALIASES.get(c, c)
            if c not in GROUP_COLUMNS:
                raise ConfigError(
                    f"cannot group by {raw.strip()!r}; choose from {', '.join(GROUP_COLUMNS)} "
                    f"(alias: effort = reasoning_effort)"
                )
            if c not in cols:
                cols.append(c)
    return tuple(cols)


def expand(sql: str, by: Sequence[str] = (), key: str | None = None, counts: str = "steps") -> str:
    """Fill the placeholders: `{{by}}` / `{{partition_by}}` for the (already validated) grouping,
    `{{key}}` with the expression of one of TOOL_KEYS (default `tool`), and `{{tool_counts}}` /
    `{{tool_use}}` with the per-trajectory tool counts from `counts` (`steps` or `tool_usage`; see
    `tool_counts_sql` and `tool_use_sql`)."""
    found = set(_PLACEHOLDER_RE.findall(sql))
    unknown = found - set(PLACEHOLDERS)
    if unknown:
        raise ConfigError(
            f"unknown placeholder(s) {', '.join('{{' + u + '}}' for u in sorted(unknown))}; "
            "known: " + ", ".join("{{" + p + "}}" for p in PLACEHOLDERS)
        )
    if by and "by" not in found:
        raise ConfigError("this query has no {{by}} placeholder, so it cannot be grouped")
    if key is not None and key not in TOOL_KEYS:
        raise ConfigError(f"key must be one of {', '.join(TOOL_KEYS)}, not {key!r}")
    if key not in (None, "tool") and not found & {"key", "tool_counts", "tool_use"}:
        raise ConfigError("this query has no {{key}} placeholder, so its tool key cannot be changed")
    values = {
        "by": "".join(f"{c}, " for c in by),
        "partition_by": ("PARTITION BY " + ", ".join(by)) if by else "",
        "key": TOOL_KEYS[key or "tool"],
        "tool_counts": tool_counts_sql(key, counts) if "tool_counts" in found else "",
        "tool_use": tool_use_sql(key, counts) if "tool_use" in found else "",
    }
    return _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], sql)
