"""OmniCoding "Kira" harness item folders (Dongping-Chen/OmniCoding, `src/omnicoding/harnesses/kira.py`).

The harness writes, per benchmark item, `<out>/item_NNNN/` (NNNN = the item's `__source_index__`):
`messages.json` (the OpenAI-shape chat history: system, user, assistant with `tool_calls` /
`reasoning_content`, `tool` replies by `tool_call_id`, follow-up `user` messages), `trajectory.json`
(one record per tool-calling turn: `step, analysis, plan, n_commands, is_task_complete,
is_image_read, output_chars, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens`),
`final_text.txt`, and after a context summarization `pre_summary_snapshots.json`. The run folder has
`results.json` (a list of rows keyed by `source_index`: `is_correct`, the prediction, `model`,
`exit_reason`, token totals, `error`...; `results.<source_index>.json` for on-demand jobs) and
`run_meta.json`. `messages.json` is the primary file; the rest are companions.

Tools: `execute_commands(analysis, plan, keystrokes, duration)` (a shell command),
`image_read(file_path, image_read_instruction)` and `task_complete()`. When one turn has several
calls the first `tool` reply has the output and the others say `executed`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..normalize import normalize_call
from ._base import (
    Adapter,
    CallLinker,
    ParseContext,
    ParsedTrajectory,
    SourceUnit,
    as_text,
    json_records,
    load_json,
    parse_args,
)
from ._safe import BAD_SHAPE, as_dict, as_id, as_int, as_list, as_str, raw_of_obj, rollback

_ITEM_RE = re.compile(r"^item_(\d+)$")
_BENCHMARKS = ("omnigaia", "lvomnibench", "socialomni_l1", "socialomni_l2", "videozerobench")
_PREDICTION_KEYS = ("predicted_answer", "predicted_option", "level3_answer", "prediction")
_ITEM_FILES = ("trajectory.json", "final_text.txt", "pre_summary_snapshots.json", "image_subcalls.jsonl")


def _source_index(path: Path) -> int | None:
    m = _ITEM_RE.match(path.parent.name)
    return int(m.group(1)) if m else None


class KiraAdapter(Adapter):
    name = "kira"
    runner = "kira"
    extensions = (".json",)
    priority = 30
    description = "OmniCoding Kira item folders (item_NNNN/messages.json + trajectory.json, run results.json)"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        if path.name != "messages.json" or head_bytes.lstrip()[:1] != b"[":
            return False
        if _source_index(path) is not None:
            return True
        return any(k in head_bytes for k in (b'"execute_commands"', b"execute_commands:", b'"task_complete"'))

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "not an item_NNNN/messages.json chat list"

    def companions(self, path: Path) -> list[Path]:
        d, run = path.parent, path.parent.parent
        out = [d / n for n in _ITEM_FILES]
        si = _source_index(path)
        if si is not None:
            out.append(run / f"results.{si}.json")
        out += [run / "results.json", run / "run_meta.json"]
        return [p for p in out if p.is_file()]

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        doc = load_json(unit.primary, ctx)
        if doc is None:
            return
        if not isinstance(doc, list):
            ctx.quarantine(unit.primary, "messages.json is not a list of messages", "schema", raw_of_obj(doc))
            return
        d = unit.primary.parent
        anomalies: list[str] = []
        messages = list(json_records(unit.primary, ctx, doc))
        records = _step_records(d / "trajectory.json", ctx)
        if not (d / "trajectory.json").is_file():
            anomalies.append("trajectory.json missing: no per-turn token usage")
        snapshots = _snapshots(d / "pre_summary_snapshots.json", ctx, anomalies)
        conv = _Conv(anomalies)
        for seg_i, seg in enumerate(snapshots):
            conv.segment(seg["messages"], pre=True)
            conv.compaction(seg, seg_i)
        conv.run(messages, ctx)
        _apply_records(conv.turns, records, anomalies)
        for s in conv.link.unresolved():
            anomalies.append(f"call without result {s.get('call_id')}")
        si = _source_index(unit.primary)
        row, row_src = _result_row(unit, si, anomalies)
        meta_run = _shared(unit.primary.parent.parent / "run_meta.json")
        meta_run = meta_run if isinstance(meta_run, dict) else {}
        final_text = _read_text(d / "final_text.txt")
        t = _trajectory(row, meta_run, conv, final_text, unit.primary)
        if row is not None:
            t["metadata"]["results_file"] = row_src
        elif si is not None:
            anomalies.append("no results row for this item: outcome unknown")
        t["anomalies"] = anomalies
        native = t.get("task_id")
        yield ParsedTrajectory(
            t, conv.steps, native_key=native or (f"item_{si:04d}" if si is not None else None)
        )


class _Conv:
    def __init__(self, anomalies: list[str]) -> None:
        self.steps: list[dict[str, Any]] = []
        self.anomalies = anomalies
        self.link = CallLinker(self.steps, anomalies)
        self.turns: list[dict[str, Any]] = []  # first step of each tool-calling turn, in order
        self.task: str | None = None
        self.n = 0
        self.skip = 0

    def segment(self, msgs: list[Any], pre: bool = False) -> None:
        for i, m in enumerate(msgs[self.skip :], self.skip):
            if not isinstance(m, dict):
                self.anomalies.append(f"pre-summary message {i} is not an object")
                continue
            n = len(self.steps)
            try:
                self.message(m, None, {"pre_summary": True} if pre else None)
            except BAD_SHAPE as e:
                rollback(self.steps, [self.link], n)
                self.anomalies.append(
                    f"pre-summary message {i} dropped: unexpected shape ({type(e).__name__})"
                )

    def compaction(self, seg: dict[str, Any], i: int) -> None:
        post = as_list(seg.get("post"))
        summary = "\n\n".join(
            as_text(m.get("content")) or "" for m in post if isinstance(m, dict) and m.get("role") == "user"
        )
        self.steps.append(
            {
                "kind": "compaction",
                "role": "system",
                "text": summary or None,
                "metadata": {"summarize_index": i + 1},
            }
        )
        # messages.json (or the next snapshot) starts with the post-summary messages: already seen
        self.skip = len(post)

    def run(self, records: list[Any], ctx: ParseContext) -> None:
        for rec in records[self.skip :]:
            m = rec.obj
            if not isinstance(m, dict) or "role" not in m:
                ctx.reject(rec, f"messages[{rec.line}]: expected a message with a role")
                continue
            n = len(self.steps)
            try:
                self.message(m, rec.line, None)
            except BAD_SHAPE as e:
                rollback(self.steps, [self.link], n)
                self.turns = [s for s in self.turns if s in self.steps]
                ctx.reject(rec, f"messages[{rec.line}]: unexpected shape ({type(e).__name__}: {e})")

    def message(self, m: dict[str, Any], line: int | None, extra_meta: dict[str, Any] | None) -> None:
        role = m.get("role")
        base: dict[str, Any] = {"source_line": line}
        if extra_meta:
            base["metadata"] = dict(extra_meta)
        text = as_text(m.get("content"))
        if role == "system":
            self.steps.append({**base, "kind": "system", "role": "system", "text": text})
        elif role == "user":
            if self.task is None:
                self.task = text
            self.steps.append({**base, "kind": "user", "role": "user", "text": text})
        elif role == "tool":
            self.link.result(
                as_id(m.get("tool_call_id")), orphan={**base}, output=text, is_error=_is_error(text)
            )
        elif role == "assistant":
            flags = {
                k.lstrip("_"): m[k]
                for k in ("_finish_reason", "_recovered_from_content", "_synthetic_truncated")
                if k in m
            }
            meta = {**(base.get("metadata") or {}), **flags} or None
            first = None
            if m.get("reasoning_content"):
                first = {
                    **base,
                    "kind": "reasoning",
                    "role": "assistant",
                    "text": as_text(m["reasoning_content"]),
                    "metadata": meta,
                }
                self.steps.append(first)
            tcs = [tc for tc in as_list(m.get("tool_calls")) if isinstance(tc, dict)]
            if text or not tcs:
                a = {**base, "kind": "assistant", "role": "assistant", "text": text or "", "metadata": meta}
                self.steps.append(a)
                first = first or a
            for i, tc in enumerate(tcs):
                cs = _call_step(tc, i, base)
                self.link.call(cs)
                first = first or cs
            if tcs and not m.get("_synthetic_truncated") and first is not None:
                self.turns.append(first)
        else:
            self.steps.append({**base, "kind": "system", "role": as_str(role) or "unknown", "text": text})


def _call_step(tc: dict[str, Any], i: int, base: dict[str, Any]) -> dict[str, Any]:
    fn = as_dict(tc.get("function"))
    name = as_str(fn.get("name")) or ""
    args = parse_args(fn.get("arguments"))
    step: dict[str, Any] = {
        **base,
        "kind": "tool_call",
        "role": "assistant",
        "tool_name": name,
        "arguments": args,
        "call_id": as_id(tc.get("id")) or f"call_kira_{i}",
    }
    if name == "execute_commands" and isinstance(args, dict):
        keys = args.get("keystrokes")
        if isinstance(keys, str) and keys.strip():
            ni = normalize_call("bash", {"command": keys})
            step.update(tool=ni.tool, programs=list(ni.programs), modality=ni.modality, command=ni.command)
        else:
            step.update(tool="wait", programs=[], modality="compute")
    elif name == "task_complete":
        step.update(tool="submit", programs=[], modality="compute")
    return step


def _is_error(text: str | None) -> bool | None:
    return bool(text and text.lstrip().startswith("ERROR")) or None


def _json_list(path: Path, ctx: ParseContext, not_a_list: str) -> list[Any] | None:
    """A companion file's top-level list; None when it is absent, unreadable or (quarantined) not a list."""
    if not path.is_file():
        return None
    doc = load_json(path, ctx)
    if doc is None:
        return None
    if not isinstance(doc, list):
        ctx.quarantine(path, not_a_list, "schema", raw_of_obj(doc))
        return None
    return doc


