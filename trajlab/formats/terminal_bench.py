"""Terminal-Bench 1 (`tb run`) run folders.

Layout: `runs/<run_id>/{results.json, run_metadata.json, <task>/<task>.1-of-1.<run_id>/{results.json,
commands.txt, panes/*.txt, sessions/{agent.cast, agent.log, tests.cast, tests.log}}}`. The trial
`results.json` is the primary file (`is_resolved`, `failure_mode`, tokens, timings, instruction); the
run-level `results.json` and `run_metadata.json` (model, agent name, dataset) are companions.

There are no structured tool calls. Each line of `commands.txt` is one batch of tmux keystrokes
(a Python-repr list, parsed with `ast.literal_eval`); each batch sent before the tests' recording
starts becomes a `tool_call` of the `terminal` tool. Its output is the terminal output recorded
between that batch and the next one in `sessions/agent.cast` (asciinema v2 input events mark the
batches) or, without a cast, between the command's echo lines in `sessions/agent.log`. The test
phase becomes one `system` step (role `verifier`) holding the test pane and the parser results.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

from ..normalize import normalize_call
from ._base import Adapter, ParseContext, ParsedTrajectory, SourceUnit, as_text, load_json, read_jsonl
from ._safe import as_id, as_int, as_str, raw_of_obj

_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_PROMPT_RE = re.compile(r"^\S+@\S+:[^\n]*[#$] ?$")
_WAIT_SUFFIX = "; tmux wait -S done"
_NOT_FOUND_RE = re.compile(r"^(?:bash|sh|zsh): (?:line \d+: )?(\S+): command not found", re.MULTILINE)
_CTRL = {"Enter": "\r", "C-m": "\r", "Escape": "\x1b", "Tab": "\t", "Space": " ", "BSpace": "\x7f"}
_SETUP_RE = re.compile(r"^(asciinema rec|clear$|source /installed-agent/|cd /app$)")


def strip_ansi(text: str) -> str:
    """Terminal output as a reader would see it: escapes removed, carriage returns applied per line."""
    text = _ANSI_RE.sub("", text).replace("\r\n", "\n")
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            parts = [p for p in line.split("\r") if p]
            line = parts[-1] if parts else ""
        lines.append(line)
    return "\n".join(lines)


def _key_text(keys: list[str]) -> tuple[str, bool]:
    """The text a keystroke batch types and whether it contains any non-control text."""
    out, has_text = [], False
    for k in keys:
        if k in _CTRL:
            out.append(_CTRL[k])
        elif re.fullmatch(r"C-[a-z]", k):
            out.append(chr(ord(k[2]) - 96))
        else:
            out.append(k)
            has_text = has_text or bool(k.strip())
    return "".join(out), has_text


def _norm_input(s: str) -> str:
    return s.replace(_WAIT_SUFFIX, "").replace("\r", "\n").rstrip("\n")


class TerminalBenchAdapter(Adapter):
    name = "terminal-bench"
    runner = "terminal_bench"
    extensions = (".json",)
    priority = 25
    description = "Terminal-Bench 1 run folders (trial results.json + commands.txt + asciinema cast/log)"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        if path.name != "results.json" or head_bytes.lstrip()[:1] != b"{":
            return False
        i_trial = head_bytes.find(b'"trial_name"')
        i_res = head_bytes.find(b'"is_resolved"')
        if i_trial < 0 or i_res < 0:
            return False
        i_list = head_bytes.find(b'"results"')
        if 0 <= i_list < i_trial:  # run-level results.json: trials nested in a list
            return _lonely_run(path)
        return True

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "not a Terminal-Bench results.json (needs trial_name and is_resolved)"

    def companions(self, path: Path) -> list[Path]:
        d = path.parent
        if _is_run_level(path):
            return [p for p in (d / "run_metadata.json",) if p.is_file()]
        out = [d / "commands.txt"]
        for sub in ("sessions", "panes", "agent-logs"):
            if (d / sub).is_dir():
                out += sorted(p for p in (d / sub).rglob("*") if p.is_file())
        run = d.parent.parent
        out += [run / "results.json", run / "run_metadata.json"]
        return [p for p in out if p.is_file() and p != path]

    # -- parsing --------------------------------------------------------------------------------

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        res = load_json(unit.primary, ctx)
        if res is None:
            return
        if not isinstance(res, dict):
            ctx.quarantine(unit.primary, "results.json is not an object", "schema", raw_of_obj(res))
            return
        if isinstance(res.get("results"), list):
            yield from self._run_level(unit, ctx, res)
            return
        if "trial_name" not in res:
            ctx.quarantine(unit.primary, "trial results.json without trial_name", "schema", raw_of_obj(res))
            return
        ctx.seen_ok()
        d = unit.primary.parent
        anomalies: list[str] = []
        run_dir = d.parent.parent
        run_meta = _shared_json(run_dir / "run_metadata.json", unit, anomalies)
        t = _trial_row(res, run_meta)
        steps: list[dict[str, Any]] = []
        if res.get("instruction"):
            steps.append(
                {
                    "kind": "user",
                    "role": "user",
                    "text": as_text(res["instruction"]),
                    "timestamp": res.get("agent_started_at"),
                }
            )
        commands = self._commands(d / "commands.txt", ctx, anomalies)
        agent_name = as_str((run_meta or {}).get("agent_name")) or ""
        agent_cmds, test_cmds = _split_phases(commands)
        cast = d / "sessions" / "agent.cast"
        log = d / "sessions" / "agent.log"
        if cast.is_file():
            aligned = self._align_cast(cast, ctx, agent_cmds, anomalies)
        elif log.is_file():
            aligned = _align_log(log.read_bytes().decode("utf-8", "replace"), agent_cmds, anomalies)
        else:
            aligned = [{} for _ in agent_cmds]
            if agent_cmds:
                anomalies.append("no sessions/agent.cast or agent.log: keystroke outputs unknown")
        for (line, keys), info in zip(agent_cmds, aligned):
            steps.append(_call_step(line, keys, info, agent_name))
        if test_cmds or res.get("parser_results"):
            steps.append(_verifier_step(d, res, test_cmds))
        t["anomalies"] = anomalies
        yield ParsedTrajectory(t, steps, native_key=as_id(res.get("id")) or as_id(res.get("trial_name")))

    def _commands(self, path: Path, ctx: ParseContext, anomalies: list[str]) -> list[tuple[int, list[str]]]:
        if not path.is_file():
            anomalies.append("commands.txt missing")
            return []
        out: list[tuple[int, list[str]]] = []
        offset = 0
        for n, raw in enumerate(path.read_bytes().splitlines(keepends=True), 1):
            line = raw.strip()
            off, offset = offset, offset + len(raw)
            if not line:
                continue
            try:
                keys = ast.literal_eval(line.decode("utf-8"))
            except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError) as e:
                ctx.quarantine(
                    path,
                    f"commands.txt line {n}: not a Python list literal ({type(e).__name__})",
                    "schema",
                    raw,
                    n,
                    off,
                )
                continue
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                ctx.quarantine(
                    path, f"commands.txt line {n}: expected a list of strings", "schema", raw, n, off
                )
                continue
            ctx.seen_ok()
            out.append((n, keys))
        return out

    def _align_cast(
        self, cast: Path, ctx: ParseContext, cmds: list[tuple[int, list[str]]], anomalies: list[str]
    ) -> list[dict[str, Any]]:
        header: dict[str, Any] = {}
        events: list[tuple[float, str, str]] = []
        for rec in read_jsonl(cast, ctx):
            o = rec.obj
            if isinstance(o, dict) and not header and "version" in o:
                header = o
            elif (
                isinstance(o, list)
                and len(o) >= 3
                and isinstance(o[0], (int, float))
                and isinstance(o[2], str)
            ):
                events.append((float(o[0]), str(o[1]), o[2]))
            else:
                ctx.reject(rec, f"agent.cast line {rec.line}: not an asciinema v2 header or event")
        start = _epoch(header.get("timestamp"))
        inputs = [i for i, e in enumerate(events) if e[1] == "i"]
        out: list[dict[str, Any]] = []
        p = 0  # position in `inputs`
        for (line, keys), _ in zip(cmds, range(len(cmds))):
            expected = _norm_input(_key_text(keys)[0])
            hit = None
            for q in range(p, len(inputs)):
                acc = ""
                for r in range(q, min(q + 50, len(inputs))):
                    acc += events[inputs[r]][2]
                    got = _norm_input(acc)
                    if got == expected:
                        hit = (q, r)
                        break
                    if not expected.startswith(got):
                        break
                if hit:
                    break
            if hit is None:
                out.append({})
                if not keys[0].startswith("asciinema rec"):
                    anomalies.append(f"commands.txt line {line}: keystrokes not found in agent.cast")
                continue
            q, r = hit
            first_ev, last_ev = inputs[q], inputs[r]
            nxt = inputs[r + 1] if r + 1 < len(inputs) else len(events)
            text = "".join(e[2] for e in events[last_ev + 1 : nxt] if e[1] == "o")
            t0 = events[first_ev][0]
            t1 = events[nxt][0] if nxt < len(events) else events[-1][0]
            out.append(
                {
                    "output": _clean_output(text, expected),
                    "timestamp": (start + timedelta(seconds=t0)) if start else None,
                    "duration_s": round(max(t1 - t0, 0.0), 6),
                }
            )
            p = r + 1
        return out

    def _run_level(
        self, unit: SourceUnit, ctx: ParseContext, res: dict[str, Any]
    ) -> Iterator[ParsedTrajectory]:
        """A run-level results.json with no trial folders: one step-less trajectory per trial."""
        anomalies_base = ["run-level results.json without trial folders: outcome only, no steps"]
        run_meta = _shared_json(unit.primary.parent / "run_metadata.json", unit, [])
        for i, r in enumerate(res["results"]):
            if not isinstance(r, dict) or "trial_name" not in r:
                ctx.quarantine(
                    unit.primary, f"results[{i}] is not a trial result", "schema", raw_of_obj(r), i
                )
                continue
            ctx.seen_ok()
            t = _trial_row(r, run_meta)
            steps = (
                [{"kind": "user", "role": "user", "text": as_text(r["instruction"])}]
                if r.get("instruction")
                else []
            )
            t["anomalies"] = list(anomalies_base)
            yield ParsedTrajectory(
                t, steps, native_key=as_id(r.get("id")) or as_id(r.get("trial_name")), locator=f"trial={i}"
            )


# -- helpers ---------------------------------------------------------------------------------------


def _is_run_level(path: Path) -> bool:
    head = b""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    i_list = head.find(b'"results"')
    i_trial = head.find(b'"trial_name"')
    return i_list >= 0 and (i_trial < 0 or i_list < i_trial)


def _lonely_run(path: Path) -> bool:
    """A run-level results.json is a unit of its own only when none of its trials has a folder."""
    for task_dir in path.parent.iterdir():
        if task_dir.is_dir() and any(
            (t / "results.json").is_file() for t in task_dir.iterdir() if t.is_dir()
        ):
            return False
    return True


_SHARED: dict[tuple[str, int, int], Any] = {}


def _shared_json(path: Path, unit: SourceUnit, anomalies: list[str]) -> dict[str, Any] | None:
    """Run-level companion files are shared by every trial: read once per process, never quarantined."""
    if not path.is_file():
        return None
    try:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in _SHARED:
            if len(_SHARED) > 16:
                _SHARED.clear()
            _SHARED[key] = orjson.loads(path.read_bytes())
        obj = _SHARED[key]
    except (OSError, orjson.JSONDecodeError) as e:
        anomalies.append(f"{path.name} unreadable: {type(e).__name__}")
        return None
    return obj if isinstance(obj, dict) else None


def _trial_row(res: dict[str, Any], run_meta: dict[str, Any] | None) -> dict[str, Any]:
    rm = run_meta or {}
    resolved = res.get("is_resolved")
    t: dict[str, Any] = {
        "task_id": as_id(res.get("task_id")),
        "task": as_text(res.get("instruction")),
        "benchmark": as_str(rm.get("dataset_name")),
        "model": as_str(rm.get("model_name")),
        "harness": as_str(rm.get("agent_name")),
        "started_at": res.get("trial_started_at"),
        "ended_at": res.get("trial_ended_at"),
    }
    if isinstance(resolved, bool):
        t["outcome"] = "success" if resolved else "failure"
        t["reward"] = 1.0 if resolved else 0.0
        t["outcome_source"] = "results.json:is_resolved"
    fm = as_str(res.get("failure_mode"))
    if fm and fm != "unset":
        t["exit_status"] = fm
    tin, tout = as_int(res.get("total_input_tokens")), as_int(res.get("total_output_tokens"))
    if tin or tout:  # installed agents report 0/0: no usage recorded
        t["input_tokens"], t["output_tokens"] = tin, tout
    meta = {
        k: res[k] for k in ("trial_name", "failure_mode", "parser_results", "recording_path") if res.get(k)
    }
    for k in ("agent_started_at", "agent_ended_at", "test_started_at", "test_ended_at"):
        if res.get(k):
            meta[k] = res[k]
    for k in ("run_id", "dataset_version", "commit_hash"):
        if rm.get(k):
            meta[k] = rm[k]
    t["metadata"] = meta
    return t


def _split_phases(
    cmds: list[tuple[int, list[str]]],
) -> tuple[list[tuple[int, list[str]]], list[tuple[int, list[str]]]]:
    for i, (_, keys) in enumerate(cmds):
        if keys and keys[0].startswith("asciinema rec") and "tests.cast" in keys[0]:
            return cmds[:i], cmds[i:]
    return cmds, []


def _call_step(line: int, keys: list[str], info: dict[str, Any], agent_name: str) -> dict[str, Any]:
    text, has_text = _key_text(keys)
    command = _norm_input(text).strip("\n")
    first = keys[0] if keys else ""
    setup = bool(_SETUP_RE.match(first.strip()))
    role = "harness" if setup or not agent_name.startswith("terminus") else "assistant"
    step: dict[str, Any] = {
        "kind": "tool_call",
        "role": role,
        "tool_name": "terminal",
        "arguments": {"keys": keys, "command": command} if has_text else {"keys": keys},
        "call_id": f"keys-{line}",
        "source_line": line,
        "metadata": {"phase": "setup" if setup else "agent"},
        **info,
    }
    if not has_text:
        step.update(tool="terminal_keys", programs=[], modality="compute", command=None)
    else:
        ni = normalize_call("terminal", {"command": command})
        step.update(tool=ni.tool, programs=list(ni.programs), modality=ni.modality, command=ni.command)
    out = info.get("output")
    if out:
        m = _NOT_FOUND_RE.search(out)
        if m:
            step["exit_code"] = 127
            step["is_error"] = True
    if "output" in info:
        step["_has_result"] = True
    return step


def _verifier_step(d: Path, res: dict[str, Any], test_cmds: list[tuple[int, list[str]]]) -> dict[str, Any]:
    parser_results = res.get("parser_results")
    pr = parser_results if isinstance(parser_results, dict) else {}
    lines = [f"{k}: {v}" for k, v in pr.items()]
    pane = d / "panes" / "post-test.txt"
    log = d / "sessions" / "tests.log"
    body = None
    if pane.is_file():
        body = pane.read_bytes().decode("utf-8", "replace")
    elif log.is_file():
        body = strip_ansi(log.read_bytes().decode("utf-8", "replace"))
    text = "\n".join(["test results:", *lines]) + (f"\n\n{body.rstrip()}" if body else "")
    failed = any(v != "passed" for v in pr.values()) or res.get("is_resolved") is False
    return {
        "kind": "system",
        "role": "verifier",
        "text": text,
        "is_error": failed,
        "timestamp": res.get("test_started_at"),
        "metadata": {"phase": "test", "commands": [k for _, k in test_cmds], "parser_results": pr},
    }


def _clean_output(raw: str, typed: str) -> str:
    text = strip_ansi(raw)
    lines = text.split("\n")
    first_typed = typed.split("\n")[0].strip()
    if lines and first_typed and lines[0].strip().startswith(first_typed[:40]):
        lines = lines[1:]
        # multi-line commands echo continuation lines with a `> ` prompt
        while lines and lines[0].startswith("> "):
            lines = lines[1:]
    while lines and (not lines[-1].strip() or _PROMPT_RE.match(lines[-1].strip())):
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines)


def _align_log(log: str, cmds: list[tuple[int, list[str]]], anomalies: list[str]) -> list[dict[str, Any]]:
    """Without a cast: find each command's echo in the log and take the text up to the next one."""
    text = strip_ansi(log)
    spans: list[tuple[int, int] | None] = []
    pos = 0
    for line, keys in cmds:
        typed, has_text = _key_text(keys)
        needle = _norm_input(typed).split("\n")[0].strip()
        if not has_text or not needle:
            spans.append(None)
            continue
        i = text.find(needle, pos)
        if i < 0:
            spans.append(None)
            anomalies.append(f"commands.txt line {line}: keystrokes not found in agent.log")
            continue
        eol = text.find("\n", i)
        eol = len(text) if eol < 0 else eol + 1
        spans.append((i, eol))
        pos = eol
    out: list[dict[str, Any]] = []
    for k, span in enumerate(spans):
        if span is None:
            out.append({})
            continue
        nxt = next((s[0] for s in spans[k + 1 :] if s is not None), len(text))
        typed = _norm_input(_key_text(cmds[k][1])[0])
        out.append({"output": _clean_output(text[span[0] : nxt], typed)})
    return out


def _epoch(v: Any) -> datetime | None:
    if isinstance(v, (int, float)):
        return datetime.fromtimestamp(float(v), tz=timezone.utc)
    return None
