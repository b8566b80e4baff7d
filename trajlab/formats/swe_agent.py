"""SWE-agent `.traj` files (0.x and 1.x) with their run-level prediction and report files.

A `.traj` is `{environment, trajectory[], history[], info, replay_config}`. `history` is what the
model saw: in 1.x assistant messages carry `tool_calls` and tool messages answer them through a
`tool_call_ids` *list*; in 0.x the action is a text command (`thought` + `action`) answered by the
next `user` message. `trajectory[]` holds one entry per action with `execution_time`, matched to the
calls in order. Files with only `history` (demonstrations) or only `trajectory` are read too.

There is no success signal in a `.traj`: `info.exit_status: submitted` only means a patch was
produced. The outcome is `unknown` unless a SWE-bench evaluation file next to the run
(`results.json` / `report.json` with `resolved_ids`/`resolved` lists, or a per-instance report
`{instance_id: {resolved}}`) names the instance. `all_preds.jsonl` / `preds.json` / `<id>.pred`
are run-level companions (the submitted patch and the run name).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ._base import (
    Adapter,
    CallLinker,
    ParseContext,
    ParsedTrajectory,
    SourceUnit,
    as_text,
    json_records,
    load_json,
)
from ._safe import BAD_SHAPE, as_dict, as_id, as_int, as_list, as_num, as_str, raw_of_obj, rollback

_SWE_COMMANDS = frozenset(
    [
        "open",
        "goto",
        "scroll_down",
        "scroll_up",
        "create",
        "edit",
        "find_file",
        "search_file",
        "search_dir",
        "submit",
        "str_replace_editor",
        "filemap",
        "insert",
        "exit_forfeit",
    ]
)
_REPORT_NAMES = ("results.json", "report.json")
_RUN_FILE_NAMES = frozenset(("preds.json", *_REPORT_NAMES))
_CANCELLED_RE = re.compile(r"was cancelled because it took more than \d+ seconds")
_SYNTAX_RE = re.compile(r"Your bash command contained syntax errors and was NOT executed")
REFUSED_EDIT = "Your changes have NOT been applied"
"""How SWE-agent ends the output of an edit its editor refused (its linter found syntax errors): the file
is unchanged and the run goes on."""


def _instance_id(path: Path) -> str:
    name = path.name
    for suffix in (".traj.json", ".traj"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def run_companions(path: Path, pred_names: tuple[str, ...]) -> list[Path]:
    """Prediction and evaluation files a run writes next to its trajectories (this folder and its parent)."""
    out: list[Path] = []
    iid = _instance_id(path)
    for d in (path.parent, path.parent.parent):
        names = _run_files_in(d)
        out += [d / n for n in (*pred_names, *_REPORT_NAMES) if n in names]
        out += [d / n for n in sorted(names) if n.endswith("all_preds.jsonl")]
    pred = path.parent / f"{iid}.pred"
    if pred.is_file():
        out.append(pred)
    return [p for p in dict.fromkeys(out) if p != path]


_DIRS: dict[tuple[str, int], frozenset[str]] = {}


def _run_files_in(d: Path) -> frozenset[str]:
    """Names of the run-level files in `d`; cached per directory state (runs hold thousands of instances)."""
    try:
        key = (str(d), d.stat().st_mtime_ns)
    except OSError:
        return frozenset()
    if key not in _DIRS:
        if len(_DIRS) > 256:
            _DIRS.clear()
        try:
            _DIRS[key] = frozenset(
                e.name
                for e in os.scandir(d)
                if e.name in _RUN_FILE_NAMES or e.name.endswith("all_preds.jsonl")
                if e.is_file()
            )
        except OSError:
            _DIRS[key] = frozenset()
    return _DIRS[key]


_CACHE: dict[tuple[str, int, int], Any] = {}


def _read_shared(path: Path) -> Any:
    """Run-level files are shared by every instance of a run: parsed once per process."""
    try:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in _CACHE:
            if len(_CACHE) > 16:
                _CACHE.clear()
            data = path.read_bytes()
            if path.suffix == ".jsonl":
                rows = []
                for ln in data.splitlines():
                    if ln.strip():
                        try:
                            rows.append(orjson.loads(ln))
                        except orjson.JSONDecodeError:
                            rows.append(None)
                _CACHE[key] = rows
            else:
                _CACHE[key] = orjson.loads(data)
        return _CACHE[key]
    except (OSError, orjson.JSONDecodeError):
        return None


def resolution(instance: str, files: list[Path]) -> tuple[bool | None, str | None]:
    """Whether a SWE-bench evaluation file in `files` marks `instance` resolved, and which file said so."""
    for p in files:
        if p.name not in _REPORT_NAMES:
            continue
        doc = _read_shared(p)
        if not isinstance(doc, dict):
            continue
        if isinstance(doc.get(instance), dict) and isinstance(doc[instance].get("resolved"), bool):
            return doc[instance]["resolved"], f"{p.name}:{instance}.resolved"
        for key in ("resolved_ids", "resolved"):
            ids = doc.get(key)
            if isinstance(ids, list):
                others = [
                    doc.get(k)
                    for k in ("unresolved_ids", "error_ids", "completed_ids", "submitted_ids", "unresolved")
                ]
                known = instance in ids or any(isinstance(o, list) and instance in o for o in others)
                if known:
                    return instance in ids, f"{p.name}:{key}"
    return None, None


def prediction(instance: str, files: list[Path]) -> dict[str, Any] | None:
    """The run's prediction row for `instance` (all_preds.jsonl, preds.json or <id>.pred)."""
    for p in files:
        doc = _read_shared(p) if p.suffix in (".jsonl", ".json", ".pred") else None
        if p.suffix == ".pred" and isinstance(doc, dict):
            return doc
        if isinstance(doc, list):
            for row in doc:
                if isinstance(row, dict) and row.get("instance_id") == instance:
                    return row
        elif isinstance(doc, dict) and p.name not in _REPORT_NAMES and isinstance(doc.get(instance), dict):
            return doc[instance]
    return None


