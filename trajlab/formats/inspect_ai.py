"""Inspect AI eval logs: `.eval` zip archives and `.json` EvalLog files.

One trajectory per sample and epoch (locator `sample=<id>;epoch=<n>`). A `.eval` file is a zip of
`header.json` (eval spec, plan, results, stats; `_journal/start.json` while a run is in progress)
and `samples/<id>_epoch_<n>.json`, read one sample at a time so memory stays bounded by the largest
sample. A `.json` EvalLog holds the same header fields plus `samples[]`.

Per sample: `attachment://<hash>` strings are resolved from the sample's `attachments`; the
`message_pool` that newer logs use to deduplicate model-event inputs (`input_refs` ranges) is
only needed when `messages` is missing, in which case the conversation is rebuilt from the last
model event. Tool calls (`arguments` dicts) link to tool messages by `tool_call_id`; a tool
message's `error{type, message}` marks the call failed (`timeout` -> timed out). Model events give
each assistant message its timestamp, latency and token usage; tool events give calls their
timing, and the sandbox `exec` events inside a tool's span give the exit code. Messages produced
inside a nested `agent` span are attributed to that agent.

Outcome: the score of one scorer, by default the first scorer of the eval spec (or the first key
of `sample.scores`); set `TRAJLAB_INSPECT_SCORER=<name>` to pick another. Values map as Inspect's
`value_to_float` does: `C`/yes/true -> 1, `I`/`N`/no/false -> 0, `P` -> 0.5, numbers as they are;
the reward is that value and the outcome is `success` only at 1.0. `target` -> expected answer,
`eval.dataset.name` (else `eval.task`) -> benchmark, `sample.model_usage` -> tokens, less the tokens of
the model calls made inside `scorer` spans (a grader model: kept as `metadata.scorer_tokens`).
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from collections.abc import Iterator
from datetime import timezone
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
    load_json,
    parse_ts,
)
from ._finish import outcome_from_reward
from ._safe import raw_of_obj
from ._typed import typed_rows

SCORER_ENV = "TRAJLAB_INSPECT_SCORER"
_QUARANTINED = object()  # what _entry returns for an entry it quarantined


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


_SAMPLE_RE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
_ATTACH = "attachment://"
_SCORE_WORDS = {"C": 1.0, "CORRECT": 1.0, "YES": 1.0, "TRUE": 1.0, "P": 0.5}
_SCORE_WORDS.update(dict.fromkeys(("I", "INCORRECT", "N", "NO", "FALSE"), 0.0))
_HEAD_KEY_RE = re.compile(rb'"(eval|samples)"\s*:')


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _s(v: Any) -> str | None:
    """A string field (ids, names); numbers become strings, anything else None."""
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return None


def _resolve(v: Any, att: dict[str, Any]) -> Any:
    """Replace `attachment://<hash>` strings by the attachment text, recursively."""
    if isinstance(v, str):
        if v.startswith(_ATTACH):
            return att.get(v[len(_ATTACH) :], v)
        return v
    if isinstance(v, list):
        return [_resolve(x, att) for x in v]
    if isinstance(v, dict):
        return {k: _resolve(x, att) for k, x in v.items()}
    return v


def _utc(v: Any) -> Any:
    dt = parse_ts(v)
    return dt.astimezone(timezone.utc) if dt is not None else None


def _score_value(v: Any) -> float | None:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        s = v.strip().upper()
        if s in _SCORE_WORDS:
            return _SCORE_WORDS[s]
        try:
            return float(s)
        except ValueError:
            return None
    return None


def _natural(key: str) -> tuple[int, int | str]:
    return (0, int(key)) if key.isdigit() else (1, key)


def _parts(content: Any) -> tuple[list[str], list[str]]:
    """(text pieces, reasoning pieces) of message content; media become markers."""
    if content is None:
        return [], []
    if isinstance(content, str):
        return [content], []
    texts: list[str] = []
    reasoning: list[str] = []
    for p in content if isinstance(content, list) else [content]:
        if not isinstance(p, dict):
            texts.append(str(p))
            continue
        t = p.get("type")
        if t == "reasoning":
            r = p.get("reasoning") or p.get("summary")
            reasoning.append("[redacted reasoning]" if p.get("redacted") and not r else (as_text(r) or ""))
        elif t in ("image", "audio", "video", "document", "data"):
            fmt = p.get("format") or p.get("filename") or ""
            texts.append(f"[{t}{': ' + fmt if fmt else ''}]")
        else:
            txt = as_text(p.get("text")) if t == "text" else as_text(p)
            if txt:
                texts.append(txt)
    return texts, reasoning


def _usage(u: Any) -> dict[str, Any]:
    u = _d(u)
    pairs = (
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("reasoning_tokens", "reasoning_tokens"),
        ("cached_tokens", "input_tokens_cache_read"),
    )
    return {k: u[src] for k, src in pairs if isinstance(u.get(src), int) and not isinstance(u.get(src), bool)}


class _Events:
    """Indexes of a sample's events: model calls by output message, tool calls by id, agent spans."""

    def __init__(self, events: list[Any]):
        self.model_by_msg: dict[str, dict[str, Any]] = {}
        self.models: list[dict[str, Any]] = []
        self.tool_by_id: dict[str, dict[str, Any]] = {}
        self.spans: dict[str, dict[str, Any]] = {}
        self.exec_by_span: dict[str, list[dict[str, Any]]] = {}
        tool_spans: dict[str, list[str]] = {}  # parent span id -> tool span ids, in order
        tool_events: list[dict[str, Any]] = []
        scoring: list[dict[str, Any]] = []  # model events, sorted out below: the scorers' and the agent's
        self.first_ts = self.last_ts = None
        for e in events:
            if not isinstance(e, dict):
                continue
            ev = e.get("event")
            ts = e.get("timestamp")
            if ts and self.first_ts is None:
                self.first_ts = ts
            if ts:
                self.last_ts = e.get("completed") or ts
            if ev == "span_begin":
                sid = _s(e.get("id"))
                if sid:
                    self.spans[sid] = e
                    if e.get("type") == "tool":
                        tool_spans.setdefault(_s(e.get("parent_id")) or "", []).append(sid)
            elif ev == "model":
                self.models.append(e)
                scoring.append(e)
                for ch in _l(_d(e.get("output")).get("choices")):
                    mid = _s(_d(_d(ch).get("message")).get("id"))
                    if mid:
                        self.model_by_msg[mid] = e
            elif ev == "tool":
                if _s(e.get("id")):
                    self.tool_by_id[str(e["id"])] = e
                tool_events.append(e)
            elif ev == "sandbox" and e.get("action") == "exec":
                self.exec_by_span.setdefault(_s(e.get("span_id")) or "", []).append(e)
        # Model calls a scorer made (`model_graded_fact` asks a grader model) are no part of the agent's
        # run, but `sample.model_usage` counts them: their usage is summed here to be taken out.
        self.scorer_usage: dict[str, int] = {}
        for e in scoring:
            if self._in_scorer(_s(e.get("span_id"))):
                for k, v in _usage(_d(e.get("output")).get("usage")).items():
                    self.scorer_usage[k] = self.scorer_usage.get(k, 0) + v
        # A tool event is logged in its caller's span; its sandbox work happens in the next `tool`
        # span opened under that caller (matched in order).
        taken: dict[str, int] = {}
        for e in tool_events:
            parent = _s(e.get("span_id")) or ""
            i = taken.get(parent, 0)
            spans = tool_spans.get(parent) or []
            if i < len(spans):
                e["_tool_span"] = spans[i]
                taken[parent] = i + 1

    def _enclosing(self, span_id: str | None) -> Iterator[dict[str, Any]]:
        """The span `span_id` and the spans around it, innermost first (a parent cycle ends the walk)."""
        seen: set[str] = set()
        while span_id and span_id in self.spans and span_id not in seen:
            seen.add(span_id)
            sp = self.spans[span_id]
            yield sp
            span_id = _s(sp.get("parent_id"))

    def _in_scorer(self, span_id: str | None) -> bool:
        return any(sp.get("type") == "scorer" for sp in self._enclosing(span_id))

    def agent_of(self, span_id: str | None) -> tuple[str, int]:
        """(agent id, depth): the innermost `agent` span when agents are nested, else main."""
        chain = [
            _s(sp.get("name")) or _s(sp.get("id")) or ""
            for sp in self._enclosing(span_id)
            if sp.get("type") == "agent"
        ]
        if len(chain) >= 2:
            return chain[0], len(chain) - 1
        return "main", 0

    def exit_code(self, tool_event: dict[str, Any]) -> int | None:
        code = None
        for x in self.exec_by_span.get(_s(tool_event.get("_tool_span")) or "", []):
            cmd = str(x.get("cmd") or "")
            if cmd.startswith(("inspect-tool-support", "which inspect-tool-support")):
                continue  # the tool-support server's own exit status, not the agent's command
            if isinstance(x.get("result"), int) and not isinstance(x.get("result"), bool):
                code = x["result"]
        return code