def _step_records(path: Path, ctx: ParseContext) -> list[dict[str, Any]]:
    doc = _json_list(path, ctx, "trajectory.json is not a list of step records")
    if doc is None:
        return []
    out = []
    for rec in json_records(path, ctx, doc):
        if isinstance(rec.obj, dict):
            out.append(rec.obj)
        else:
            ctx.reject(rec, f"trajectory.json[{rec.line}]: expected a step record")
    return out


def _apply_records(turns: list[dict[str, Any]], records: list[dict[str, Any]], anomalies: list[str]) -> None:
    """Token usage is only in trajectory.json: one record per tool-calling turn, in order."""
    if records and len(records) != len(turns):
        anomalies.append(
            f"trajectory.json has {len(records)} step records for {len(turns)} tool-calling turns"
        )
    for step, r in zip(turns, records):
        for ours, theirs in (
            ("input_tokens", "prompt_tokens"),
            ("output_tokens", "completion_tokens"),
            ("cached_tokens", "cached_tokens"),
            ("reasoning_tokens", "reasoning_tokens"),
        ):
            if as_int(r.get(theirs)) is not None:
                step[ours] = r[theirs]


def _snapshots(path: Path, ctx: ParseContext, anomalies: list[str]) -> list[dict[str, Any]]:
    doc = _json_list(path, ctx, "pre_summary_snapshots.json is not a list")
    if doc is None:
        return []
    out = []
    for rec in json_records(path, ctx, doc):
        s = rec.obj
        if not isinstance(s, dict) or not isinstance(s.get("pre_summary_messages"), list):
            ctx.reject(rec, f"pre_summary_snapshots[{rec.line}]: no pre_summary_messages list")
            continue
        out.append({"messages": s["pre_summary_messages"], "post": s.get("post_summary_messages") or []})
    if out:
        anomalies.append(
            f"{len(out)} context summarization(s): pre-summary turns spliced from pre_summary_snapshots.json"
        )
    return out