class SweAgentAdapter(Adapter):
    name = "swe-agent"
    runner = "swe_agent"
    extensions = (".traj",)
    priority = 30
    version = 2  # 2: an edit the editor refused ("Your changes have NOT been applied") is an error
    description = (
        "SWE-agent .traj (0.x thought/action, 1.x tool_calls, history-only) with all_preds/report files"
    )

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        h = head_bytes.lstrip()
        return h[:1] == b"{" and any(
            k in h for k in (b'"history"', b'"trajectory"', b'"info"', b'"environment"')
        )

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "not a JSON object with history/trajectory/info"

    def companions(self, path: Path) -> list[Path]:
        return run_companions(path, ("preds.json",))

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        doc = load_json(unit.primary, ctx)
        if doc is None:
            return
        if not isinstance(doc, dict) or not (
            isinstance(doc.get("history"), list) or isinstance(doc.get("trajectory"), list)
        ):
            ctx.quarantine(
                unit.primary,
                "not a SWE-agent trajectory (no history/trajectory list)",
                "schema",
                raw_of_obj(doc),
            )
            return
        steps: list[dict[str, Any]] = []
        anomalies: list[str] = []
        link = CallLinker(steps, anomalies)
        history = as_list(doc.get("history"))
        traj = as_list(doc.get("trajectory"))
        info = as_dict(doc.get("info"))
        rc = doc.get("replay_config")
        if isinstance(rc, str):
            try:
                rc = orjson.loads(rc)
            except orjson.JSONDecodeError:
                anomalies.append("replay_config is not valid JSON")
                rc = None
        rc = rc if isinstance(rc, dict) else {}
        task = None
        if history:
            task, calls = self._history(unit.primary, ctx, history, steps, link)
            entries = list(json_records(unit.primary, ctx, traj))
            _merge_trajectory(calls, [e.obj for e in entries], steps, link, anomalies)
            fmt = "1.x" if any(isinstance(m, dict) and m.get("tool_calls") for m in history) else "0.x"
        else:
            self._trajectory_only(unit.primary, ctx, traj, steps, link)
            fmt = "trajectory-only"
        for s in link.unresolved():
            anomalies.append(f"call without result {s.get('call_id')}")
        iid = as_id(as_dict(rc.get("problem_statement")).get("id")) or _instance_id(unit.primary)
        stats = as_dict(info.get("model_stats"))
        model = as_str(as_dict(as_dict(rc.get("agent")).get("model")).get("name"))
        # shared run files may be claimed by a sibling unit: look them up from the path
        run_files = run_companions(unit.primary, ("preds.json",))
        pred = prediction(iid, run_files)
        meta: dict[str, Any] = {"format": fmt}
        run_name = as_str((pred or {}).get("model_name_or_path"))
        if run_name:
            meta["run_name"] = run_name
            if model is None and "__" in run_name:
                # SWE-agent 0.x run names are `<model>__<dataset>__<config>__t-...`
                model = run_name.split("__")[0]
                meta["model_from"] = "run name"
        if pred is not None:
            meta["has_prediction"] = bool(pred.get("model_patch"))
        if stats.get("api_calls") is not None:
            meta["api_calls"] = stats["api_calls"]
        if doc.get("environment"):
            meta["environment"] = doc["environment"]
        t: dict[str, Any] = {
            "harness": "swe-agent",
            "runner_version": as_str(info.get("swe_agent_version")),
            "model": model,
            "task_id": iid,
            "task": task,
            "final_answer": as_str(info.get("submission")) or as_str((pred or {}).get("model_patch")),
            "exit_status": as_str(info.get("exit_status")),
            "metadata": meta,
            "anomalies": anomalies,
        }
        sent, recv = as_int(stats.get("tokens_sent")), as_int(stats.get("tokens_received"))
        if sent or recv:  # replays and demonstrations record 0/0: usage unknown
            t["input_tokens"], t["output_tokens"] = sent, recv
            t["cost_usd"] = as_num(stats.get("instance_cost"))
        resolved, src = resolution(iid, run_files)
        if resolved is not None:
            t["outcome"] = "success" if resolved else "failure"
            t["reward"] = 1.0 if resolved else 0.0
            t["outcome_source"] = src
        yield ParsedTrajectory(t, steps, native_key=iid)

    def _history(
        self,
        path: Path,
        ctx: ParseContext,
        history: list[Any],
        steps: list[dict[str, Any]],
        link: CallLinker,
    ) -> tuple[str | None, list[dict[str, Any]]]:
        task: str | None = None
        calls: list[dict[str, Any]] = []
        pending: dict[str, Any] | None = None  # 0.x text action waiting for its observation
        n_action = 0
        for rec in json_records(path, ctx, history):
            m = rec.obj
            if not isinstance(m, dict) or "role" not in m:
                ctx.reject(rec, f"history[{rec.line}]: expected a message with a role")
                continue
            n = len(steps)
            try:
                role = as_str(m.get("role"))
                agent = as_str(m.get("agent"))
                base: dict[str, Any] = {"source_line": rec.line}
                if agent and agent not in ("main", "primary"):
                    base.update(agent_id=str(agent), depth=1)
                text = as_text(m.get("content"))
                mtype = as_str(m.get("message_type"))
                if role == "system":
                    steps.append({**base, "kind": "system", "role": "system", "text": text})
                elif role == "user" and (m.get("is_demo") or mtype == "demonstration"):
                    steps.append({**base, "kind": "system", "role": "demonstration", "text": text})
                elif role == "tool":
                    ids = [as_id(i) for i in as_list(m.get("tool_call_ids"))] or [
                        as_id(m.get("tool_call_id"))
                    ]
                    for cid in ids:
                        link.result(cid, orphan={**base}, **_obs_fields(text))
                elif role == "user":
                    if task is None:
                        task = text
                        steps.append({**base, "kind": "user", "role": "user", "text": text})
                    elif pending is not None:
                        link.result(pending["call_id"], **_obs_fields(text))
                        pending = None
                    else:
                        steps.append({**base, "kind": "user", "role": "user", "text": text})
                elif role == "assistant":
                    thought = m.get("thought") if isinstance(m.get("thought"), str) else text
                    steps.append({**base, "kind": "assistant", "role": "assistant", "text": thought})
                    tcs = [tc for tc in as_list(m.get("tool_calls")) if isinstance(tc, dict)]
                    for tc in tcs:
                        fn = as_dict(tc.get("function"))
                        cs = {
                            **base,
                            "kind": "tool_call",
                            "role": "assistant",
                            "tool_name": as_str(fn.get("name")),
                            "arguments": fn.get("arguments"),
                            "call_id": as_id(tc.get("id")),
                            "metadata": {"action": m["action"]} if as_str(m.get("action")) else None,
                        }
                        link.call(cs)
                        calls.append(cs)
                    action = m.get("action")
                    if not tcs and isinstance(action, str) and action.strip():
                        n_action += 1
                        cs = {
                            **base,
                            "kind": "tool_call",
                            "role": "assistant",
                            "tool_name": _action_tool(action),
                            "arguments": {"command": action.rstrip("\n")},
                            "call_id": f"action-{n_action}",
                        }
                        link.call(cs)
                        calls.append(cs)
                        pending = cs
                else:
                    steps.append({**base, "kind": "system", "role": str(role), "text": text})
            except BAD_SHAPE as e:
                rollback(steps, [link], n)
                ctx.reject(rec, f"history[{rec.line}]: unexpected shape ({type(e).__name__}: {e})")
        return task, calls

    def _trajectory_only(
        self, path: Path, ctx: ParseContext, traj: list[Any], steps: list[dict[str, Any]], link: CallLinker
    ) -> None:
        # json_records numbers the records 0, 1, ... (rec.line == i; typed `int | None` on Record)
        for i, rec in enumerate(json_records(path, ctx, traj)):
            e = rec.obj
            if not isinstance(e, dict):
                ctx.reject(rec, f"trajectory[{rec.line}]: expected an object")
                continue
            _entry_steps(e, {"source_line": rec.line}, f"action-{i + 1}", steps, link)