class _InspectBase(Adapter):
    runner = "inspect_ai"
    version = 2  # 2: the tokens of the scorers' model calls (a grader model) are not the agent's

    def _sample(self, header: dict[str, Any], s: dict[str, Any], path: Path) -> ParsedTrajectory:
        anomalies: list[str] = []
        att = _d(s.get("attachments"))
        ev = _Events(_l(s.get("events")))
        messages = _l(s.get("messages"))
        if not messages:
            messages = self._rebuild_messages(s, ev)
            if messages:
                anomalies.append("messages rebuilt from the last model event (message_pool)")
        messages = _resolve(messages or [], att)
        steps: list[dict[str, Any]] = []
        link = CallLinker(steps, anomalies)
        n_assistant = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        by_order = len(ev.models) == n_assistant and not ev.model_by_msg
        k_assistant = 0
        task = None
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                anomalies.append(f"message {i} is not an object")
                continue
            role = m.get("role")
            texts, reasoning = _parts(m.get("content"))
            base: dict[str, Any] = {"role": role, "source_line": i}
            if role == "assistant":
                mev = ev.model_by_msg.get(_s(m.get("id")) or "")
                if mev is None and by_order:
                    mev = ev.models[k_assistant]
                k_assistant += 1
                self._assistant(m, texts, reasoning, mev, ev, base, link, steps)
            elif role == "tool":
                self._tool(m, texts, ev, base, link)
            else:
                text = "\n".join(texts)
                kind = "system" if role == "system" else "user"
                steps.append({**base, "kind": kind, "text": text})
                if kind == "user" and task is None:
                    task = text
        for st in link.unresolved():
            anomalies.append(f"call without result {st.get('call_id')}")
        return self._trajectory(header, s, steps, anomalies, task, ev, att, path)

    @staticmethod
    def _rebuild_messages(s: dict[str, Any], ev: _Events) -> list[Any]:
        if not ev.models:
            return []
        last = ev.models[-1]
        msgs = list(_l(last.get("input")))
        pool = _l(s.get("message_pool"))
        if not msgs:
            for ref in _l(last.get("input_refs")):
                if isinstance(ref, list) and len(ref) == 2 and all(isinstance(x, int) for x in ref):
                    msgs.extend(pool[ref[0] : ref[1]])
        choices = _l(_d(last.get("output")).get("choices"))
        if choices and _d(choices[0]).get("message"):
            msgs.append(choices[0]["message"])
        return msgs

    @staticmethod
    def _assistant(
        m: dict[str, Any],
        texts: list[str],
        reasoning: list[str],
        mev: dict[str, Any] | None,
        ev: _Events,
        base: dict[str, Any],
        link: CallLinker,
        steps: list[dict[str, Any]],
    ) -> None:
        agent, depth = ev.agent_of(_s(mev.get("span_id"))) if mev else ("main", 0)
        base = {**base, "agent_id": agent, "depth": depth}
        if mev is not None:
            base["timestamp"] = _utc(mev.get("timestamp"))
        model = _s(m.get("model")) or _s(_d(_d(mev).get("output")).get("model"))
        usage = _usage(_d(_d(mev).get("output")).get("usage"))
        out: list[dict[str, Any]] = []
        if reasoning:
            out.append({**base, "kind": "reasoning", "text": "\n".join(reasoning)})
        if texts and any(t.strip() for t in texts):
            out.append({**base, "kind": "assistant", "text": "\n".join(texts)})
        calls = [c for c in _l(m.get("tool_calls")) if isinstance(c, dict)]
        for c in calls:
            call: dict[str, Any] = {
                **base,
                "kind": "tool_call",
                "tool_name": _s(c.get("function")),
                "arguments": c.get("arguments"),
                "call_id": _s(c.get("id")),
            }
            if c.get("parse_error"):
                call["is_error"] = True
                call["metadata"] = {"parse_error": c["parse_error"]}
            tev = ev.tool_by_id.get(call["call_id"] or "")
            if tev is not None:
                call["timestamp"] = _utc(tev.get("timestamp"))
                if isinstance(tev.get("working_time"), (int, float)):
                    call["duration_s"] = tev["working_time"]
                code = ev.exit_code(tev)
                if code is not None:
                    call["exit_code"] = code
            out.append(call)
        if not out:
            out.append({**base, "kind": "assistant", "text": ""})
        out[0].update({k: v for k, v in usage.items() if v is not None})
        latency = (mev or {}).get("working_time")
        if isinstance(latency, (int, float)) and out[0]["kind"] != "tool_call":
            out[0]["duration_s"] = latency  # a call's duration is its execution time, set above
        if model:
            out[0]["model"] = model
        for st in out:
            if st["kind"] == "tool_call" and st.get("call_id"):
                link.call(st)
            else:
                steps.append(st)

    @staticmethod
    def _tool(
        m: dict[str, Any], texts: list[str], ev: _Events, base: dict[str, Any], link: CallLinker
    ) -> None:
        err = m.get("error") if isinstance(m.get("error"), dict) else None
        output = "\n".join(texts)
        fields: dict[str, Any] = {"output": output, "is_error": err is not None}
        if err is not None:
            if not output.strip() and err.get("message"):
                fields["output"] = as_text(err["message"])
            if err.get("type") == "timeout":
                fields["timed_out"] = True
            fields["metadata"] = {"error_type": err.get("type"), "error": err.get("message")}
        cid = _s(m.get("tool_call_id"))
        call = link.get(cid)
        if call is not None and call.get("exit_code") not in (None, 0):
            fields["is_error"] = True
        orphan = {**base, "tool_name": _s(m.get("function"))}
        link.result(cid, orphan=orphan, **fields)

    @staticmethod
    def _trajectory(
        header: dict[str, Any],
        s: dict[str, Any],
        steps: list[dict[str, Any]],
        anomalies: list[str],
        task: str | None,
        ev: _Events,
        att: dict[str, Any],
        path: Path,
    ) -> ParsedTrajectory:
        spec = _d(header.get("eval"))
        sid, epoch = s.get("id"), s.get("epoch", 1)
        scores = _resolve(s.get("scores"), att) if isinstance(s.get("scores"), dict) else {}
        outcome, reward, source = "unknown", None, None
        if scores:
            wanted = os.environ.get(SCORER_ENV)
            first = next((_s(sc.get("name")) for sc in _l(spec.get("scorers")) if isinstance(sc, dict)), None)
            name = next((n for n in (wanted, first) if n and n in scores), next(iter(scores)))
            if wanted and wanted not in scores:
                anomalies.append(f"scorer {wanted!r} ({SCORER_ENV}) not in this sample's scores")
            sc = scores[name]
            value = _score_value(sc.get("value") if isinstance(sc, dict) else sc)
            if value is None:
                anomalies.append(f"score {name!r} has no single numeric value")
            else:
                outcome, reward, source = outcome_from_reward(value), value, f"scores.{name}"
        target = _resolve(s.get("target"), att)
        if isinstance(target, list):
            target = target[0] if len(target) == 1 else orjson.dumps(target).decode()
        inp = _resolve(s.get("input"), att)
        if isinstance(inp, str) and inp:
            task = inp
        output = _d(s.get("output"))
        final = _s(output.get("completion")) or next(
            (st.get("text") for st in reversed(steps) if st.get("kind") == "assistant" and st.get("text")),
            None,
        )
        t: dict[str, Any] = {
            "harness": "inspect-ai",
            "runner_version": _s(_d(spec.get("packages")).get("inspect_ai")),
            "model": _s(spec.get("model")),
            "task": task,
            "task_id": None if sid is None else str(sid),
            "benchmark": _s(_d(spec.get("dataset")).get("name")) or _s(spec.get("task")),
            "expected_answer": None if target in (None, "") else str(target),
            "final_answer": final,
            "outcome": outcome,
            "reward": reward,
            "outcome_source": source,
            "started_at": _utc(s.get("started_at") or ev.first_ts),
            "ended_at": _utc(s.get("completed_at") or ev.last_ts),
            "duration_s": s.get("total_time") if isinstance(s.get("total_time"), (int, float)) else None,
            "anomalies": anomalies,
        }
        mu = s.get("model_usage")
        if isinstance(mu, dict) and mu:
            for k, src in (
                ("input_tokens", "input_tokens"),
                ("output_tokens", "output_tokens"),
                ("total_tokens", "total_tokens"),
                ("cached_tokens", "input_tokens_cache_read"),
                ("reasoning_tokens", "reasoning_tokens"),
            ):
                vals = [
                    u.get(src) for u in mu.values() if isinstance(u, dict) and isinstance(u.get(src), int)
                ]
                if vals:
                    t[k] = sum(vals)
            # the agent's tokens: without what the scorers' grader calls used (kept in the metadata)
            graded = ev.scorer_usage
            for k, v in graded.items():
                if isinstance(t.get(k), int):
                    t[k] = max(0, t[k] - v)
            if graded and isinstance(t.get("total_tokens"), int):
                t["total_tokens"] = max(
                    0, t["total_tokens"] - graded.get("input_tokens", 0) - graded.get("output_tokens", 0)
                )
        err = s.get("error")
        if err:
            t["exit_status"] = "error"
            t["error"] = as_text(err.get("message")) if isinstance(err, dict) else str(err)
        elif isinstance(s.get("limit"), dict):
            t["exit_status"] = f"limit:{s['limit'].get('type')}"
        status = header.get("status")
        if status and status != "success":
            anomalies.append(f"eval log status is {status!r}")
        meta: dict[str, Any] = {
            k: spec.get(k) for k in ("eval_id", "run_id", "task", "task_id", "created") if spec.get(k)
        }
        meta["epoch"] = epoch
        if scores:
            meta["scores"] = {n: (v.get("value") if isinstance(v, dict) else v) for n, v in scores.items()}
            # (the score `source` names; none when no score had a value: a scorer named "" used to
            # fail the file here)
            explained = scores.get(source[7:]) if source else None
            if isinstance(explained, dict):
                meta["score_explanation"] = explained.get("explanation")
        if s.get("metadata"):
            meta["sample_metadata"] = s["metadata"]
        if ev.scorer_usage:
            meta["scorer_tokens"] = ev.scorer_usage
        solvers = [st.get("solver") for st in _l(_d(header.get("plan")).get("steps")) if isinstance(st, dict)]
        if solvers:
            meta["solvers"] = solvers
        if isinstance(spec.get("sandbox"), dict):
            meta["sandbox"] = _s(spec["sandbox"].get("type"))
        t["metadata"] = meta
        native = s.get("uuid") or f"{spec.get('eval_id') or spec.get('run_id') or path.stem}:{sid}:{epoch}"
        t, steps = typed_rows(t, steps)
        return ParsedTrajectory(t, steps, native_key=str(native), locator=f"sample={sid};epoch={epoch}")