_CACHE: dict[tuple[str, int, int], Any] = {}


def _shared(path: Path) -> Any:
    """Run-level files are shared by every item of a run: parsed once per process."""
    try:
        st = path.stat()
    except OSError:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        if len(_CACHE) > 8:
            _CACHE.clear()
        try:
            doc = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            doc = None
        rows = doc.get("results") if isinstance(doc, dict) and isinstance(doc.get("results"), list) else doc
        if isinstance(rows, list):
            _CACHE[key] = {
                as_id(r.get("source_index")): r
                for r in rows
                if isinstance(r, dict) and as_id(r.get("source_index")) is not None
            }
        else:
            _CACHE[key] = doc
    return _CACHE[key]


def _result_row(
    unit: SourceUnit, si: int | None, anomalies: list[str]
) -> tuple[dict[str, Any] | None, str | None]:
    run = unit.primary.parent.parent
    for name in ([f"results.{si}.json"] if si is not None else []) + ["results.json"]:
        p = run / name
        if not p.is_file():
            continue
        idx = _shared(p)
        if idx is None:
            anomalies.append(f"{name} unreadable")
            continue
        if isinstance(idx, dict):
            row = idx.get(str(si)) if si is not None else None
            if isinstance(row, dict):
                return row, name
    return None, None


