"""Complete what adapters leave out: ids, step indexes, tool normalization, counts and totals."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..fsutil import path_text
from ..normalize import NOT_FOUND_EXIT, normalize_call, program_not_found
from ..schema import SCHEMA_VERSION, STEP_KINDS, trajectory_id
from ._base import EARLY_RESULT, ParsedTrajectory, SourceUnit, json_str, parse_ts
from ._typed import text_of

ROWS_VERSION = 9
"""Version of what every adapter's rows go through here (ids, step numbering, tool normalization by
`trajlab.normalize`, counts): bump it when that changes the rows of the same parse, and incremental
ingest re-parses every unit recorded with another `sources.rows_version`. One adapter's own changes
bump that adapter's `version` instead. `tests/ingest/golden_rows.py --write` refuses a snapshot whose
rows changed without either.

2: tool normalization names the program behind package and project runners (`yarn tsc` is tsc, `pdm
run pytest` pytest), more process wrappers (`xvfb-run`, `script -c`, `watch`, `setsid`, `env -S`),
`parallel` and containers (`docker exec c python x.py` is python); `env` alone is env; `bun`/`poetry`/
`pdm`/`pipx` installs are web.
3: GNU `parallel` calls are normalized from their jobs (`trajlab.normalize.parallel_jobs`, the splitter
the DAG uses too): replacement strings are replaced (`parallel python x.py {} ::: a.wav` is audio, not
compute), several `:::` sources form their product (a command-less `parallel ::: ffprobe ::: a.mp4` lists
ffprobe, not the file names), `:::+` links, `--onall` is a flag, `-s N`, `--jl FILE`, `--arg-sep` and
bundled `-kj 4` take their values, and a source with no argument runs nothing.
4: `open_local_file` (Magentic-One's FileSurfer) is a read, its modality taken from the path.
5: from an audit of the corpus's tool names: an install gives way to an equally telling program after it
(`pip install yt-dlp && yt-dlp URL` is yt-dlp); mini-swe-agent's `echo COMPLETE_TASK_AND_SUBMIT_...` is
`submit`, as are Terminus's `mark_task_complete`; Claude Code's `TaskOutput`/`BashOutput` are `poll`s;
Inspect's `web_browser_*` tools are `browser`; Claude Code's plan mode is `plan` and its questions `ask_user`; a code executor's `code_blocks` (AutoGen, Python and shell
mixed) are analyzed; `import cv2` alone is image work (video needs `VideoCapture`, `VideoWriter`...);
CaptainAgent's helper functions (`perform_web_search`, `optical_character_recognition`...) give Python
their modality; `mix deps.get` installs (web).
6: `n_subagents` counts the agents that run below another (depth > 0), not the peers of a group chat.
7: a call of a program the shell did not find (exit 127 and `whisper: command not found`,
`trajlab.normalize.program_not_found`) is numbered `tool_seq = 0`: no use of the tool.
8: an MCP tool's `code` argument gives its modality (a node REPL driving a browser is web), and code
naming `browser` or `puppeteer` is web work.
9: a call of the harness's setup phase (`metadata.phase = "setup"`: Terminal-Bench's `asciinema rec`,
`clear`, agent install) is numbered `tool_seq = 0`: no use of a tool by the agent."""

_TOKEN_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")
_KINDS = frozenset(STEP_KINDS)
_INT64_MAX = 2**63 - 1
fromisoformat = datetime.fromisoformat


def _token_count(v: Any) -> int | None:
    """A token count as a non-negative 64-bit int (integral floats and digit strings accepted), else None."""
    if isinstance(v, bool):
        return None
    if (isinstance(v, float) and v.is_integer()) or (isinstance(v, str) and v.strip().isdigit()):
        v = int(v)
    if type(v) is int and 0 <= v <= _INT64_MAX:
        return v
    return None


def _drop_paired(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Leave out the orphan result rows a later call took over (`CallLinker`: a result that came
    before its call); only run when the linker said so in an anomaly."""
    out = []
    for s in steps:
        if s.pop("_paired", None):
            continue
        s.pop("_early", None)
        out.append(s)
    return out