class InspectEvalAdapter(_InspectBase):
    name = "inspect-eval"
    extensions = (".eval",)
    priority = 20
    description = "Inspect AI .eval log archives (zip of header.json + samples/<id>_epoch_<n>.json)"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        return head_bytes[:4] == b"PK\x03\x04" and (
            b"header.json" in head_bytes or b"_journal/" in head_bytes or b"samples/" in head_bytes
        )

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        if head_bytes[:4] != b"PK\x03\x04":
            return "not a zip archive"
        return "zip without header.json, _journal/ or samples/ entries"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        path = unit.primary
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, NotImplementedError, ValueError, EOFError) as e:
            # the whole archive is kept (it was cut to its first 4 KB): nothing of it reaches the lab
            ctx.quarantine(path, f"not a readable zip archive ({e})", "truncated", _read_or_none(path))
            return
        with zf:
            names = zf.namelist()
            header: dict[str, Any] = {}
            hname = next((n for n in ("header.json", "_journal/start.json") if n in names), None)
            if hname is None:
                ctx.quarantine(path, "no header.json or _journal/start.json in the archive", "schema")
            else:
                obj = self._entry(zf, hname, ctx, path)
                if isinstance(obj, dict):
                    header = obj
                    ctx.seen_ok()
                    if hname != "header.json":
                        header.setdefault("status", "started")
                elif obj is not _QUARANTINED:
                    ctx.quarantine(path, f"{hname}: expected an object", "schema", zf.read(hname))
            samples = []
            for n in names:
                m = _SAMPLE_RE.match(n)
                if m:
                    samples.append((int(m.group(2)), _natural(m.group(1)), n))
            for _epoch, _key, n in sorted(samples):
                obj = self._entry(zf, n, ctx, path)
                if obj is _QUARANTINED:
                    continue
                if not isinstance(obj, dict):  # a `null` entry used to vanish here, neither counted nor kept
                    ctx.quarantine(path, f"{n}: expected a sample object", "schema", zf.read(n))
                    continue
                ctx.seen_ok()
                yield self._sample(header, obj, path)

    @staticmethod
    def _entry(zf: zipfile.ZipFile, name: str, ctx: ParseContext, path: Path) -> Any:
        """The entry's JSON, or _QUARANTINED when it could not be read (a JSON `null` is a value)."""
        try:
            raw = zf.read(name)
        except NotImplementedError as e:
            ctx.quarantine(path, f"{name}: unsupported zip compression ({e})", "io")
            return _QUARANTINED
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError, zlib.error) as e:
            ctx.quarantine(path, f"{name}: corrupt zip entry ({e})", "truncated")
            return _QUARANTINED
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            etype = "truncated" if raw.rstrip()[-1:] not in (b"}", b"]") else "json"
            ctx.quarantine(path, f"{name}: not valid JSON ({e})", etype, raw)
            return _QUARANTINED