def _trajectory(
    row: dict[str, Any] | None, run_meta: dict[str, Any], conv: _Conv, final_text: str | None, primary: Path
) -> dict[str, Any]:
    r = row or {}
    t: dict[str, Any] = {
        "harness": as_str(r.get("harness")) or as_str(run_meta.get("harness")) or "kira",
        "runner_version": as_str(r.get("harness_version")) or as_str(run_meta.get("harness_version")),
        "model": as_str(r.get("model")) or as_str(run_meta.get("model")),
        "reasoning_effort": as_str(r.get("reasoning_effort")) or as_str(run_meta.get("reasoning_effort")),
        "task": conv.task,
        "task_id": _str(r.get("id") or r.get("question_id") or r.get("source_question_id")),
        "benchmark": as_str(run_meta.get("bench"))
        or next((b for b in _BENCHMARKS if b in str(primary).lower()), None),
        "difficulty": _str(r.get("Level") or r.get("level") or r.get("difficulty")),
        "exit_status": as_str(r.get("exit_reason")),
        "error": _str(r.get("error")) or None,
        "expected_answer": _str(r.get("answer")) if r.get("answer") is not None else None,
    }
    pred = next((r[k] for k in _PREDICTION_KEYS if r.get(k) not in (None, "")), None)
    t["final_answer"] = _str(pred) if pred is not None else (final_text or None)
    if isinstance(r.get("is_correct"), bool):
        t["outcome"] = "success" if r["is_correct"] else "failure"
        t["reward"] = 1.0 if r["is_correct"] else 0.0
        t["outcome_source"] = "results.json:is_correct"
    for ours, theirs in (
        ("input_tokens", "prompt_tokens"),
        ("output_tokens", "completion_tokens"),
        ("cached_tokens", "cached_tokens"),
        ("reasoning_tokens", "reasoning_tokens"),
    ):
        if as_int(r.get(theirs)) is not None:
            t[ours] = r[theirs]
    meta: dict[str, Any] = {}
    for k in (
        "source_index",
        "category",
        "task_type",
        "attempt",
        "completed",
        "timed_out",
        "n_summarizations",
        "retry_count",
        "step_limit_used",
    ):
        if r.get(k) is not None:
            meta[k] = r[k]
    if as_str(run_meta.get("provider")):
        meta["provider"] = run_meta["provider"]
    t["metadata"] = meta
    return t


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
