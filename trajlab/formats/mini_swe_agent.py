"""mini-swe-agent trajectories (`*.traj.json`): format v1, v2 and bare message lists.

- v1 (`trajectory_format: mini-swe-agent-1`, mini 1.x): `{info{exit_status, submission, model_stats,
  mini_version, config}, messages[{role, content}]}`. The action is the single ```bash (or
  ```mswea_bash_command) block of an assistant message; its observation is the next `user` message,
  `<returncode>N</returncode>` + `<output>...</output>` (long outputs as `<output_head>`,
  `<elided_chars>`, `<output_tail>`). When the agent submits, the last user message is the submission.
- v2 (`mini-swe-agent-1.1`, mini 2.x): assistant messages carry `extra{actions[{command,
  tool_call_id?}], response (litellm, with usage), cost, timestamp}`; observations are `user` (text
  models) or `tool` (`tool_call_id`) messages with `extra{raw_output, returncode, timestamp,
  exception_info}`; the last message has `role: exit` and `extra{exit_status, submission}`.
- Bare lists of `{role, content}` (test fixtures) are read like v1 without `info`.

There is no success signal: outcome `unknown` unless a SWE-bench report next to the run names the
instance (see `swe_agent.resolution`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    parse_ts,
)
from ._safe import BAD_SHAPE, as_dict, as_id, as_int, as_list, as_num, as_str, raw_of_obj, rollback
from ._scan import through_last
from .swe_agent import _instance_id, prediction, resolution, run_companions

_FORMAT_RE = re.compile(rb'"trajectory_format"\s*:\s*"mini-swe-agent')
_FOREIGN_RE = re.compile(rb'"schema_version"\s*:\s*"ATIF|"trajectory_format"\s*:\s*"(?!mini-swe-agent)')
_ACTION_RE = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE_RE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT_RE = re.compile(r"<output>\n?(.*?)</output>", re.DOTALL)
_HEAD_TAIL_RE = re.compile(
    r"<output_head>\n?(.*?)</output_head>.*?<output_tail>\n?(.*?)</output_tail>", re.DOTALL
)
_TIMEOUT_RE = re.compile(r"The last command <command>.*?</command> timed out and has been killed", re.DOTALL)
_FORMAT_ERROR_RE = re.compile(
    r"Please always provide EXACTLY ONE action|found \d+ actions|could not be parsed"
)
_SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")


class MiniSweAgentAdapter(Adapter):
    name = "mini-swe-agent"
    runner = "mini_swe_agent"
    extensions = (".json",)
    priority = 28
    description = (
        "mini-swe-agent *.traj.json (v1 mini-swe-agent-1, v2 mini-swe-agent-1.1, bare message lists)"
    )

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        if _FORMAT_RE.search(head_bytes):
            return True
        # `<instance_id>.traj.json` is mini's output name: a broken one is still mini's to quarantine
        return path.name.endswith(".traj.json") and not _FOREIGN_RE.search(head_bytes[:4096])

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "no trajectory_format mini-swe-agent-* and not a *.traj.json message list"

    def companions(self, path: Path) -> list[Path]:
        return run_companions(path, ("preds.json",))

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        doc = load_json(unit.primary, ctx)
        if doc is None:
            return
        if isinstance(doc, list):
            info: dict[str, Any] = {}
            messages: list[Any] = doc
            fmt = "bare"
        elif isinstance(doc, dict) and isinstance(doc.get("messages"), list):
            info = as_dict(doc.get("info"))
            messages = doc["messages"]
            fmt = as_str(doc.get("trajectory_format")) or "mini-swe-agent-1"
        else:
            ctx.quarantine(
                unit.primary, "not a mini-swe-agent trajectory (no messages list)", "schema", raw_of_obj(doc)
            )
            return
        st = _Conv()
        for rec in json_records(unit.primary, ctx, messages):
            m = rec.obj
            if not isinstance(m, dict) or "role" not in m:
                ctx.reject(rec, f"messages[{rec.line}]: expected a message with a role")
                continue
            n = len(st.steps)
            try:
                st.message(m, rec.line)
            except BAD_SHAPE as e:
                rollback(st.steps, [st.link], n)
                st.pending = [c for c in st.pending if c in st.steps]
                ctx.reject(rec, f"messages[{rec.line}]: unexpected shape ({type(e).__name__}: {e})")
        for s in st.link.unresolved():
            st.anomalies.append(f"call without result {s.get('call_id')}")
        cfg = as_dict(info.get("config"))
        stats = as_dict(info.get("model_stats"))
        iid = _instance_id(unit.primary)
        exit_status = as_str(info.get("exit_status")) or st.exit_status
        submission = as_str(info.get("submission"))
        t: dict[str, Any] = {
            "harness": "mini-swe-agent",
            "runner_version": as_str(info.get("mini_version")),
            "model": as_str(as_dict(cfg.get("model")).get("model_name")) or st.model,
            "task": st.task,
            "task_id": None if iid.startswith("last_mini_run") else iid,
            "final_answer": submission if submission is not None else st.submission,
            "exit_status": exit_status or None,
            "error": (as_str(info.get("traceback")) or None)
            if exit_status and exit_status not in ("Submitted",)
            else None,
            "anomalies": st.anomalies,
        }
        cost = as_num(stats.get("instance_cost"))
        if cost is not None and (cost or st.cost):
            t["cost_usd"] = cost
        elif st.cost:
            t["cost_usd"] = round(st.cost, 8)
        meta: dict[str, Any] = {"trajectory_format": fmt}
        if st.inferred and not info.get("exit_status"):
            meta["exit_status_from"] = "submit command followed by the submission message"
        if stats.get("api_calls") is not None:
            meta["api_calls"] = stats["api_calls"]
        for k in ("agent_type", "model_type", "environment_type"):
            if cfg.get(k):
                meta[k] = cfg[k]
        # shared run files may be claimed by a sibling unit: look them up from the path
        run_files = run_companions(unit.primary, ("preds.json",))
        pred = prediction(iid, run_files)
        if pred is not None:
            meta["has_prediction"] = bool(pred.get("model_patch"))
            if not t["model"]:
                t["model"] = as_str(pred.get("model_name_or_path"))
        t["metadata"] = meta
        resolved, src = resolution(iid, run_files)
        if resolved is not None:
            t["outcome"] = "success" if resolved else "failure"
            t["reward"] = 1.0 if resolved else 0.0
            t["outcome_source"] = src
        yield ParsedTrajectory(t, st.steps, native_key=iid)


class _Conv:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.anomalies: list[str] = []
        self.link = CallLinker(self.steps, self.anomalies)
        self.pending: list[dict[str, Any]] = []  # text-model calls waiting for their user observation
        self.task: str | None = None
        self.model: str | None = None
        self.exit_status: str | None = None
        self.submission: str | None = None
        self.cost = 0.0
        self.n = 0
        self.inferred = False

    def message(self, m: dict[str, Any], line: int | None) -> None:
        role = m.get("role")
        extra = as_dict(m.get("extra"))
        text = as_text(m.get("content"))
        base: dict[str, Any] = {"source_line": line}
        if extra.get("timestamp") is not None:
            base["timestamp"] = parse_ts(extra["timestamp"])
        if role == "system":
            self.steps.append({**base, "kind": "system", "role": "system", "text": text})
        elif role == "assistant":
            self._assistant(m, extra, text, base)
        elif role == "tool":
            self.link.result(as_id(m.get("tool_call_id")), orphan={**base}, **_observation(text, extra))
        elif role == "user":
            self._user(text, extra, base)
        elif role == "exit":
            self.exit_status = as_str(extra.get("exit_status")) or self.exit_status
            if as_str(extra.get("submission")) is not None:
                self.submission = extra["submission"]
            # the submit command's output became the exit message (no tool reply was written)
            open_submit = [c for c in self.link.unresolved() if _is_submit(c)]
            if open_submit:
                self.link.result(
                    open_submit[-1]["call_id"],
                    output=self.submission if self.submission is not None else text,
                )
                if open_submit[-1] in self.pending:
                    self.pending.remove(open_submit[-1])
        else:
            self.steps.append({**base, "kind": "system", "role": as_str(role) or "unknown", "text": text})

    def _assistant(
        self, m: dict[str, Any], extra: dict[str, Any], text: str | None, base: dict[str, Any]
    ) -> None:
        resp = as_dict(extra.get("response"))
        usage = as_dict(resp.get("usage"))
        model = as_str(resp.get("model"))
        if model:
            self.model = self.model or model
        self.cost += as_num(extra.get("cost")) or 0.0
        step = {**base, "kind": "assistant", "role": "assistant", "text": text or "", "model": model}
        for k, v in (
            ("input_tokens", as_int(usage.get("prompt_tokens"))),
            ("output_tokens", as_int(usage.get("completion_tokens"))),
            ("cached_tokens", as_int(as_dict(usage.get("prompt_tokens_details")).get("cached_tokens"))),
            (
                "reasoning_tokens",
                as_int(as_dict(usage.get("completion_tokens_details")).get("reasoning_tokens")),
            ),
        ):
            if v is not None:
                step[k] = v
        self.steps.append(step)
        actions = extra.get("actions")
        if isinstance(actions, list):
            cmds = [(a.get("command"), as_id(a.get("tool_call_id"))) for a in actions if isinstance(a, dict)]
        elif m.get("tool_calls"):
            cmds = []
            for tc in as_list(m["tool_calls"]):
                tc = as_dict(tc)
                args = parse_args(as_dict(tc.get("function")).get("arguments"))
                cmds.append((args.get("command") if isinstance(args, dict) else None, as_id(tc.get("id"))))
        else:
            body = text or ""
            found = [a.strip() for a in _ACTION_RE.findall(body, 0, through_last(body, "\n```"))]
            # mini executes only a reply with exactly one action; otherwise it answers with a format error
            cmds = [(found[0], None)] if len(found) == 1 else []
        for cmd, cid in cmds:
            if not isinstance(cmd, str):
                continue
            self.n += 1
            cs = {
                **base,
                "kind": "tool_call",
                "role": "assistant",
                "tool_name": "bash",
                "arguments": {"command": cmd},
                "call_id": cid or f"action-{self.n}",
            }
            self.link.call(cs)
            if not cid:
                self.pending.append(cs)

    def _user(self, text: str | None, extra: dict[str, Any], base: dict[str, Any]) -> None:
        if self.task is None:
            self.task = text
            self.steps.append({**base, "kind": "user", "role": "user", "text": text})
            return
        if self.pending:
            cs = self.pending.pop(0)
            obs = _observation(text, extra)
            if (
                obs.get("exit_code") is None
                and not obs.get("timed_out")
                and _is_submit(cs)
                and not self.pending
            ):
                # the Submitted exception's message (the submission) replaces the observation
                self.submission = text
                if self.exit_status is None:
                    self.exit_status, self.inferred = "Submitted", True
                obs["output"] = text
            self.link.result(cs["call_id"], **obs)
            return
        fmt_err = (
            bool(text and _FORMAT_ERROR_RE.search(text[:500])) or extra.get("interrupt_type") == "FormatError"
        )
        self.steps.append(
            {
                **base,
                "kind": "user",
                "role": "format_error" if fmt_err else "user",
                "text": text,
                "is_error": fmt_err or None,
            }
        )


def _is_submit(cs: dict[str, Any]) -> bool:
    cmd = (cs.get("arguments") or {}).get("command") or ""
    return any(mk in cmd for mk in _SUBMIT_MARKERS)


def _observation(text: str | None, extra: dict[str, Any]) -> dict[str, Any]:
    """Output, exit code and flags of an observation message (structured `extra` first, then the text)."""
    code = as_int(extra.get("returncode"))
    out = as_text(extra["raw_output"]) if extra.get("raw_output") is not None else None
    head = text[:2000] if text else ""
    timed_out = "timed out" in head and bool(_TIMEOUT_RE.search(head))
    exc = extra.get("exception_info")
    if exc and "timeout" in str(exc).lower():
        timed_out = True
    if text is not None and (code is None or out is None):
        m = _RETURNCODE_RE.search(text[:300])
        if m and code is None:
            code = int(m.group(1))
        if out is None:
            mo = _OUTPUT_RE.search(text, 0, through_last(text, "</output>"))
            if mo:
                out = mo.group(1)
            else:
                ht = _HEAD_TAIL_RE.search(text)
                out = f"{ht.group(1)}\n[...elided...]\n{ht.group(2)}" if ht else text
    return {
        "output": out,
        "exit_code": code,
        "is_error": (code not in (0, None)) or timed_out or bool(exc) or None,
        "timed_out": timed_out or None,
    }
