"""Structure of a trajectory before and after its data edges: input checks, agents and parallel
batches, sequence / spawn / return / summary edges, poll chains, retries, and the answer step."""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from datetime import datetime, timedelta
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

from ..normalize import SUBMIT_SENTINELS
from ._model import STATE_GRADED_RUNNERS
from ._nodes import FINISH_TOOLS, PARALLEL_GAP_S, SUMMARY_TEXT_MAX, ran_nothing, ts
from ._stepio import StepIO
from ._tokens import basename, same_file, scan_long

if TYPE_CHECKING:
    from ._build import _Builder

_SECOND = timedelta(seconds=1)


def prepare(b: _Builder, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not steps:
        b.anomalies.append("trajectory has no steps")
    idx = [s.get("step_index") for s in steps]
    good = [s for s in steps if isinstance(s.get("step_index"), int)]
    if len(good) < len(steps):
        b.anomalies.append(f"{len(steps) - len(good)} steps without a step_index dropped")
    if any(x > y for x, y in itertools.pairwise(idx) if isinstance(x, int) and isinstance(y, int)):
        b.anomalies.append("steps out of order in the input: sorted by step_index")
        good.sort(key=lambda s: s["step_index"])
    out: list[dict[str, Any]] = []
    dups: list[int] = []
    for s in good:
        if out and out[-1]["step_index"] == s["step_index"]:
            dups.append(s["step_index"])
            continue
        out.append(s)
    if dups:
        b.anomalies.append(f"duplicate step_index {', '.join(map(str, dups[:5]))}: later copies dropped")
    if out:
        missing = out[-1]["step_index"] + 1 - len(out)
        if missing:
            b.anomalies.append(f"step_index gaps: {missing} indexes missing")
    back = []
    for p, s in itertools.pairwise(out):
        a, z = p.get("timestamp"), s.get("timestamp")
        if type(a) is float and type(z) is float and a - z < 0.999:
            continue  # POSIX seconds (as a build reads them) that go forward or back by under 1 s
        if _backwards(p, s):
            back.append(s["step_index"])
    if back:
        b.anomalies.append(f"timestamps go backwards at {len(back)} steps (first at step {back[0]})")
    return out


SEQUENTIAL_RUNNERS = frozenset(["terminal_bench"])
"""Runners whose commands are keystrokes sent to one terminal, each after the last finished (Terminal-Bench
1): no two are one response, however close their times (`clear`, `source a.sh` 0.3 s apart)."""
USAGE_ON_LAST_STEP = frozenset(["codex"])
"""Runners whose adapters put a model response's usage on its last step (Codex: the `token_count` event
that follows it), so usage cannot tell where a response starts: their batches come from timestamps."""


def structure(b: _Builder) -> None:
    """Agents, their spawning steps and parallel batches (before any edge is drawn)."""
    b.agent_steps = defaultdict(list)
    b.depth = {}
    b.parent = {}
    usage: dict[str, bool] = defaultdict(bool)
    usage_first = b.t.get("runner") not in USAGE_ON_LAST_STEP
    calls: dict[str, list[int]] = defaultdict(list)
    for s in b.steps:
        a = s.get("agent_id") or "main"
        i = s["step_index"]
        b.agent_steps[a].append(i)
        if a not in b.depth:
            b.depth[a] = int(s.get("depth") or 0)
            b.parent[a] = s.get("parent_step_index")
        if usage_first and s.get("input_tokens") is not None:
            usage[a] = True
        if s.get("kind") == "tool_call" and s.get("call_id"):
            calls[s["call_id"]].append(i)
    b.root = min(b.agent_steps, key=lambda a: (b.depth[a], b.agent_steps[a][0])) if b.agent_steps else "main"
    # Peers: agents of a multi-agent conversation (Who&When, AutoGen) at the root's depth that nobody
    # spawned. They take turns in one conversation with the root: one thread, not sub-agents.
    top = b.depth.get(b.root, 0)
    b.peers = {a for a in b.agent_steps if a != b.root and b.parent[a] is None and b.depth[a] <= top}
    b.main_thread = (
        sorted(i for a in (b.root, *b.peers) for i in b.agent_steps.get(a, ()))
        if b.peers
        else b.agent_steps.get(b.root, [])
    )
    _conversations(b)
    for cid, idxs in calls.items():
        if len(idxs) > 1:
            b.anomalies.append(f"duplicate call id {cid} at steps {', '.join(map(str, idxs[:5]))}")
    b.call_node = {cid: idxs[0] for cid, idxs in calls.items()}
    b.children = defaultdict(list)
    for a, p in b.parent.items():
        if p is not None and a != b.root:
            b.children[p].append(a)
    sequential = b.t.get("runner") in SEQUENTIAL_RUNNERS
    for a, idxs in b.agent_steps.items():
        prev: dict[str, Any] | None = None
        for i in idxs:
            s = b.by_idx[i]
            if sequential:
                break
            if prev is not None and s.get("kind") == "tool_call" and _same_response(prev, s, usage[a]):
                first = b.batch.get(prev["step_index"], prev["step_index"])
                b.batch[prev["step_index"]] = first
                b.batch[i] = first
            prev = s


_QUESTIONER = re.compile(r"summarization-\d+-questions$")


def _conversations(b: _Builder) -> None:
    """Who saw which output (`ProducerIndex.group` / `reports`) in a run with sub-agents: the root and
    its peers are one conversation, each sub-agent its own (it sees its prompt, not the history), and a
    sub-agent's last step reports to the conversation of its spawning step. A summarization agent
    (spawned by a compaction: Terminus-2's handoff) is given the history: it is in its parent's, except
    Terminus-2's questioner (`...summarization-N-questions`), the next agent, given only the task and
    the summary."""
    subs = sorted((a for a in b.agent_steps if a != b.root and a not in b.peers), key=lambda a: b.depth[a])
    if not subs:
        return
    group = {i: "" for a, idxs in b.agent_steps.items() if a not in subs for i in idxs}
    for a in subs:  # parents first
        p = b.parent.get(a)
        summarizer = (
            p is not None
            and p in b.by_idx
            and b.by_idx[p].get("kind") == "compaction"
            and _QUESTIONER.search(a) is None
        )
        g = group.get(p, "") if summarizer and p is not None else a
        for i in b.agent_steps[a]:
            group[i] = g
    b.ix.group = group
    for a in subs:
        p = b.parent.get(a)
        b.ix.reports[b.agent_steps[a][-1]] = group.get(p, "") if p is not None else ""


def poll_chains(b: _Builder) -> None:
    """A polled command's outcome is the last poll's: earlier pieces that were still running are ok,
    also when they said nothing yet (an empty poll of a running build)."""
    b.chain_end = {}  # command (and each poll) -> its last poll
    b.origin_of = {}  # poll -> the command it polls
    for origin, polls in b.polled.items():
        if origin in b.poll_of:
            continue  # a poll polled in turn: a piece of its own origin's chain
        pieces: set[int] = set()
        todo = list(polls)
        while todo:
            p = todo.pop()
            if p not in pieces:
                pieces.add(p)
                todo += b.polled.get(p, ())
        chain = [origin, *sorted(pieces)]
        last = chain[-1]
        for i in chain:
            b.chain_end[i] = last
        for i in polls:
            b.origin_of[i] = origin
        failed = b.nodes[last]["status"] in ("error", "timeout")
        for i in chain[:-1]:
            st = b.nodes[i]["status"]
            if st == "no-output" or (st == "error" and failed):
                b.nodes[i]["status"] = "ok"


def sequence_edges(b: _Builder) -> None:
    threads = [b.main_thread, *(v for a, v in b.agent_steps.items() if a != b.root and a not in b.peers)]
    for idxs in threads:
        units: list[list[int]] = []
        for i in idxs:
            batch = b.batch.get(i)
            if batch is not None and units and b.batch.get(units[-1][0]) == batch:
                units[-1].append(i)
            else:
                units.append([i])
        for u, v in itertools.pairwise(units):
            rule = (
                "next"
                if len(u) == 1 and len(v) == 1
                else "fan-out"
                if len(u) == 1
                else "fan-in"
                if len(v) == 1
                else "batch"
            )
            for x in u:
                for y in v:
                    b.edge(x, y, "sequence", None, rule)


def agent_edges(b: _Builder) -> None:
    for a, idxs in b.agent_steps.items():
        if a == b.root or a in b.peers:
            continue
        first, last = idxs[0], idxs[-1]
        parent = b.parent.get(a)
        summarizer = False
        if parent is not None and parent in b.nodes and parent < first:
            summarizer = b.nodes[parent]["kind"] == "compaction"
            b.edge(parent, first, "spawn", f"agent:{a}", "compaction-agent" if summarizer else "subagent")
            pagent = b.nodes[parent]["agent_id"]
        elif (
            parent is not None
            and parent in b.nodes
            and parent > last
            and b.nodes[parent]["kind"] == "compaction"
        ):
            pagent = b.nodes[parent]["agent_id"]
            idxs = b.agent_steps[pagent]
            k = bisect_left(idxs, first)  # the parent agent's last step before the sub-agent's first
            if k:
                b.edge(idxs[k - 1], first, "spawn", f"agent:{a}", "compaction-agent")
            b.edge(last, parent, "summary", f"agent:{a}", "compaction-agent")
            continue
        else:
            if parent is None:
                why = f"sub-agent {a} has no spawning step"
            elif parent not in b.nodes:
                why = f"sub-agent {a}: spawning step {parent} not found"
            elif b.nodes[parent]["agent_id"] == a:
                why = f"sub-agent {a}: names its own step {parent} as its spawning step"
            else:
                why = f"sub-agent {a}: spawning step {parent} comes after its first step {first}"
            cand = [j for j in range(first - 1, -1, -1) if j in b.nodes and b.nodes[j]["depth"] < b.depth[a]]
            spawn = next((j for j in cand if b.nodes[j]["tool"] == "subagent"), cand[0] if cand else None)
            if spawn is None:
                b.anomalies.append(why)
                continue
            b.anomalies.append(f"{why}; spawn inferred from step {spawn}")
            # the spawning call found no steps of its own when its node was made: they are these
            missing = f"sub-agent of step {spawn} has no steps (transcript missing)"
            if missing in b.anomalies:
                b.anomalies.remove(missing)
            b.parent[a] = spawn
            if b.ix.group is not None:
                b.ix.reports[last] = b.ix.group.get(spawn, "")
            b.edge(spawn, first, "spawn", f"agent:{a}", "spawn-inferred")
            pagent = b.nodes[spawn]["agent_id"]
        idxs = b.agent_steps.get(pagent, [])  # in step order: its first step after the sub-agent's last
        k = bisect_right(idxs, last)
        after = idxs[k] if k < len(idxs) else None
        if after is not None and summarizer:  # a summarization agent's report is what the run continues from
            b.edge(last, after, "summary", f"agent:{a}", "compaction-agent")
        elif after is not None:
            b.edge(last, after, "return", f"agent:{a}", "subagent-result")
        s = b.by_idx[last]
        if b.nodes[last]["kind"] == "text" and s.get("text"):
            b.consume(last, StepIO(value_text=s["text"]), value_rule="agent-result-value")
            _report_paths(b, last, s["text"])


def _report_paths(b: _Builder, last: int, text: str) -> None:
    """A sub-agent's report names what was made (`All test files are located in /app/test_dir/`): its
    explicit paths link to the steps that wrote the file or made the directory. Not to steps that only
    showed a path (a prompt's `/app` shows the working directory, which a report names in passing)."""
    for p in scan_long(text, SUMMARY_TEXT_MAX)[0]:
        if not p.startswith(("/", "~", "./")):
            continue
        p = p.rstrip("/") or p
        w = b.ix.find_writer(p, last)
        if w is not None:
            b.edge(w[0], last, "data", p, w[1])
            continue
        made = b.ix.find_latest(b.ix.made.get(basename(p)), p, last)
        if made is not None:
            b.edge(made, last, "data", p, "dir-contents")


def compaction_checks(b: _Builder) -> None:
    # per agent with a compaction, computed once: its step times and its input messages (a long run
    # compacts many times; each check then looks at floats and inputs, not at every later step's row)
    seen: dict[str, tuple[list[int], list[float | None], list[tuple[int, str]]]] = {}
    for i, n in b.nodes.items():
        if n["kind"] != "compaction":
            continue
        tc = ts(b.by_idx[i].get("timestamp"))
        agent = n["agent_id"]
        if agent not in seen:
            idxs = b.agent_steps[agent]
            seen[agent] = (
                idxs,
                [ts(b.by_idx[j].get("timestamp")) for j in idxs],
                [(j, (b.by_idx[j].get("text") or "").strip()) for j in idxs if b.nodes[j]["kind"] == "input"],
            )
        idxs, times, inputs = seen[agent]
        if tc is not None:
            limit = tc - 1.0
            early = sum(
                1 for t in itertools.islice(times, bisect_right(idxs, i), None) if t is not None and t < limit
            )
            if early:
                b.anomalies.append(
                    f"compaction at step {i} rewrites history: {early} later steps are dated before it"
                )
        before = {t for j, t in inputs if j < i}
        replayed = [j for j, t in inputs if j > i and len(t) > 20 and t in before]
        if replayed:
            b.anomalies.append(
                f"compaction at step {i} replays {len(replayed)} earlier messages (first at step {replayed[0]})"
            )


# Tools that look a path up rather than use it: `find DIR -name x.py` after a failed `Read DIR/x.py`
# names the same path but does not do again what failed (the next read does).
_LOOKUPS = frozenset({"find", "fd", "locate", "ls", "tree", "glob", "stat", "file", "test"})


_NO_SIMILAR_RETRY = frozenset(["browser"])
"""Tools whose calls look alike whatever they do (a browser's `{"action": "click", "target": ...}`): a
click on another link is no retry of a click that failed."""
_CLOSE_ENOUGH = 0.9
"""A similar command this close to the failed one is its retry; no later one of the window is scored."""


def find_retries(b: _Builder) -> dict[int, int]:
    """Failed action -> the later action that retried it (same tool and command, or same input)."""
    out: dict[int, int] = {}
    for idxs in b.agent_steps.values():
        actions = [i for i in idxs if b.nodes[i]["kind"] == "action"]
        same_cmd: dict[tuple[str, str], list[int]] | None = None  # built when first needed
        for k, a in enumerate(actions):
            na = b.nodes[a]
            if na["status"] not in ("error", "timeout"):
                continue
            la = b.origin_of.get(a, a)  # a failed poll stands for the command it polled
            sa = b.by_idx[la]
            ka = b.nodes[la]["tool"]
            ca = (sa.get("command") or sa.get("arguments") or "")[:300]
            pa = b.io[la].primary
            similar: int | None = None  # the most similar command of the window, if none is the same
            best = 0.5
            sm: SequenceMatcher[str] | None = None  # the failed command as seq1
            found: tuple[int, str] | None = None
            for c in actions[k + 1 : k + 11]:
                nb = b.nodes[c]
                if nb["tool"] in ("poll", "write_stdin") or not b.ix.ok_src(a, c):
                    continue
                pb = b.io[c].primary
                same_input = pa is not None and pb is not None and same_file(pa, pb)
                if nb["tool"] == ka and ka is not None:
                    cb = (b.by_idx[c].get("command") or b.by_idx[c].get("arguments") or "")[:300]
                    if same_input or ca == cb or _extends(ca, cb):
                        found = (c, "retry-same-tool")
                        break
                    if best >= _CLOSE_ENOUGH or ka in _NO_SIMILAR_RETRY:
                        continue  # a near-copy is found / clicks look alike: only the very same call counts
                    if sm is None:
                        sm = SequenceMatcher(None)
                        sm.set_seq1(ca)
                    sm.set_seq2(cb)  # (the orientation of the rule: which of two near ties wins)
                    # ratio() <= quick_ratio() <= real_quick_ratio(): the cheap bounds rule most out
                    if sm.real_quick_ratio() >= best and sm.quick_ratio() >= best:
                        r = sm.ratio()
                        if r >= best and (similar is None or r > best):
                            similar, best = c, r
                elif same_input and nb["modality"] == b.nodes[la]["modality"] and nb["tool"] not in _LOOKUPS:
                    found = (c, "retry-same-input")
                    break
            if found is None and similar is not None:
                found = (similar, "retry-same-tool")
            if found is None and ca and ka is not None and len(actions) > k + 11:
                # the very same command run again later (a reproduction rerun after a fix, 13 actions on)
                if same_cmd is None:
                    same_cmd = _commands(b, actions)
                for pos in same_cmd.get((ka, ca), ()):
                    if pos > k + 10 and b.ix.ok_src(a, actions[pos]):
                        found = (actions[pos], "retry-same-tool")
                        break
            if found is not None:
                b.edge(a, found[0], "retry", pa, found[1])
                out[a] = found[0]
    return out


def _commands(b: _Builder, actions: list[int]) -> dict[tuple[str, str], list[int]]:
    """(tool, command) -> positions in `actions` where it ran, in order."""
    out: dict[tuple[str, str], list[int]] = defaultdict(list)
    for pos, c in enumerate(actions):
        tool = b.nodes[c]["tool"]
        if tool is not None:
            s = b.by_idx[c]
            out[(tool, (s.get("command") or s.get("arguments") or "")[:300])].append(pos)
    return out


def _extends(failed: str, retry: str) -> bool:
    """The retry is the failed command with more words (`git push` -> `git push --set-upstream origin
    x`): a corrected command even when the added words make it less than 50% similar."""
    a = failed.split()
    if len(a) < 2 or a[0] != next(iter(retry.split(None, 1)), None):  # a blank retry extends nothing
        return False
    b = set(retry.split())
    return len(b) > len(set(a)) and b.issuperset(a)


def answer_node(b: _Builder) -> int | None:
    """The final answer: the root agent's (or a peer's) last message (or the final answer's message), or a
    later submit."""
    root = b.main_thread
    nodes, by_idx = b.nodes, b.by_idx
    final = (b.t.get("final_answer") or "").strip()
    texts: list[int] = []  # messages with text, bar a bare TERMINATE
    marked: list[int] = []  # messages and thoughts that write "FINAL ANSWER"
    for i in root:
        kind = nodes[i]["kind"]
        if kind == "text" or kind == "reasoning":
            t = by_idx[i].get("text") or ""
            if "FINAL ANSWER" in t:
                marked.append(i)
            if kind == "text" and t and not t.isspace() and not (len(t) < 64 and _CONTROL_ONLY.fullmatch(t)):
                texts.append(i)
    submits = [
        i
        for i in root
        if nodes[i]["kind"] == "action"
        and (nodes[i]["tool"] in FINISH_TOOLS or _submits(by_idx[i].get("command")))
    ]
    answer = None
    if final:
        head = final[:200]
        # the message that wrote "FINAL ANSWER: <it>" (Magentic-One's Orchestrator writes it as a thought)
        answer = next((i for i in reversed(marked) if _states_final(by_idx[i].get("text"), head)), None)
        if answer is None:  # Magentic-One: the line appended to the last record's output (a WebSurfer's)
            answer = next(
                (
                    i
                    for i in reversed(root)
                    if nodes[i]["kind"] == "action" and _states_final(by_idx[i].get("output"), head)
                ),
                None,
            )
        if answer is None:
            answer = next((i for i in reversed(texts) if head in (by_idx[i].get("text") or "")), None)
    if answer is None and texts:
        answer = texts[-1]
    if submits and (answer is None or submits[-1] > answer):
        return submits[-1]
    actions = [i for i in root if b.nodes[i]["kind"] == "action" and not ran_nothing(by_idx[i])]
    if answer is not None and actions and actions[-1] > answer:
        return None  # the run went on acting after its last message: it never answered
    if answer is not None and not final and _pending_code(b, by_idx[answer].get("text") or ""):
        return None  # its last message handed code to an executor that never ran it: cut off
    if answer is None and actions and b.t.get("runner") in STATE_GRADED_RUNNERS:
        return actions[-1]
    return answer


_CODE_FENCE = re.compile(r"```(?:python|py|sh|bash|shell)\b")


def _pending_code(b: _Builder, text: str) -> bool:
    """A message with a code block for the run's executor (`metadata.executes_step` marks its runs), the
    last of a run that was cut off before the executor ran it: a pending call, not an answer."""
    return (
        "```" in text
        and _CODE_FENCE.search(text) is not None
        and any(
            '"executes_step"' in (s.get("metadata") or "")
            for s in b.steps
            if isinstance(s.get("metadata"), str)
        )
    )


_CONTROL_ONLY = re.compile(r"\W*TERMINATE\W*")
"""A message that only ends the conversation (AutoGen's `TERMINATE`): no answer of its own."""


def _states_final(text: str | None, final: str) -> bool:
    """The text writes `FINAL ANSWER` (the marker the Who&When adapter reads the final answer from)
    followed by the answer."""
    if not text:
        return False
    k = text.rfind("FINAL ANSWER")
    return k >= 0 and final in text[k:]


def _submits(command: str | None) -> bool:
    if not command:
        return False
    head = command[:300]
    return any(x in head for x in SUBMIT_SENTINELS)


def _same_response(prev: dict[str, Any], s: dict[str, Any], usage: bool) -> bool:
    """Was call `s` issued in the same model response as the call `prev` right before it?"""
    if prev.get("kind") != "tool_call":
        return False
    line = prev.get("source_line")
    if line is not None and line == s.get("source_line"):
        # one record of the file holds both calls (an OpenAI message's `tool_calls`, an ATIF step): one
        # message, unless their times say otherwise (a continuation file whose line numbers start again)
        a, b = ts(prev.get("timestamp")), ts(s.get("timestamp"))
        if a is None or b is None or abs(b - a) < PARALLEL_GAP_S:
            return True
    if usage:  # runners that put usage on the first block of each response (Claude Code, ATIF), not Codex
        return s.get("input_tokens") is None
    a, b = ts(prev.get("timestamp")), ts(s.get("timestamp"))
    if a is None or b is None or not 0 <= b - a < PARALLEL_GAP_S:
        return False
    # close in time is not enough: a call issued after the one before it had finished, with records
    # between the two (its output came back), came from a later response (a quick ffmpeg, then tesseract
    # on its frames). The calls of one Codex response are adjacent lines, logged some milliseconds apart,
    # which can be longer than an instant poll took.
    dur = prev.get("duration_s")
    if isinstance(dur, (int, float)) and dur > 0 and a + dur <= b:
        la, lb = prev.get("source_line"), s.get("source_line")
        return la is not None and lb is not None and lb - la == 1
    return True


def _backwards(p: dict[str, Any], s: dict[str, Any]) -> bool:
    a, b = p.get("timestamp"), s.get("timestamp")
    if a is None or b is None or p.get("agent_id") != s.get("agent_id"):
        return False
    if isinstance(a, datetime) and isinstance(b, datetime):
        return b < a - _SECOND
    x, y = ts(a), ts(b)
    # in whole microseconds, so that POSIX seconds compare exactly as the datetimes they came from
    return x is not None and y is not None and round((x - y) * 1e6) > 1_000_000
