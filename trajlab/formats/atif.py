"""Harbor ATIF trajectories (`agent/trajectory.json`, ATIF-v1.x) and Harbor trial folders.

A trial is `jobs/<job>/<trial>/{result.json, agent/trajectory.json, verifier/reward.txt}`. The
trajectory holds `steps[]` whose tool calls link to `observation.results[]` by `source_call_id`;
terminus-2 writes one terminal screen per step with no `source_call_id`, so a result without an id
goes to the step's calls by position (one screen for a batch of keystrokes goes to the last
command). The reward is not in the trajectory: it comes from `result.json` (`_harbor_trial`)
(`verifier_result.rewards.reward`) or `verifier/reward.txt`.

Linear-history runs split into `trajectory.cont-N.json` linked by `continued_trajectory_ref`; the
segments are merged and their `is_copied_context` prefixes dropped. Context summarization adds a
`source: system` step whose results carry `subagent_trajectory_ref`s to
`trajectory.summarization-N-{summary,questions,answers}.json`: those sub-agent steps are spliced in
after the step with their own `agent_id`. `final_metrics` are cumulative over the run (sub-agents
included), so the last segment's are the run totals.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
)
from ._harbor_trial import read_trial, result_only, terminus_task, trial_dir
from ._safe import BAD_SHAPE, as_dict, as_id, as_int, as_list, as_num, as_str, raw_of_obj, rollback

_ATIF_RE = re.compile(rb'"schema_version"\s*:\s*"ATIF-v\d')
_REF_RE = re.compile(rb'"trajectory_path"\s*:\s*"([^"\\]{1,300})"')
_HARBOR_RESULT_KEYS = (b'"trial_name"', b'"verifier_result"', b'"agent_info"', b'"task_name"')
_EXIT_MARKERS = (
    re.compile(r"\[exit code:\s*(-?\d+)\]\s*$"),
    re.compile(r"\[The command completed with exit code (-?\d+)\.\]\s*$"),
    re.compile(r"^Exit code:\s*(-?\d+)\b"),
)
_TIMEOUT_RE = re.compile(r"timed out after [\d.]+ seconds|Command timed out", re.IGNORECASE)
_MAX_DEPTH = 8
_TERMINAL_TOOLS = {"mark_task_complete", "task_complete", "finish", "submit"}


def _base_name(path: Path) -> str:
    name = path.name
    return name[: -len(".json")] if name.endswith(".json") else path.stem


def _cont_index(path: Path) -> int:
    m = re.search(r"\.cont-(\d+)\.json$", path.name)
    return int(m.group(1)) if m else 0


def _main_of(path: Path) -> Path | None:
    """For a continuation or summarization segment, the trajectory file it belongs to."""
    m = re.match(r"^(.*)\.(?:cont-\d+|summarization-\d+-[^.]+)\.json$", path.name)
    return path.with_name(m.group(1) + ".json") if m else None


def _exit_code(text: str | None) -> int | None:
    """An explicit exit-code marker at the end (or, R2E-style, the start) of an observation."""
    if not text:
        return None
    tail = text[-200:]
    if "xit code" in tail:
        for rx in _EXIT_MARKERS[:2]:
            m = rx.search(tail)
            if m:
                return int(m.group(1))
    if text.startswith("Exit code"):
        m = _EXIT_MARKERS[2].match(text)
        if m:
            return int(m.group(1))
    return None


class _Run:
    """State shared by the segments of one run: steps, anomalies and the token/cost sums."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.anomalies: list[str] = []
        self.link = CallLinker(self.steps, self.anomalies)
        self.cost = 0.0
        self.cost_seen = False
        self.models: list[str] = []
        self.efforts: list[str] = []
        self.task: str | None = None
        self.subagents: list[str] = []
        self.visited: set[Path] = set()
        self.embedded: dict[str, dict[str, Any]] = {}  # ATIF >= 1.7: sub-agents inside the document
        self.placed: set[str] = set()


