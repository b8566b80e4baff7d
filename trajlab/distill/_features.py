"""What each trajectory did, as a set of named features the miner can contrast.

Feature families (a feature is a string `family:value`):

- `use:T`         the run called tool T (normalized tool, e.g. `ffprobe`, `whisper`, `python`)
- `order:A<B`     A's first call came before B's first call (both used)
- `flag:P X`      program P was run with option X (`flag:ffmpeg -vf fps=`, `flag:whisper --model tiny`)
- `import:M`      a python command imported module M
- `recover:T`     a call of T failed and a later call of T succeeded (error-then-recovery)
- `error:T`       a call of T failed and T never succeeded afterwards

Runs with split eval/heldout (or tagged so) are never read: the caller gets their count only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow.dataset as ds

from ..normalize import parse_shell, program_name
from ..redact import redact
from ..store import Lab

EXCLUDED_SPLITS = frozenset({"eval", "heldout", "held-out", "holdout", "test"})
EXCLUDED_TAGS = frozenset(
    {"eval", "heldout", "held-out", "holdout", "split:eval", "split:heldout", "split:test", "no-distill"}
)
TRIVIAL_TOOLS = frozenset({"cd", "echo", "true", "mkdir", "sleep", "printf", "export", "set", "clear"})
INSTALLERS = frozenset({"pip", "apt", "apt-get", "conda", "npm", "uv", "brew", "cargo", "mamba"})
EXCERPT_CHARS = 240
REDACT_WINDOW = 4096
"""Characters read past an excerpt's end before redacting it: longer than any secret the patterns
match whole (a private key block that is cut is redacted to its end anyway)."""
_IMPORT_RE = re.compile(r"(?:^|[;\n]|\s)(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)")
_VALUE_RE = re.compile(r"[A-Za-z0-9_-]{1,12}")
_KEY_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_:]{0,15})=")


def is_excluded(split: str | None, tags: Iterable[str] | None) -> bool:
    """True for evaluation / held-out runs, which distillation must never read."""
    if split and split.strip().lower() in EXCLUDED_SPLITS:
        return True
    return any(str(t).strip().lower() in EXCLUDED_TAGS for t in tags or ())


@dataclass
class Example:
    trajectory_id: str
    step_index: int
    command: str
    output: str = ""


@dataclass
class Run:
    trajectory_id: str
    outcome: str
    task_id: str | None = None
    domain: str | None = None
    split: str | None = None
    condition: str | None = None
    category: str | None = None
    features: dict[str, Example] = field(default_factory=dict)  # feature -> first step that showed it
    n_steps: int = 0
    n_tool_calls: int = 0
    total_tokens: int | None = None
    duration_s: float | None = None


@dataclass
class Corpus:
    runs: list[Run]
    excluded_eval: int = 0
    excluded_unknown: int = 0
    lab_root: str = ""
    lab_generation: int = 0
    label_sources: dict[str, int] = field(default_factory=dict)

    @property
    def successes(self) -> int:
        return sum(r.outcome == "success" for r in self.runs)

    @property
    def failures(self) -> int:
        return sum(r.outcome == "failure" for r in self.runs)


def _failed(row: dict[str, Any]) -> bool:
    code = row.get("exit_code")
    return bool(row.get("is_error")) or bool(row.get("timed_out")) or (code is not None and code != 0)


def command_features(command: str) -> list[str]:
    """`flag:` and `import:` features of one shell command line."""
    out: list[str] = []
    try:
        parsed = parse_shell(command)
    except Exception:  # the splitter never fails by design; stay safe on odd input
        return out
    for sc in parsed.commands:
        argv = [a for a in sc.argv if a]
        while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0], flags=re.S):
            argv = argv[1:]
        if not argv:
            continue
        prog = program_name(argv[0])
        if prog in ("timeout", "sudo", "env", "nice", "time") and len(argv) > 1:
            rest = argv[1:]
            while rest and (rest[0].startswith("-") or re.fullmatch(r"\d+[smhd]?", rest[0])):
                rest = rest[1:]
            if not rest:
                continue
            argv, prog = rest, program_name(rest[0])
        if prog in TRIVIAL_TOOLS:
            continue
        args = argv[1:]
        for k, a in enumerate(args):
            if not a.startswith("-") or a == "-" or len(a) > 24:
                continue
            flag = a.split("=", 1)[0]
            out.append(f"flag:{prog} {flag}")
            val = args[k + 1] if k + 1 < len(args) else ""
            if prog == "python" and flag == "-c":
                out += [f"import:{m}" for m in _IMPORT_RE.findall(val)]
                continue
            m = _KEY_RE.match(val)
            if m:
                out.append(f"flag:{prog} {flag} {m.group(1)}=")
            elif _VALUE_RE.fullmatch(val) and not val.startswith("-"):
                out.append(f"flag:{prog} {flag} {val}")
        for h in sc.heredocs:
            if prog in ("cat", "tee") or prog == "python":
                out += [f"import:{m}" for m in _IMPORT_RE.findall(h)]
    return out


def run_features(steps: list[dict[str, Any]]) -> dict[str, Example]:
    """Features of one trajectory from its tool-call rows (ordered by step_index)."""
    feats: dict[str, Example] = {}
    tid = steps[0]["trajectory_id"] if steps else ""

    def add(name: str, row: dict[str, Any]) -> None:
        if name not in feats:
            # Examples end up in references/ (rules.md, provenance.json), the LLM prompt and the
            # iterate editor: secrets are redacted here, once, before any of them sees the text.
            feats[name] = Example(
                tid,
                int(row["step_index"]),
                redact(row.get("command") or row.get("arguments") or "")[:EXCERPT_CHARS],
                redact(row.get("output") or "")[:EXCERPT_CHARS],
            )

    first: dict[str, int] = {}
    failed_at: dict[str, list[int]] = {}
    ok_at: dict[str, list[int]] = {}
    rows_by_pos: list[dict[str, Any]] = []
    for row in steps:
        tool = row.get("tool") or (row.get("tool_name") or "").lower() or None
        if not tool or tool in TRIVIAL_TOOLS:
            continue
        pos = len(rows_by_pos)
        rows_by_pos.append(row)
        add(f"use:{tool}", row)
        first.setdefault(tool, pos)
        (failed_at if _failed(row) else ok_at).setdefault(tool, []).append(pos)
        cmd = row.get("command")
        if cmd:
            for f in command_features(cmd):
                add(f, row)
    tools = sorted(first, key=first.__getitem__)
    for i, a in enumerate(tools):
        for b in tools[i + 1 :]:
            add(f"order:{a}<{b}", rows_by_pos[first[a]])
    for tool, fails in failed_at.items():
        later_ok = [p for p in ok_at.get(tool, []) if p > fails[0]]
        if later_ok:
            fix = next(
                (
                    rows_by_pos[p]
                    for p in range(fails[0] + 1, later_ok[0])
                    if (rows_by_pos[p].get("tool") in INSTALLERS and not _failed(rows_by_pos[p]))
                ),
                rows_by_pos[later_ok[0]],
            )
            add(f"recover:{tool}", fix)
        elif tool not in INSTALLERS:
            add(f"error:{tool}", rows_by_pos[fails[-1]])
    return feats


def _labels(lab: Lab, ids: set[str]) -> tuple[dict[str, str], dict[str, int]]:
    """Failure category per trajectory: gold label, else majority human label, else judge label."""
    cats: dict[str, str] = {}
    used: dict[str, int] = {}
    if lab.has("judge_labels"):
        t = lab.read("judge_labels", ["trajectory_id", "status", "category"]).to_pylist()
        for r in t:
            if r["trajectory_id"] in ids and r["status"] == "labeled" and r["category"]:
                cats[r["trajectory_id"]] = r["category"]
                used["judge"] = used.get("judge", 0) + 1
    if lab.has("human_labels"):
        votes: dict[str, dict[str, int]] = {}
        for r in lab.read("human_labels", ["trajectory_id", "category"]).to_pylist():
            if r["trajectory_id"] in ids and r["category"] not in ("unsure",):
                v = votes.setdefault(r["trajectory_id"], {})
                v[r["category"]] = v.get(r["category"], 0) + 1
        for tid, v in votes.items():
            cats[tid] = sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
            used["human"] = used.get("human", 0) + 1
    if lab.has("gold_labels"):
        for r in lab.read("gold_labels", ["trajectory_id", "category"]).to_pylist():
            if r["trajectory_id"] in ids:
                cats[r["trajectory_id"]] = r["category"]
                used["gold"] = used.get("gold", 0) + 1
    return cats, used


TRAJ_COLUMNS = [
    "trajectory_id",
    "task_id",
    "outcome",
    "domain",
    "split",
    "tags",
    "condition",
    "n_steps",
    "n_tool_calls",
    "total_tokens",
    "duration_s",
]
STEP_COLUMNS = [
    "trajectory_id",
    "step_index",
    "tool",
    "tool_name",
    "command",
    "arguments",
    "output",
    "exit_code",
    "is_error",
    "timed_out",
]


def load_corpus(
    lab: Lab, where: ds.Expression | None = None, conditions: Iterable[str] | None = None
) -> Corpus:
    """Every distillable run of the lab with its features (eval/held-out and unknown outcomes left out)."""
    traj = lab.read("trajectories", TRAJ_COLUMNS, filter=where).to_pylist()
    cond = set(conditions) if conditions else None
    runs: dict[str, Run] = {}
    excluded_eval = excluded_unknown = 0
    for r in traj:
        if is_excluded(r["split"], r["tags"]):
            excluded_eval += 1
            continue
        if cond is not None and r["condition"] not in cond:
            continue
        if r["outcome"] not in ("success", "failure"):
            excluded_unknown += 1
            continue
        runs[r["trajectory_id"]] = Run(
            trajectory_id=r["trajectory_id"],
            outcome=r["outcome"],
            task_id=r["task_id"],
            domain=r["domain"],
            split=r["split"],
            condition=r["condition"],
            n_steps=r["n_steps"] or 0,
            n_tool_calls=r["n_tool_calls"] or 0,
            total_tokens=r["total_tokens"],
            duration_s=r["duration_s"],
        )
    if runs:
        # Streamed in trajectory order (DuckDB sorts, spilling to disk if needed): one run in memory at a time.
        # outputs are cut in SQL, with room past the excerpt so that a secret crossing its end is still
        # whole when `run_features` redacts it (a key cut at 240 characters no longer matches its pattern)
        cols = ", ".join(
            f"left({c}, {EXCERPT_CHARS + REDACT_WINDOW}) AS {c}" if c == "output" else c for c in STEP_COLUMNS
        )
        sql = f"SELECT {cols} FROM steps WHERE kind = 'tool_call' ORDER BY trajectory_id, step_index"
        con = lab.connect()
        cur: str | None = None
        rows: list[dict[str, Any]] = []
        for batch in con.sql(sql).to_arrow_reader(16_384):
            for row in batch.to_pylist():
                tid = row["trajectory_id"]
                if tid not in runs:
                    continue
                if tid != cur:
                    if cur is not None:
                        runs[cur].features = run_features(rows)
                    cur, rows = tid, []
                rows.append(row)
        if cur is not None:
            runs[cur].features = run_features(rows)
        con.close()
    cats, used = _labels(lab, set(runs))
    for tid, c in cats.items():
        if runs[tid].outcome == "failure":
            runs[tid].category = c
    ordered = sorted(runs.values(), key=lambda r: r.trajectory_id)
    return Corpus(ordered, excluded_eval, excluded_unknown, str(lab.root), lab.generation, used)