class InspectJsonAdapter(_InspectBase):
    name = "inspect-json"
    extensions = (".json",)
    priority = 20
    description = "Inspect AI EvalLog .json files (version, status, eval, samples[])"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        s = head_bytes.lstrip()
        if s[:1] != b"{":
            return False
        keys = set(_HEAD_KEY_RE.findall(s))
        return b"eval" in keys and b'"version"' in s and b'"run_id"' in s and b'"task"' in s

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "no EvalLog `version`/`eval{run_id, task}` keys in the head"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        path = unit.primary
        log = load_json(path, ctx)
        if log is None:
            return
        if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
            ctx.quarantine(
                path, f"{path.name}: not an Inspect EvalLog (no `eval` object)", "schema", raw_of_obj(log)
            )
            return
        samples = log.get("samples")
        samples = [] if samples is None else samples
        if not isinstance(samples, list):  # the log is kept whole: none of it reaches the lab
            ctx.quarantine(path, f"{path.name}: `samples` is not a list", "schema", raw_of_obj(log))
            return
        ctx.seen_ok()
        for i, s in enumerate(samples):
            if not isinstance(s, dict):
                ctx.quarantine(path, f"samples[{i}]: expected an object", "schema", orjson.dumps(s), line=i)
                continue
            ctx.seen_ok()
            yield self._sample(log, s, path)