def finish_trajectory(
    pt: ParsedTrajectory,
    unit: SourceUnit,
    runner: str,
    fmt: str,
    now: datetime,
    defaults: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Turn an adapter's ParsedTrajectory into final trajectory and step rows (in place where possible)."""
    t = pt.trajectory
    steps = pt.steps
    assert unit.digest is not None
    tid = trajectory_id(runner, pt.native_key, unit.digest, pt.locator)
    anomalies: list[str] = list(t.get("anomalies") or [])
    if anomalies and any(EARLY_RESULT in a for a in anomalies):
        steps = pt.steps = _drop_paired(steps)
    n_calls = n_err = 0
    agents: set[str] = set()
    tok = [0, 0, 0, 0]
    tok_seen = [False, False, False, False]
    first_ts = last_ts = None
    index_of: dict[int, int] | None = None
    kinds = _KINDS
    prefix = f"{tid}:"
    seq_of: dict[str, int] = {}  # calls so far per tool, for tool_seq
    for i, s in enumerate(steps):
        if "_parent" in s:
            parent = s.pop("_parent")
            if parent is not None and s.get("parent_step_index") is None:
                if index_of is None:
                    index_of = {id(x): k for k, x in enumerate(steps)}
                s["parent_step_index"] = index_of.get(id(parent))
        s.pop("_has_result", None)
        s["trajectory_id"] = tid
        s["step_index"] = i
        s["step_id"] = prefix + str(i)
        kind = s.get("kind")
        if kind not in kinds:
            anomalies.append(f"step {i}: unknown kind {kind!r} stored as system")
            s["kind"] = kind = "system"
        agent = s.get("agent_id")
        if not agent:
            s["agent_id"] = "main"
        elif agent != "main" and s.get("depth"):
            # a sub-agent runs below the agent that spawned it; peers of a group chat (Who&When's
            # Orchestrator and WebSurfer, depth 0) take turns in one conversation and are none
            agents.add(agent)
        if kind == "tool_call":
            n_calls += 1
            args = s.get("arguments")
            name = s.get("tool_name")
            if name is not None and type(name) is not str:  # damaged input: kept as text, like the column
                s["tool_name"] = text_of(name)
            if s.get("tool") is None:
                info = normalize_call(s.get("tool_name"), args)
                s["tool"] = info.tool
                if not s.get("programs"):
                    s["programs"] = list(info.programs)
                if s.get("modality") is None:
                    s["modality"] = info.modality
                if s.get("command") is None:
                    s["command"] = info.command
            if args is not None and not isinstance(args, str):
                s["arguments"] = json_str(args)
            # the analyses' tool key, coalesce(tool, tool_name, '(unknown)'): None, not "", falls through
            key = s.get("tool")
            if key is None:
                key = s.get("tool_name")
                if key is None:
                    key = "(unknown)"
            exit_code = s.get("exit_code")
            md = s.get("metadata")
            if type(md) is dict and md.get("phase") == "setup":
                # the harness's own setup (Terminal-Bench installs the agent): not the agent's use
                s["tool_seq"] = 0
            elif (
                exit_code == NOT_FOUND_EXIT or (exit_code is None and s.get("is_error"))
            ) and program_not_found(key, exit_code, s.get("is_error"), s.get("output"), s.get("stderr")):
                s["tool_seq"] = 0  # the shell found no such program: an attempt, not a use of the tool
            else:
                s["tool_seq"] = seq_of[key] = seq_of.get(key, 0) + 1
        else:
            s["tool_seq"] = 0
        if s.get("is_error"):
            n_err += 1
        md = s.get("metadata")
        if md is not None and not isinstance(md, str):
            s["metadata"] = json_str(md)
        ts = s.get("timestamp")
        if ts is not None:
            if type(ts) is str:  # parse_ts's first case, inline
                try:
                    ts = fromisoformat(ts)
                except ValueError:
                    ts = parse_ts(ts)
                else:
                    if ts.tzinfo is None:
                        ts = ts.replace(tzinfo=timezone.utc)
                s["timestamp"] = ts
            elif type(ts) is not datetime or ts.tzinfo is None:
                ts = s["timestamp"] = parse_ts(ts)
            if ts is not None:
                if first_ts is None or ts < first_ts:
                    first_ts = ts
                if last_ts is None or ts > last_ts:
                    last_ts = ts
        if "input_tokens" in s or "output_tokens" in s or "reasoning_tokens" in s or "cached_tokens" in s:
            for k, f in enumerate(_TOKEN_FIELDS):
                v = s.get(f)
                if v is not None:
                    if type(v) is not int or v < 0 or v > _INT64_MAX:
                        # a count the runner wrote as text, negative or beyond 64 bits (damaged input):
                        # a string or number would break the sum or the column, so it is dropped
                        good = _token_count(v)
                        if good is None:
                            anomalies.append(f"step {i}: {f}: dropped {str(v)[:40]!r} (not a token count)")
                        v = s[f] = good
                        if v is None:
                            continue
                    tok[k] += v
                    tok_seen[k] = True
    if defaults:
        for key, v in defaults.items():
            if key == "tags":
                t["tags"] = sorted({*(t.get("tags") or []), *v})
            elif t.get(key) is None and v is not None:
                t[key] = v
    t["schema_version"] = SCHEMA_VERSION
    t["trajectory_id"] = tid
    t["runner"] = runner
    t["format"] = fmt
    t["source_path"] = path_text(unit.primary)
    t.setdefault("source_files", [path_text(p) for p in unit.files])
    t["source_digest"] = unit.digest
    t["source_locator"] = pt.locator
    t.setdefault("native_id", pt.native_key)
    t["n_steps"] = len(steps)
    t["n_tool_calls"] = n_calls
    t["n_errors"] = n_err
    t["n_subagents"] = len(agents)
    for f in (*_TOKEN_FIELDS, "total_tokens"):
        v = t.get(f)
        if v is not None and (type(v) is not int or v < 0 or v > _INT64_MAX):
            t[f] = _token_count(v)
            if t[f] is None:
                anomalies.append(f"{f}: dropped {str(v)[:40]!r} (not a token count)")
    for k, f in enumerate(_TOKEN_FIELDS):
        if t.get(f) is None and tok_seen[k]:
            t[f] = tok[k] if tok[k] <= _INT64_MAX else None
    if t.get("total_tokens") is None and (
        t.get("input_tokens") is not None or t.get("output_tokens") is not None
    ):
        total = (t.get("input_tokens") or 0) + (t.get("output_tokens") or 0)
        t["total_tokens"] = total if total <= _INT64_MAX else None
    for key in ("started_at", "ended_at"):
        if t.get(key) is not None and not isinstance(t[key], datetime):
            t[key] = parse_ts(t[key])
    if t.get("started_at") is None:
        t["started_at"] = first_ts
    if t.get("ended_at") is None:
        t["ended_at"] = last_ts
    if t.get("duration_s") is None and t.get("started_at") and t.get("ended_at"):
        t["duration_s"] = max((t["ended_at"] - t["started_at"]).total_seconds(), 0.0)
    if t.get("outcome") not in ("success", "failure", "unknown"):
        t["outcome"] = "unknown"
    if isinstance(t.get("metadata"), (dict, list)):
        t["metadata"] = json_str(t["metadata"])
    t["anomalies"] = anomalies
    t["ingested_at"] = now
    return t, steps


def outcome_from_reward(reward: float | None, threshold: float = 1.0) -> str:
    """Binary outcome from a reward: success when reward >= threshold (1.0 for pass/fail rewards)."""
    if reward is None:
        return "unknown"
    return "success" if reward >= threshold else "failure"