class AtifAdapter(Adapter):
    name = "atif"
    runner = "atif"
    extensions = (".json",)
    priority = 15
    description = "Harbor ATIF trajectory.json (ATIF-v1.x) with trial result.json, continuations, sub-agents"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        if _ATIF_RE.search(head_bytes[:4096]) or _ATIF_RE.search(head_bytes):
            return True
        # A Harbor trial whose agent wrote no ATIF trajectory: the trial's result.json stands alone.
        return (
            path.name == "result.json"
            and head_bytes.lstrip()[:1] == b"{"
            and all(k in head_bytes for k in _HARBOR_RESULT_KEYS[:2])
            and not (path.parent / "agent" / "trajectory.json").exists()
        )

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "no `schema_version: ATIF-v*` in the head and not a Harbor trial result.json"

    def companions(self, path: Path) -> list[Path]:
        out: list[Path] = []
        if path.name == "result.json" and not _ATIF_RE.search(head_bytes_of(path)):
            reward = path.parent / "verifier" / "reward.txt"
            return [p for p in (reward, path.parent / "config.json") if p.is_file()]
        base = _base_name(path)
        d = path.parent
        main = _main_of(path)
        if main is not None and main.is_file():
            return []  # a segment of a run whose trajectory.json claims the run's files
        if ".cont-" not in path.name and ".summarization-" not in path.name:
            out += sorted(d.glob(f"{glob_escape(base)}.cont-*.json"), key=_cont_index)
            out += sorted(d.glob(f"{glob_escape(base)}.summarization-*.json"))
        for m in _REF_RE.finditer(head_bytes_of(path)):
            ref = _inside(d, m.group(1).decode("utf-8", "replace"))
            if ref is not None and ref.is_file() and ref not in out:
                out.append(ref)
        trial = trial_dir(path)
        if trial is not None:
            out.append(trial / "result.json")
            for p in (
                trial / "verifier" / "reward.txt",
                trial / "config.json",
                trial.parent / "config.json",
                trial.parent / "result.json",
            ):
                if p.is_file():
                    out.append(p)
            agent = path.parent
            # Native agent logs next to the ATIF conversion describe the same run.
            out += sorted(p for p in agent.glob("*.trajectory.json") if p != path)
            out += sorted(agent.glob("episode-*/debug.json"))
            out += sorted((agent / "sessions").rglob("*.jsonl")) if (agent / "sessions").is_dir() else []
        return list(dict.fromkeys(out))  # without repeats, in order

    # -- parsing --------------------------------------------------------------------------------

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        if unit.primary.name == "result.json" and not _ATIF_RE.search(head_bytes_of(unit.primary)):
            yield from result_only(unit, ctx)
            return
        doc = load_json(unit.primary, ctx)
        if doc is None:
            return
        if not _is_atif(doc):
            ctx.quarantine(
                unit.primary, "not an ATIF trajectory (no `steps` list)", "schema", raw_of_obj(doc)
            )
            return
        run = _Run()
        t: dict[str, Any] = {}
        agent = as_dict(doc.get("agent"))
        if ".cont-" in unit.primary.name:
            run.anomalies.append("continuation segment ingested without its trajectory.json")
        for sub in as_list(doc.get("subagent_trajectories")):
            sid = as_id(as_dict(sub).get("trajectory_id")) or as_id(as_dict(sub).get("session_id"))
            if sid and _is_atif(sub):
                run.embedded[sid] = sub
        segments = self._chain(unit, ctx, doc, run)
        last_metrics = None
        for i, (path, seg) in enumerate(segments):
            self._segment(path, seg, ctx, run, drop_copied=i > 0)
            if isinstance(seg.get("final_metrics"), dict):
                last_metrics = seg["final_metrics"]
        for sid, sub in run.embedded.items():
            if sid not in run.placed:  # embedded sub-agents no step refers to: after the main steps
                self._embedded(sid, sub, None, unit.primary, ctx, run)
        for s in run.link.unresolved():
            if (s.get("tool_name") or "") not in _TERMINAL_TOOLS:
                run.anomalies.append(f"call without result {s.get('call_id')}")
        t["harness"] = as_str(agent.get("name"))
        t["runner_version"] = as_str(agent.get("version"))
        t["model"] = as_str(agent.get("model_name")) or (run.models[0] if run.models else None)
        t["reasoning_effort"] = (
            run.efforts[0] if run.efforts else as_str(as_dict(agent.get("extra")).get("reasoning_effort"))
        )
        t["task"] = run.task
        t["final_answer"] = _final_answer(run.steps)
        if last_metrics:
            t["input_tokens"] = as_int(last_metrics.get("total_prompt_tokens"))
            t["output_tokens"] = as_int(last_metrics.get("total_completion_tokens"))
            t["cached_tokens"] = as_int(last_metrics.get("total_cached_tokens"))
            t["cost_usd"] = as_num(last_metrics.get("total_cost_usd"))
        if t.get("cost_usd") is None and run.cost_seen:
            t["cost_usd"] = round(run.cost, 8)
        meta: dict[str, Any] = {"schema_version": doc.get("schema_version")}
        if len(segments) > 1:
            meta["segments"] = [p.name for p, _ in segments]
        if run.subagents:
            meta["subagents"] = run.subagents
        if len(set(run.models)) > 1:
            meta["models"] = sorted(set(run.models))
        if doc.get("notes"):
            meta["notes"] = doc["notes"]
        trial = trial_dir(unit.primary)
        if trial is not None:
            read_trial(trial, unit, ctx, t, meta, run.anomalies)
        t["metadata"] = meta
        t["anomalies"] = run.anomalies
        native = doc.get("session_id") if isinstance(doc.get("session_id"), str) else None
        yield ParsedTrajectory(t, run.steps, native_key=native)

    def _chain(
        self, unit: SourceUnit, ctx: ParseContext, doc: dict[str, Any], run: _Run
    ) -> list[tuple[Path, dict[str, Any]]]:
        """The primary and its continuations, in order (linked ones first, then unlinked leftovers)."""
        segments: list[tuple[Path, dict[str, Any]]] = [(unit.primary, doc)]
        seen = {unit.primary.resolve()}
        conts = [p for p in unit.companions if ".cont-" in p.name and ".summarization-" not in p.name]
        cur = doc
        while isinstance(cur.get("continued_trajectory_ref"), str):
            ref = _inside(unit.primary.parent, cur["continued_trajectory_ref"])
            if ref is None:
                run.anomalies.append("continuation reference outside the trajectory folder: not read")
                break
            if ref in seen:
                run.anomalies.append(f"continuation loop at {ref.name}")
                break
            if not ref.is_file():
                run.anomalies.append(f"continuation {cur['continued_trajectory_ref']} missing")
                break
            nxt = load_json(ref, ctx)
            seen.add(ref)
            if nxt is None:
                break
            if not _is_atif(nxt):
                ctx.quarantine(ref, "continuation is not an ATIF trajectory", "schema", raw_of_obj(nxt))
                break
            segments.append((ref, nxt))
            cur = nxt
        for p in sorted(conts, key=_cont_index):
            if p.resolve() in seen:
                continue
            nxt = load_json(p, ctx)
            if nxt is None or not _is_atif(nxt):
                if nxt is not None:
                    ctx.quarantine(p, "continuation is not an ATIF trajectory", "schema", raw_of_obj(nxt))
                continue
            run.anomalies.append(f"continuation {p.name} not linked by continued_trajectory_ref")
            segments.append((p, nxt))
        return segments

    def _segment(
        self,
        path: Path,
        doc: dict[str, Any],
        ctx: ParseContext,
        run: _Run,
        drop_copied: bool,
        agent_id: str = "main",
        depth: int = 0,
        parent: dict[str, Any] | None = None,
        link: CallLinker | None = None,
    ) -> None:
        link = link or run.link
        seg = path.name if (path.name != "trajectory.json" and (drop_copied or depth)) else None
        for rec in json_records(path, ctx, doc["steps"]):
            st = rec.obj
            if not isinstance(st, dict):
                ctx.reject(rec, f"{path.name} step {rec.line}: expected an object")
                continue
            if st.get("is_copied_context") and (drop_copied or depth):
                continue
            base: dict[str, Any] = {"timestamp": st.get("timestamp"), "source_line": rec.line}
            if agent_id != "main":
                base.update(agent_id=agent_id, depth=depth, _parent=parent)
            if seg:
                base["metadata"] = {"segment": seg, "step_id": st.get("step_id")}
            n = len(run.steps)
            try:
                self._step(st, base, path, ctx, run, link, agent_id == "main")
            except BAD_SHAPE as e:
                rollback(run.steps, [link, run.link], n)
                ctx.reject(rec, f"{path.name} step {rec.line}: unexpected shape ({type(e).__name__}: {e})")

    def _step(
        self,
        st: dict[str, Any],
        base: dict[str, Any],
        path: Path,
        ctx: ParseContext,
        run: _Run,
        link: CallLinker,
        is_main: bool,
    ) -> None:
        src = st.get("source")
        text = as_text(st.get("message"))
        results = [r for r in as_list(as_dict(st.get("observation")).get("results")) if isinstance(r, dict)]
        if src in ("system", "user"):
            refs = [
                ref
                for r in results
                for ref in as_list(r.get("subagent_trajectory_ref"))
                if isinstance(ref, dict)
            ]
            kind = "user" if src == "user" else "system"
            if refs and ("summariz" in (text or "").lower() or any("summar" in str(r) for r in refs)):
                kind = "compaction"
            step = {**base, "kind": kind, "role": src, "text": text}
            run.steps.append(step)
            if src == "user" and is_main and run.task is None and text:
                run.task = terminus_task(text)
            self._subagents(refs, step, path, ctx, run, base)
            return
        # source == "agent" (or anything else a producer writes)
        model = as_str(st.get("model_name"))
        if model and model not in run.models:
            run.models.append(model)
        if as_str(st.get("reasoning_effort")):
            run.efforts.append(st["reasoning_effort"])
        metrics = as_dict(st.get("metrics"))
        tokens = {
            "input_tokens": as_int(metrics.get("prompt_tokens")),
            "output_tokens": as_int(metrics.get("completion_tokens")),
            "cached_tokens": as_int(metrics.get("cached_tokens")),
            "reasoning_tokens": as_int(as_dict(metrics.get("extra")).get("reasoning_tokens")),
        }
        cost = as_num(metrics.get("cost_usd"))
        if cost is not None:
            run.cost += cost
            run.cost_seen = True
        emitted: list[dict[str, Any]] = []
        agent_base = {**base, "role": "assistant", "model": model}
        if st.get("reasoning_content"):
            emitted.append({**agent_base, "kind": "reasoning", "text": as_text(st["reasoning_content"])})
            run.steps.append(emitted[-1])
        calls = [c for c in as_list(st.get("tool_calls")) if isinstance(c, dict)]
        if text or not calls:
            emitted.append({**agent_base, "kind": "assistant", "text": text or ""})
            run.steps.append(emitted[-1])
        call_steps = []
        for c in calls:
            cs = {
                **agent_base,
                "kind": "tool_call",
                "tool_name": as_str(c.get("function_name")),
                "arguments": c.get("arguments"),
                "call_id": as_id(c.get("tool_call_id")),
            }
            args = c.get("arguments")
            if isinstance(args, dict) and isinstance(args.get("keystrokes"), str):
                # terminus keystrokes end with the Enter key: the command is the text before it
                ni = normalize_call(
                    as_str(c.get("function_name")), {**args, "keystrokes": args["keystrokes"].rstrip("\n")}
                )
                cs.update(tool=ni.tool, programs=list(ni.programs), modality=ni.modality, command=ni.command)
            link.call(cs)
            call_steps.append(cs)
        emitted += call_steps
        if emitted and any(v is not None for v in tokens.values()):
            emitted[0].update({k: v for k, v in tokens.items() if v is not None})
        self._results(results, call_steps, base, path, ctx, run, link)

    def _results(
        self,
        results: list[dict[str, Any]],
        calls: list[dict[str, Any]],
        base: dict[str, Any],
        path: Path,
        ctx: ParseContext,
        run: _Run,
        link: CallLinker,
    ) -> None:
        linked = [r for r in results if as_id(r.get("source_call_id"))]
        loose = [r for r in results if not as_id(r.get("source_call_id"))]
        for r in linked:
            step = link.result(as_id(r.get("source_call_id")), orphan={**base}, **_result_fields(r))
            self._subagents(as_list(r.get("subagent_trajectory_ref")), step, path, ctx, run, base)
        if not loose:
            return
        open_calls = [c for c in calls if not c.get("_has_result")]
        if open_calls and len(loose) == len(open_calls):
            pairs = list(zip(open_calls, loose))
        elif open_calls:
            # One screen for a batch of keystrokes: it shows the state after the last command.
            target = next(
                (c for c in reversed(open_calls) if c.get("tool_name") not in _TERMINAL_TOOLS), None
            )
            target = target or open_calls[-1]
            text = "\n".join(filter(None, (as_text(r.get("content")) for r in loose)))
            pairs = [(target, {"content": text, "subagent_trajectory_ref": _refs(loose)})]
            for c in open_calls:
                if c is not target:
                    c["_has_result"] = True
                    c["metadata"] = {**(c.get("metadata") or {}), "output_shared_with": target.get("call_id")}
        else:
            # Results with no call: harness feedback (e.g. terminus parse errors) fed back as the next prompt.
            for r in loose:
                content = as_text(r.get("content"))
                if content is None and not as_list(r.get("subagent_trajectory_ref")):
                    continue
                step = {
                    **base,
                    "kind": "user",
                    "role": "environment",
                    "text": content,
                    "is_error": bool(
                        content and re.match(r"\s*(Previous response had parsing errors|ERROR)", content)
                    ),
                }
                run.steps.append(step)
                self._subagents(as_list(r.get("subagent_trajectory_ref")), step, path, ctx, run, base)
            return
        for c, r in pairs:
            fields = _result_fields(r)
            c["_has_result"] = True
            for k, v in fields.items():
                if v is not None:
                    c[k] = v
            self._subagents(as_list(r.get("subagent_trajectory_ref")), c, path, ctx, run, base)

    def _subagents(
        self,
        refs: list[Any],
        parent: dict[str, Any],
        path: Path,
        ctx: ParseContext,
        run: _Run,
        base: dict[str, Any],
    ) -> None:
        depth = (parent.get("depth") or 0) + 1
        for ref in refs:
            if not isinstance(ref, dict):
                continue
            rel = as_str(ref.get("trajectory_path"))
            emb = as_id(ref.get("trajectory_id")) or as_id(ref.get("session_id"))
            if emb in run.embedded and emb not in run.placed:
                self._embedded(emb, run.embedded[emb], parent, path, ctx, run)
                continue
            aid = as_id(ref.get("session_id")) or rel or "subagent"
            sub_path = _inside(path.parent, rel)
            if sub_path is None:
                run.anomalies.append(f"sub-agent trajectory {rel!r} outside the trajectory folder: not read")
                continue
            if not sub_path.is_file():
                run.anomalies.append(f"sub-agent trajectory {rel} missing")
                continue
            if sub_path in run.visited or depth > _MAX_DEPTH:
                run.anomalies.append(f"sub-agent trajectory {rel} already read (reference loop)")
                continue
            run.visited.add(sub_path)
            sub = load_json(sub_path, ctx)
            if sub is None:
                continue
            if not _is_atif(sub):
                ctx.quarantine(
                    sub_path, "sub-agent file is not an ATIF trajectory", "schema", raw_of_obj(sub)
                )
                continue
            name = as_str(as_dict(sub.get("agent")).get("name"))
            run.subagents.append(name or str(aid))
            sub_link = CallLinker(run.steps, run.anomalies)
            self._segment(sub_path, sub, ctx, run, True, str(aid), depth, parent, sub_link)
            for s in sub_link.unresolved():
                if (s.get("tool_name") or "") not in _TERMINAL_TOOLS:
                    run.anomalies.append(f"sub-agent {aid}: call without result {s.get('call_id')}")

    def _embedded(
        self,
        sid: str,
        sub: dict[str, Any],
        parent: dict[str, Any] | None,
        path: Path,
        ctx: ParseContext,
        run: _Run,
    ) -> None:
        """A sub-agent trajectory embedded in the document (`subagent_trajectories[]`, ATIF >= 1.7)."""
        run.placed.add(sid)
        run.subagents.append(as_str(as_dict(sub.get("agent")).get("name")) or sid)
        depth = ((parent or {}).get("depth") or 0) + 1
        sub_link = CallLinker(run.steps, run.anomalies)
        self._segment(path, sub, ctx, run, True, sid, depth, parent, sub_link)
        for s in sub_link.unresolved():
            if (s.get("tool_name") or "") not in _TERMINAL_TOOLS:
                run.anomalies.append(f"sub-agent {sid}: call without result {s.get('call_id')}")