def _entry_steps(
    e: dict[str, Any], base: dict[str, Any], call_id: str, steps: list[dict[str, Any]], link: CallLinker
) -> None:
    """A `trajectory` entry's steps: its thought (or response), then its action with the observation."""
    text = e.get("thought") or e.get("response")
    if text:
        steps.append({**base, "kind": "assistant", "role": "assistant", "text": as_text(text)})
    action = e.get("action")
    if isinstance(action, str) and action.strip():
        cs = {
            **base,
            "kind": "tool_call",
            "role": "assistant",
            "tool_name": _action_tool(action),
            "arguments": {"command": action.rstrip("\n")},
            "call_id": call_id,
            "duration_s": as_num(e.get("execution_time")),
        }
        link.call(cs)
        link.result(call_id, **_obs_fields(as_text(e.get("observation"))))


def _action_tool(action: str) -> str:
    first = action.strip().split(None, 1)[0] if action.strip() else ""
    return first if first in _SWE_COMMANDS else "bash"


def _obs_fields(text: str | None) -> dict[str, Any]:
    timed_out = bool(text and _CANCELLED_RE.search(text))
    syntax = bool(text and _SYNTAX_RE.search(text))
    rejected = bool(text and REFUSED_EDIT in text[-600:])
    return {
        "output": text,
        "timed_out": timed_out or None,
        "is_error": (timed_out or syntax or rejected) or None,
    }


