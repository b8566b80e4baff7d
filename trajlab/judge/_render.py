"""The compact text a judge reads: built from the DAG, fitted to a token budget, never silently cut.

Every step keeps its `#<step_index>` so answers can cite it. Erroring steps, the task, the final
answer and the DAG's decisive candidates stay verbatim (error outputs up to `error_max_chars`, beyond
that head and tail with the omitted count). Other steps are shortened in priority order: long outputs
become head + tail, then one-line summaries, then runs of low-priority steps collapse into a single
line saying how many steps and which tools were left out. Every omission is marked in the text. When
even that does not fit, the trajectory is split into windows judged separately; past `max_windows`
it is reported `unjudgeable: too long`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..redact import redact
from ._tokens import estimate_tokens
from ._view import TrajectoryView

ELLIPSIS = "[... {n:,} chars omitted by trajlab ...]"

# (head, tail) characters kept at each shortening level
_OUT_KEEP = {0: None, 1: (900, 500), 2: (220, 120)}
_TEXT_KEEP = {0: None, 1: (700, 300), 2: (200, 0)}
_CMD_KEEP = {0: (3000, 1000), 1: (1200, 400), 2: (300, 100)}
_P0_TEXT_MAX = (3000, 1000)
MODAL = frozenset({"audio", "video", "image", "web", "document"})


@dataclass
class RenderOptions:
    max_tokens: int = 20_000
    """Budget for the whole user message (header + steps)."""
    redact: bool = True
    error_max_chars: int = 6000
    max_windows: int = 6


@dataclass
class Window:
    index: int
    count: int
    first_step: int
    last_step: int
    text: str
    tokens: int
    step_indexes: set[int]


@dataclass
class Rendering:
    trajectory_id: str
    text: str
    tokens: int
    step_indexes: set[int]
    """Steps that appear (at any level of detail) in the rendering."""
    windows: list[Window] = field(default_factory=list)
    too_long: str | None = None
    raw_tokens: int = 0
    """Tokens of the full, unshortened trajectory (for the compression ratio)."""
    error_steps: list[int] = field(default_factory=list)
    errors_verbatim: list[int] = field(default_factory=list)
    collapsed_steps: int = 0
    shortened_steps: int = 0

    @property
    def windowed(self) -> bool:
        return len(self.windows) > 1


def _cut(text: str, keep: tuple[int, int] | None) -> str:
    if keep is None or not text:
        return text
    head, tail = keep
    if len(text) <= head + tail + 60:
        return text
    omitted = len(text) - head - tail
    parts = [text[:head].rstrip(), ELLIPSIS.format(n=omitted)]
    if tail:
        parts.append(text[-tail:].lstrip())
    return "\n".join(parts)


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) if text else ""


class _Renderer:
    def __init__(self, view: TrajectoryView, opts: RenderOptions):
        self.v = view
        self.o = opts
        self._clean_cache: dict[tuple[int, str], str] = {}
        self.final_idx = view.final_step_index()
        cands = [c.get("step_index") for c in view.candidates()[:3]]
        self.candidate_idx = {int(c) for c in cands if isinstance(c, int)}
        self.task_idx = next((int(s["step_index"]) for s in view.steps if s.get("kind") == "user"), None)
        failed = [int(s["step_index"]) for s in view.steps if view.is_failed(s)]
        self.failed = set(failed)
        near: set[int] = set()
        for i in failed:
            near |= {i - 1, i + 1}
        idxs = [int(s["step_index"]) for s in view.steps]
        tail = set(idxs[-4:])
        self.priority: dict[int, int] = {}
        for s in view.steps:
            self.priority[int(s["step_index"])] = self._priority(s, near, tail)

    def clean(self, idx: int, name: str, text: str | None) -> str:
        if not text:
            return ""
        key = (idx, name)
        if key not in self._clean_cache:
            self._clean_cache[key] = redact(text) if self.o.redact else text
        return self._clean_cache[key]

    def _priority(self, s: dict[str, Any], near: set[int], tail: set[int]) -> int:
        i = int(s["step_index"])
        if i in self.failed or i == self.final_idx or i == self.task_idx or i in self.candidate_idx:
            return 0
        node = self.v.nodes.get(i, {})
        kind = s.get("kind")
        if kind in ("tool_call", "tool_result"):
            modality = node.get("modality") or s.get("modality")
            if node.get("on_answer_path") or modality in MODAL or i in near or i in tail:
                return 1
            return 2
        if kind == "user" or i in near or i in tail:
            return 1
        return 3

    # -- one step ----------------------------------------------------------------------------------

    def head_line(self, s: dict[str, Any]) -> str:
        i = int(s["step_index"])
        node = self.v.nodes.get(i, {})
        kind = s.get("kind") or "step"
        bits = [f"#{i}", "call" if kind == "tool_call" else kind]
        agent = s.get("agent_id")
        if agent and agent != "main":
            bits.append(f"[agent {agent}]")
        if kind in ("tool_call", "tool_result"):
            name = s.get("tool") or s.get("tool_name") or "tool"
            if s.get("tool_name") and s.get("tool") and s["tool_name"] != s["tool"]:
                name = f"{s['tool_name']}:{s['tool']}"
            bits.append(name)
            info = [x for x in (node.get("modality") or s.get("modality"), node.get("branch")) if x]
            if info:
                bits.append("(" + ", ".join(info) + ")")
            status = self.v.status(s)
            if status != "ok":
                bits.append(status.upper())
            if s.get("exit_code") is not None:
                bits.append(f"exit={s['exit_code']}")
        flags = []
        if node.get("on_answer_path"):
            flags.append("answer-path")
        if node.get("is_dead_end"):
            flags.append("dead-end")
        if node.get("retry_of") is not None:
            flags.append(f"retry-of #{node['retry_of']}")
        if i == self.final_idx:
            flags.append("final answer")
        if flags:
            bits.append("{" + ", ".join(flags) + "}")
        return " ".join(bits)

    def render_step(self, s: dict[str, Any], level: int) -> str:
        i = int(s["step_index"])
        prio = self.priority[i]
        head = self.head_line(s)
        kind = s.get("kind")
        lines = [head]
        if kind in ("tool_call", "tool_result"):
            cmd = self.clean(i, "command", s.get("command") or s.get("arguments"))
            if cmd:
                lines.append(_indent("$ " + _cut(cmd, _CMD_KEEP[min(level, 2)])))
            for name, label in (("output", "output"), ("stderr", "stderr")):
                out = self.clean(i, name, s.get(name))
                if not out:
                    continue
                if i in self.failed:
                    keep = None
                    if len(out) > self.o.error_max_chars:
                        keep = (self.o.error_max_chars * 2 // 3, self.o.error_max_chars // 3)
                else:
                    keep = _OUT_KEEP[min(level, 2)]
                lines.append(f"  {label} ({len(out):,} chars):")
                lines.append(_indent(_cut(out, keep), "  | "))
            if kind == "tool_call" and not s.get("output") and not s.get("stderr"):
                lines.append("  (no output recorded)")
        else:
            text = self.clean(i, "text", s.get("text"))
            if text:
                keep = _P0_TEXT_MAX if prio == 0 else _TEXT_KEEP[min(level, 2)]
                lines.append(_indent(_cut(text, keep)))
        return "\n".join(lines)

    def raw_tokens(self, s: dict[str, Any]) -> int:
        """Tokens of everything the step holds, as recorded (the baseline the compression is measured on)."""
        total = estimate_tokens(self.head_line(s))
        for name in ("text", "command", "arguments", "output", "stderr"):
            if s.get(name) and not (name == "arguments" and s.get("command")):
                total += estimate_tokens(str(s[name])) + 1
        return total

    # -- header ------------------------------------------------------------------------------------

    def header(self) -> str:
        t = self.v.trajectory
        facts = []
        for k in ("runner", "model", "harness", "benchmark", "domain", "difficulty"):
            if t.get(k):
                facts.append(f"{k}={t[k]}")
        outcome = t.get("outcome") or "unknown"
        src = f" (from {t['outcome_source']})" if t.get("outcome_source") else ""
        lines = ["RUN " + " ".join(facts), f"Outcome: {outcome}{src}"]
        if t.get("exit_status"):
            lines.append(f"Runner exit status: {t['exit_status']}")
        if t.get("error"):
            lines.append("Runner error: " + _cut(self.clean(-1, "error", t["error"]), (600, 200)))
        task = self.clean(-1, "task", t.get("task"))
        lines.append("Task given to the agent:")
        lines.append(_indent(_cut(task, _P0_TEXT_MAX)) if task else "  (not recorded)")
        fa = self.clean(-1, "final_answer", t.get("final_answer"))
        lines.append("Final answer of the agent: " + (_cut(fa, (1200, 300)) if fa else "(none recorded)"))
        n_calls = sum(1 for s in self.v.steps if s.get("kind") == "tool_call")
        failed = sorted(self.failed)
        err = f"; failed steps: {', '.join(f'#{i}' for i in failed[:30])}" if failed else "; no failed steps"
        if len(failed) > 30:
            err += f" (+{len(failed) - 30} more)"
        lines.append(f"Steps: {len(self.v.steps)} ({n_calls} tool calls{err})")
        lines += self._dag_lines()
        text = "\n".join(lines)
        return redact(text) if self.o.redact else text  # defence in depth: labels and reasons quote commands

    def _dag_lines(self) -> list[str]:
        v = self.v
        if v.dag_source == "steps" or not v.nodes:
            return ["Step graph: not available (statuses come from exit codes and error flags)."]
        branches: dict[str, list[int]] = {}
        for i, n in sorted(v.nodes.items()):
            if n.get("branch"):
                branches.setdefault(str(n["branch"]), []).append(i)
        out = []
        if branches:
            desc = "; ".join(
                f"{b}: " + ", ".join(f"#{i}" for i in idx[:12]) + (" ..." if len(idx) > 12 else "")
                for b, idx in branches.items()
            )
            out.append(f"Modality branches: {desc}")
        else:
            out.append("Modality branches: none (no audio/video/image/web steps)")
        m = v.metrics or {}
        if m.get("answer_branches") is not None:
            out.append("Branches that fed the answer: " + (", ".join(m["answer_branches"]) or "none"))
        dead = [i for i, n in sorted(v.nodes.items()) if n.get("is_dead_end")]
        if dead:
            out.append("Dead ends (output never used): " + ", ".join(f"#{i}" for i in dead[:20]))
        cands = v.candidates()[:3]
        if cands:
            out.append("Automatic signals from the step graph (heuristics, may be wrong):")
            for c in cands:
                where = f"#{c['step_index']}" if c.get("step_index") is not None else "(missing step)"
                reason = self.clean(-2, f"cand{where}", str(c.get("reason") or c.get("signal") or ""))
                out.append(f"  - {where}: {_cut(reason, (300, 0))}".rstrip())
        return out


def _collapse_line(steps: list[dict[str, Any]], view: TrajectoryView) -> str:
    first, last = int(steps[0]["step_index"]), int(steps[-1]["step_index"])
    tools = Counter(str(s.get("tool") or s.get("tool_name")) for s in steps if s.get("kind") == "tool_call")
    kinds = Counter(str(s.get("kind")) for s in steps if s.get("kind") != "tool_call")
    bits = []
    if tools:
        bits.append("tool calls: " + ", ".join(f"{t} x{n}" for t, n in tools.most_common(6)))
        if len(tools) > 6:
            bits[-1] += ", ..."
    if kinds:
        bits.append(", ".join(f"{k} x{n}" for k, n in kinds.most_common()))
    rng = f"#{first}" if first == last else f"#{first}-#{last}"
    return f"{rng}: {len(steps)} step(s) not shown to save space ({'; '.join(bits)}; all ok)"


# Shortening schedule: (priority, level) in the order they are applied.
_SCHEDULE = [(3, 1), (2, 1), (1, 1), (3, 2), (2, 2), (3, 3), (2, 3), (1, 2)]


def _fit(
    r: _Renderer, steps: list[dict[str, Any]], budget: int, header_tokens: int
) -> tuple[dict[int, int], int]:
    """Levels per step that fit `budget` tokens if possible (lowest priority, largest first)."""
    levels = {int(s["step_index"]): 0 for s in steps}
    # +1 per step for the blank line that separates steps in the joined text
    cost = {
        i: estimate_tokens(r.render_step(s, 0)) + 1 for s, i in ((s, int(s["step_index"])) for s in steps)
    }
    by_idx = {int(s["step_index"]): s for s in steps}
    total = header_tokens + sum(cost.values())
    if total <= budget:
        return levels, total
    for prio, level in _SCHEDULE:
        cands = [i for i in levels if r.priority[i] == prio and levels[i] < level]
        cands.sort(key=lambda i: -cost[i])
        for i in cands:
            new = (
                4 if level == 3 else estimate_tokens(r.render_step(by_idx[i], level)) + 1
            )  # 4 ~ a collapsed share
            total += new - cost[i]
            cost[i], levels[i] = new, level
            if total <= budget:
                return levels, total
    return levels, total


def _body(r: _Renderer, steps: list[dict[str, Any]], levels: dict[int, int]) -> tuple[str, int, int]:
    out: list[str] = []
    run: list[dict[str, Any]] = []
    collapsed = shortened = 0
    for s in steps:
        i = int(s["step_index"])
        if levels[i] >= 3:
            run.append(s)
            collapsed += 1
            continue
        if run:
            out.append(_collapse_line(run, r.v))
            run = []
        if levels[i] > 0:
            shortened += 1
        out.append(r.render_step(s, levels[i]))
    if run:
        out.append(_collapse_line(run, r.v))
    return "\n\n".join(out), collapsed, shortened


def render_trajectory(view: TrajectoryView, opts: RenderOptions | None = None) -> Rendering:
    """Render a trajectory for a judge within `opts.max_tokens` (windows when it cannot fit)."""
    o = opts or RenderOptions()
    r = _Renderer(view, o)
    steps = view.steps
    header = r.header()
    raw = estimate_tokens(header) + sum(r.raw_tokens(s) for s in steps)
    errors = sorted(r.failed)
    rend = Rendering(view.trajectory_id, "", 0, set(), raw_tokens=raw, error_steps=errors)
    if not steps:
        rend.too_long = None
        rend.text = header + "\n\n(no steps recorded)"
        rend.tokens = estimate_tokens(rend.text)
        return rend
    fitted = _fit_text(r, steps, header, o.max_tokens)
    if fitted is not None:
        rend.text, rend.collapsed_steps, rend.shortened_steps = fitted
        rend.tokens = estimate_tokens(rend.text)
        rend.step_indexes = {int(s["step_index"]) for s in steps}
        rend.errors_verbatim = [i for i in errors if _verbatim(r, view, i, rend.text)]
        return rend
    return _windowed(r, view, o, header, rend)


def _fit_text(
    r: _Renderer, steps: list[dict[str, Any]], header: str, max_tokens: int
) -> tuple[str, int, int] | None:
    """Header + steps within `max_tokens`, or None. The per-step estimate can drift from the joined
    text (collapsed runs cost a line each), so a result that overshoots is refitted tighter."""
    htok = estimate_tokens(header) + 8
    budget = max_tokens
    for _ in range(6):
        levels, total = _fit(r, steps, budget, htok)
        if total > budget:
            return None
        body, collapsed, shortened = _body(r, steps, levels)
        text = header + "\n\nSTEPS\n\n" + body
        over = estimate_tokens(text) - max_tokens
        if over <= 0:
            return text, collapsed, shortened
        budget -= int(over * 1.2) + 16
    return None


def _verbatim(r: _Renderer, view: TrajectoryView, i: int, text: str) -> bool:
    s = next(s for s in view.steps if int(s["step_index"]) == i)
    return all(_indent(r.clean(i, n, s.get(n)), "  | ") in text for n in ("output", "stderr"))


def _windowed(
    r: _Renderer, view: TrajectoryView, o: RenderOptions, header: str, rend: Rendering
) -> Rendering:
    steps = view.steps
    # Size of each step at its most compact allowed level decides where windows are cut.
    min_level = {0: 0, 1: 2, 2: 3, 3: 3}
    win_header_extra = 60
    budget = o.max_tokens - estimate_tokens(header) - win_header_extra
    sizes = []
    for s in steps:
        lvl = min_level[r.priority[int(s["step_index"])]]
        sizes.append(4 if lvl == 3 else estimate_tokens(r.render_step(s, lvl)))
    if budget <= 0 or max(sizes) > budget:
        big = max(range(len(steps)), key=lambda k: sizes[k])
        rend.too_long = (
            f"too long: step #{steps[big]['step_index']} alone needs ~{sizes[big]:,} tokens "
            f"(budget {o.max_tokens:,})"
        )
        rend.tokens = rend.raw_tokens
        return rend
    groups: list[list[dict[str, Any]]] = [[]]
    acc = 0
    for s, size in zip(steps, sizes):
        if groups[-1] and acc + size > budget * 0.85:
            groups.append([])
            acc = 0
        groups[-1].append(s)
        acc += size
    if len(groups) == 1 and len(steps) > 1:  # it did not fit whole: at least two windows
        half = len(steps) // 2
        groups = [steps[:half], steps[half:]]
    if len(groups) > o.max_windows:
        rend.too_long = (
            f"too long: ~{rend.raw_tokens:,} tokens would need {len(groups)} windows of "
            f"{o.max_tokens:,} tokens (max {o.max_windows}; raise --max-prompt-tokens)"
        )
        rend.tokens = rend.raw_tokens
        return rend
    n = len(groups)
    for k, g in enumerate(groups):
        first, last = int(g[0]["step_index"]), int(g[-1]["step_index"])
        wh = (
            f"{header}\n\nWINDOW {k + 1} of {n}: steps #{first}-#{last} of this run. The other windows are "
            "judged separately; judge only what this window shows."
        )
        fitted = _fit_text(r, g, wh, o.max_tokens)
        if fitted is None:
            rend.too_long = f"too long: window {k + 1} of {n} cannot be fitted into {o.max_tokens:,} tokens"
            rend.windows = []
            rend.tokens = rend.raw_tokens
            return rend
        text, col, short = fitted
        rend.windows.append(
            Window(k, n, first, last, text, estimate_tokens(text), {int(s["step_index"]) for s in g})
        )
        rend.collapsed_steps += col
        rend.shortened_steps += short
    rend.text = "\n\n".join(w.text for w in rend.windows)
    rend.tokens = sum(w.tokens for w in rend.windows)
    rend.step_indexes = {int(s["step_index"]) for s in steps}
    rend.errors_verbatim = [i for i in rend.error_steps if _verbatim(r, view, i, rend.text)]
    return rend