def _is_atif(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("steps"), list)


def head_bytes_of(path: Path, n: int = 65_536) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def glob_escape(s: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", s)


def _refs(results: list[dict[str, Any]]) -> list[Any]:
    return [ref for r in results for ref in as_list(r.get("subagent_trajectory_ref"))]


def _inside(folder: Path, rel: str | None) -> Path | None:
    """`folder/rel` when it stays inside `folder`: a trajectory may not make ingest read other files."""
    if not rel:
        return None
    root = folder.resolve()
    p = (root / rel).resolve()
    return p if p.is_relative_to(root) else None


def _result_fields(r: dict[str, Any]) -> dict[str, Any]:
    text = as_text(r.get("content"))
    code = _exit_code(text)
    head = text[:2000] if text else ""
    timed_out = "imed out" in head.lower() and bool(_TIMEOUT_RE.search(head))
    return {
        "output": text,
        "exit_code": code,
        "is_error": (code not in (0, None)) or None,
        "timed_out": timed_out or None,
    }


def _final_answer(steps: list[dict[str, Any]]) -> str | None:
    for s in reversed(steps):
        if s.get("agent_id", "main") != "main":
            continue
        if s.get("kind") == "tool_call" and (s.get("tool_name") or "") in ("finish", "submit"):
            args = s.get("arguments")
            if isinstance(args, dict):
                for k in ("message", "final_thought", "answer", "result"):
                    if isinstance(args.get(k), str) and args[k]:
                        return args[k]
        if s.get("kind") == "assistant" and s.get("text"):
            return s["text"]
    return None