def _norm(s: Any) -> str:
    return re.sub(r"\s+", " ", str(s or "")).strip()


def _merge_trajectory(
    calls: list[dict[str, Any]],
    entries: list[Any],
    steps: list[dict[str, Any]],
    link: CallLinker,
    anomalies: list[str],
) -> None:
    """`trajectory[k]` is the k-th executed action: its execution time (and, when the history has no
    observation for it, its observation) goes onto the k-th call; entries past the history's calls
    (the history is often saved before the last action) become steps of their own."""
    entries = [e for e in entries if isinstance(e, dict)]
    mismatched = 0
    for cs, e in zip(calls, entries):
        m, a = cs.get("metadata"), cs.get("arguments")
        meta = m if isinstance(m, dict) else {}
        args = a if isinstance(a, dict) else {}
        action = meta.get("action") or args.get("command")
        if action is not None and _norm(action) != _norm(e.get("action")):
            mismatched += 1
            continue
        if as_num(e.get("execution_time")) is not None:
            cs["duration_s"] = as_num(e["execution_time"])
        if not cs.get("_has_result") and e.get("observation") is not None:
            link.result(cs["call_id"], **_obs_fields(as_text(e.get("observation"))))
    if mismatched:
        anomalies.append(f"{mismatched} trajectory entries do not match the history actions")
    extra = entries[len(calls) :]
    for k, e in enumerate(extra, len(calls)):
        _entry_steps(e, {"metadata": {"from": "trajectory", "entry": k}}, f"trajectory-{k}", steps, link)
    if extra:
        anomalies.append(f"{len(extra)} trajectory entries after the saved history (taken from trajectory)")
