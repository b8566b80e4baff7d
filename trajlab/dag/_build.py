"""Build one trajectory's step DAG from its step rows: nodes, typed edges and anomalies.

`build_dag(trajectory, steps)` is pure and runs in two passes over the steps in step order:

1. nodes, statuses and what every tool call reads and writes (`_stepio`), plus the *demand*: the
   values, paths and URLs some step later types in or reads;
2. edges: a consumer is linked to the latest earlier producer of each artifact it uses. Outputs are
   searched only for demanded tokens (substring search), which keeps the cost per step small.

Every edge points from an earlier step to a later one, so the graph is acyclic by construction (and
checked). The producer index and its latest-producer lookups live in `_index`; metrics and candidates
come from `_analyze`. docs/dag.md documents each rule.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import ahocorasick_rs
import orjson

from ._analyze import analyze
from ._index import OutputPatterns, ProducerIndex, WrittenCode
from ._model import NODE_KINDS, StepDag
from ._nodes import (
    EXIT_STATUS_RUNNERS,
    LAST_LINE_MAX,
    NO_RESULT_TOOLS,
    SUMMARY_TEXT_MAX,
    UBIQUITY,
    VALUE_TEXT_MAX,
    clean_label,
    modality,
    name_of,
    node_status,
    polls_background,
    records_the_session,
)
from ._stepio import StepIO, step_io
from ._structure import (
    agent_edges,
    answer_node,
    compaction_checks,
    find_retries,
    poll_chains,
    prepare,
    sequence_edges,
    structure,
)
from ._tokens import (
    basename,
    clip,
    code_io,
    dirname,
    ext_of,
    grouped,
    has_glob,
    has_grouped,
    norm_path,
    pattern_matches,
    pieces_of,
    same_file,
    scan_long,
    shows_path,
    value_use,
    values_of,
)

_MAX_ARTIFACTS = 50
_BACKGROUND = "Command running in background with ID: "
_PROGRAM_OUTPUTS = frozenset(
    [
        "ffmpeg-output",
        "whisper-output",
        "tesseract-output",
        "output-flag",
        "download",
        "convert-output",
        "archive",
        "code-write",
        "copy-dest",
        "clone",
        "recording",
        "apply-patch",
    ]
)
"""Writes a program makes itself, which a failed command did not make (the shell's own redirects, `tee`,
`mkdir` and `touch` stay: they ran before or beside the failing program)."""
_EDIT_READS = 32
"""Earlier reads of a file searched for the one that showed an edit's old text."""


class _Builder:
    # Set by `_structure.structure` (first thing in `run`) and `_structure.poll_chains` (chain_end,
    # origin_of: after pass 2). Declared for the type checker only: no class attributes are created.
    agent_steps: defaultdict[str, list[int]]  # agent -> its steps, in step order
    depth: dict[str, int]  # agent -> its depth
    parent: dict[str, int | None]  # agent -> the step that spawned it
    root: str  # the root agent
    peers: set[str]  # agents that take turns with the root in one conversation
    main_thread: list[int]  # the steps of the root and its peers, in step order
    call_node: dict[str, int]  # call id -> its (first) tool call step
    children: defaultdict[int, list[str]]  # spawning step -> the agents it spawned
    chain_end: dict[int, int]  # command (and each poll) -> its last poll
    origin_of: dict[int, int]  # poll -> the command it polls

    def __init__(self, trajectory: dict[str, Any], steps: list[dict[str, Any]]):
        self.t = trajectory
        self.tid = trajectory.get("trajectory_id") or (steps[0].get("trajectory_id") if steps else "") or ""
        self.anomalies: list[str] = []
        self.steps = prepare(self, steps)
        self.by_idx = {s["step_index"]: s for s in self.steps}
        self.nodes: dict[int, dict[str, Any]] = {}
        self.edges: dict[tuple[int, int, str], tuple[str | None, str]] = {}
        self.out_types: dict[int, set[str]] = defaultdict(set)
        self.batch: dict[int, int] = {}
        self.ix = ProducerIndex(self.batch)
        self.io: dict[int, StepIO] = {}
        self.produces: dict[int, dict[str, None]] = defaultdict(dict)
        self.consumes: dict[int, dict[str, None]] = defaultdict(dict)
        self.deferred: dict[int, str] = {}  # sub-agent's last step -> the spawning call's output
        self.deferred_spawns: set[int] = set()  # spawning calls whose output is revealed by the sub-agent
        self.polled: defaultdict[int, list[int]] = defaultdict(list)  # running command -> its polls, in order
        self.background: dict[str, int] = {}  # background task id -> the command that started it
        self.poll_of: dict[int, int] = {}  # each poll -> the command it polls
        self.author_of: dict[int, int] = {}  # an execution -> the earlier step that wrote its code
        self.start: str | None = None  # the run's starting directory (`start_cwd`)
        self.echoes: defaultdict[str, set[int]] = defaultdict(set)  # value -> steps that were given it
        self.exit_logged: bool = trajectory.get("runner") in EXIT_STATUS_RUNNERS

    # -- edges --------------------------------------------------------------------------------------

    def edge(self, src: int, dst: int, typ: str, artifact: str | None, rule: str) -> None:
        if src == dst or src not in self.nodes or dst not in self.nodes:
            return
        if src > dst:
            raise AssertionError(f"edge {src}->{dst} ({typ}/{rule}) points backwards")
        key = (src, dst, typ)
        if key not in self.edges:
            self.edges[key] = (artifact, rule)
            self.out_types[src].add(typ)
            if artifact and typ in ("data", "answer", "summary"):
                if len(self.produces[src]) < _MAX_ARTIFACTS:
                    self.produces[src][artifact] = None
                if len(self.consumes[dst]) < _MAX_ARTIFACTS:
                    self.consumes[dst][artifact] = None

    # -- pass 1: nodes, reads/writes, demand -------------------------------------------------------

    def run(self) -> StepDag:
        structure(self)
        cwd: dict[str, str | None] = {}
        self.start = start = start_cwd(self.t)
        code = WrittenCode()
        opened: dict[str, str | None] = {}
        for s in self.steps:
            self._node(s, cwd, start, code, opened)
        answer = answer_node(self)
        self._demand(answer)
        for s in self.steps:
            self._link(s)
        poll_chains(self)
        sequence_edges(self)
        agent_edges(self)
        compaction_checks(self)
        retries = find_retries(self)
        return analyze(self, answer, retries)

    def _node(
        self,
        s: dict[str, Any],
        cwd: dict[str, str | None],
        start: str | None,
        code: WrittenCode,
        opened: dict[str, str | None],
    ) -> None:
        i = s["step_index"]
        kind = s.get("kind") or "system"
        nk = NODE_KINDS.get(kind, "input")
        agent = s.get("agent_id") or "main"
        tool = s.get("tool") or (s.get("tool_name") or "").lower() or None
        node = {
            "trajectory_id": self.tid,
            "node_id": i,
            "step_index": i,
            "agent_id": agent,
            "kind": nk,
            "label": None,
            "tool": tool if nk in ("action", "result") else None,
            "modality": "text",
            "status": node_status(s, self.exit_logged),
            "layer": 0,
            "branch": None,
            "on_answer_path": False,
            "is_dead_end": False,
            "retry_of": None,
            "produces": [],
            "consumes": [],
            "depth": int(s.get("depth") or 0),
            "parallel_batch": self.batch.get(i),
        }
        self.nodes[i] = node
        if nk == "action":
            io = step_io(s, cwd.get(agent, start), opened.get(agent))
            cwd[agent] = io.cwd
            out = s.get("output") or ""
            k = out.rfind("(Open file: ", len(out) - 400)
            if k >= 0 and out.find(")", k) > 0:  # SWE-agent's status line names the open file
                f = out[k + 12 : out.find(")", k)].strip()
                opened[agent] = f if f and f != "n/a" else None
            elif out.startswith("[File: "):  # SWE-agent's editor names the open file first
                opened[agent] = (
                    out[7 : out.find(" (", 7) if " (" in out[:400] else out.find("]")].strip() or io.open_file
                )
            else:
                opened[agent] = io.open_file
            for script in io.scripts:
                if io.shared:
                    io = io.unshared()
                body = io.written_code.get(script) or code.find(script)
                if body:
                    written, read, urls = code_io(body)
                    io.produced += [(norm_path(w, io.cwd), "code-write") for w in written]
                    io.consumed += [norm_path(r, io.cwd) for r in read]
                    io.urls += urls
            if (
                node["status"] in ("error", "timeout")
                and io.produced
                and tool in ("edit", "write", "apply_patch")
            ):
                # an editor tool that failed ("String to replace not found", a refused SWE-agent edit)
                # changed nothing: later readers do not depend on it
                if io.shared:
                    io = io.unshared()
                io.produced = []
                io.written_code = {}
            code.update(io.written_code)
            self.io[i] = io
            node["label"] = clean_label(
                s.get("command") or (io.value_text if io.value_text.startswith(name_of(s)) else None)
            ) or clean_label(f"{s.get('tool_name') or tool or 'call'} {io.primary or ''}".strip())
            node["modality"] = modality(s, io, tool)
            if (
                s.get("output") is None
                and s.get("exit_code") is None
                and not s.get("is_error")
                and not s.get("timed_out")
                and s.get("duration_s") is None
                and tool not in NO_RESULT_TOOLS
                and not records_the_session(s)
            ):
                self.anomalies.append(f"call without result at step {i} (call id {s.get('call_id')})")
            if tool == "subagent":
                kids = [a for a in self.children.get(i, ()) if self.agent_steps[a][0] > i]
                if kids:
                    self.deferred[max(self.agent_steps[a][-1] for a in kids)] = s.get("output") or ""
                    self.deferred_spawns.add(i)
                else:
                    self.anomalies.append(f"sub-agent of step {i} has no steps (transcript missing)")
        elif nk == "result":
            node["label"] = clean_label(s.get("output")) or "(orphan result)"
            node["modality"] = s.get("modality") or "compute"
        else:
            node["label"] = clean_label(s.get("text")) or f"({kind})"
            if nk == "compaction" and not (s.get("text") or "").strip():
                self.anomalies.append(f"compaction at step {i} has no summary text")

    def _demand(self, answer: int | None) -> None:
        """What later steps use: only these tokens are searched for in earlier outputs."""
        values: dict[str, int] = {}
        paths: dict[str, int] = {}
        urls: dict[str, int] = {}
        self.compaction_io: dict[int, StepIO] = {}

        def want(d: dict[str, int], key: str, i: int) -> None:
            if d.get(key, -1) < i:
                d[key] = i

        # basename -> {path: its first writer}: a path written again and again is looked at once
        first_write: dict[str, dict[str, int]] = defaultdict(dict)
        patterns: dict[str, int] = {}  # pattern -> first producer
        index = OutputPatterns()
        for i, io in self.io.items():
            for p, _ in io.produced:
                if has_glob(p) or "%" in p:
                    patterns.setdefault(p, i)
                    index.add(p)
                else:
                    first_write[basename(p)].setdefault(p, i)

        def written_before(p: str, i: int) -> bool:
            """A path written before step i is linked to its writer: no need to look for it in outputs."""
            for q, j in first_write.get(basename(p), {}).items():
                if j < i and same_file(q, p):
                    return True
            tail = p[-3:]
            for q in index.for_path(p) if patterns else ():
                j = patterns[q]
                if j < i and (q.endswith(tail) or "*" in q[-6:]) and pattern_matches(q, p):
                    return True
            return False

        for i, io in self.io.items():
            if io.value_text:
                for v in values_of(io.value_text[:VALUE_TEXT_MAX]):
                    want(values, v, i)
            for p in (*io.consumed, *io.edits, *io.scripts):
                if not has_glob(p) and not written_before(p, i):
                    want(paths, p, i)
            for u in io.urls:
                want(urls, u.rstrip("/"), i)
        texts = [
            (i, self.by_idx[i].get("text") or "") for i, n in self.nodes.items() if n["kind"] == "compaction"
        ]
        for a, idxs in self.agent_steps.items():
            last = idxs[-1]
            if a != self.root and a not in self.peers and self.nodes[last]["kind"] == "text":
                texts.append((last, self.by_idx[last].get("text") or ""))
        if answer is not None:
            s = self.by_idx[answer]
            texts.append(
                (answer, "\n".join(x for x in (s.get("text"), s.get("arguments"), s.get("output")) if x))
            )
        for i, text in texts:
            ps, us, vs = scan_long(text, SUMMARY_TEXT_MAX)
            # prose: only explicit paths (absolute, ./relative, or with a file extension), not "and/or";
            # an absolute one of one part and no extension is more often a route (`/projects/`) than a file
            ps = [
                p
                for p in ps
                if ext_of(p) or p.startswith(("~", "./")) or (p[:1] == "/" and "/" in p.strip("/"))
            ]
            for v in vs:
                want(values, v, i)
            for p in ps:
                want(paths, p, i)
            for u in us:
                want(urls, u.rstrip("/"), i)
            if self.nodes[i]["kind"] == "compaction":
                self.compaction_io[i] = StepIO(consumed=[p for p in ps if "/" in p], urls=us, value_text=text)
        # One Aho-Corasick automaton finds every demanded token in an output in a single pass.
        self.wanted: dict[str, list[tuple[str, int, str]]] = defaultdict(
            list
        )  # token -> (kind, last use, target)
        for v, last in values.items():
            self.wanted[v].append(("v", last, v))
            g = grouped(v)
            if g is not None:  # printed as 4,210, typed as 4210
                self.wanted[g].append(("g", last, v))
        for p, last in paths.items():
            if p == self.start:  # the run's own directory: every step is in it, no output reveals it
                continue
            for pr in _probes(p, self.start):
                self.wanted[pr].append(("p", last, p))
            self.wanted[basename(p)].append(("b", last, p))
        for u, last in urls.items():
            self.wanted[u].append(("u", last, u))
        self.finder: ahocorasick_rs.AhoCorasick | None = None
        self.last_use = max([*values.values(), *paths.values(), *urls.values()], default=-1)
        keys = [k for k in self.wanted if k]
        if keys:  # a DFA: costlier to build than an NFA, but the search is what runs for every output
            self.finder = ahocorasick_rs.AhoCorasick(keys, implementation=ahocorasick_rs.Implementation.DFA)

    # -- pass 2: data edges --------------------------------------------------------------------------

    def _link(self, s: dict[str, Any]) -> None:
        i = s["step_index"]
        nk = self.nodes[i]["kind"]
        if nk == "action":
            io = self.io[i]
            meta = s.get("metadata") or ""
            if self.nodes[i]["tool"] in ("poll", "write_stdin") and '"polls"' in meta:
                try:
                    m = orjson.loads(meta)
                    src = self.call_node.get(m.get("polls"))
                except (orjson.JSONDecodeError, AttributeError, TypeError):
                    m, src = {}, None
                if src is not None and src < i:
                    self.edge(src, i, "data", f"session:{m.get('session_id')}", "poll")
                    self.polled[src].append(i)
                    self.poll_of[i] = src
            out = s.get("output")
            if out and out.startswith(
                _BACKGROUND
            ):  # Claude Code: `Command running in background with ID: x.`
                self.background[out[len(_BACKGROUND) :].split(".", 1)[0].strip()] = i
            elif polls_background(s):
                self._task_poll(i, s.get("arguments"))
            if '"executes_step"' in meta:  # a code executor runs what an earlier message wrote
                self._executes(i, meta)
            self.consume(i, io)
            if self.nodes[i]["status"] in ("error", "timeout") and any(
                r in _PROGRAM_OUTPUTS for _, r in io.produced
            ):
                io = io.unshared()  # a failed `ffmpeg ... a.mp3` (exit 127) wrote no a.mp3; `> log` did
                io.produced = [(p, r) for p, r in io.produced if r not in _PROGRAM_OUTPUTS]
            self.produce(i, io)
            if i not in self.deferred_spawns:
                self.reveal(i, s.get("output"), io.lists_dir)
        elif nk == "result":
            cid = s.get("call_id")
            src = self.call_node.get(cid) if cid else None
            if src is not None and src < i:
                self.anomalies.append(f"second result for call {cid} at step {i}")
                self.edge(src, i, "data", f"call:{cid}", "late-result")
            else:
                self.anomalies.append(f"result without call at step {i} (call id {cid})")
            self.reveal(i, s.get("output"))
        elif nk == "compaction":
            cio = self.compaction_io.get(i)
            if cio is not None:
                self.consume(i, cio, typ="summary", value_rule="summarized-value")
            self.reveal(i, s.get("text"))
        elif nk == "input":
            self.reveal(i, s.get("text"))
        if i in self.deferred:
            self.reveal(i, self.deferred[i])

    def _task_poll(self, i: int, arguments: str | None) -> None:
        """A TaskOutput/BashOutput call polls the background command that announced its task id."""
        try:
            args = orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError:
            return
        tid = next((args.get(k) for k in ("task_id", "bash_id", "shell_id") if isinstance(args, dict)), None)
        src = self.background.get(tid) if isinstance(tid, str) else None
        if src is not None and src < i:
            self.edge(src, i, "data", f"task:{tid}", "poll")
            self.polled[src].append(i)
            self.poll_of[i] = src

    def _executes(self, i: int, meta: str) -> None:
        """`metadata.executes_step` (Who&When's code-executing agent, see trajlab.formats.who_and_when):
        the code step `i` ran was written by that step, which is where a failed run's decision lies."""
        try:
            k = orjson.loads(meta).get("executes_step")
        except (orjson.JSONDecodeError, AttributeError):
            return
        if isinstance(k, int) and not isinstance(k, bool) and 0 <= k < i and k in self.nodes:
            self.edge(k, i, "data", f"code:step{k}", "executes")
            self.author_of[i] = k

    def _read_before_edit(self, path: str, node: int, probe: str | None) -> int | None:
        """The read the edit's old text came from: the latest read of the file that showed it (`probe`,
        see `_stepio.edit_probe`), else the latest read of the file; none for an undo (`probe == ""`)."""
        if probe == "":
            return None
        by_path = self.ix.reads.get(basename(path))
        latest = self.ix.find_latest(by_path, path, node, True)
        if latest is None or not probe or not by_path or probe in (self.by_idx[latest].get("output") or ""):
            return latest
        earlier: set[int] = set()
        for q, es in by_path.items():
            if same_file(q, path):
                taken = 0
                for _, src, _ in reversed(es):  # the latest reads first, at most _EDIT_READS of each name
                    if src < latest and src not in earlier:
                        earlier.add(src)
                        taken += 1
                        if taken == _EDIT_READS:
                            break
        for src in sorted(earlier, reverse=True)[:_EDIT_READS]:
            if self.ix.ok_seen(src, node) and probe in (self.by_idx[src].get("output") or ""):
                return src
        return latest

    def consume(self, node: int, io: StepIO, typ: str = "data", value_rule: str = "value") -> None:
        ix = self.ix
        scripts = set(io.scripts)
        read_first: set[str] = set()  # edited paths whose read is linked: what showed them adds nothing
        for path in io.edits:  # first: an edit's reason to read is its own (an edge keeps its first rule)
            r = self._read_before_edit(path, node, io.edit_probe)
            if r is not None:
                self.edge(r, node, typ, path, "read-before-edit")
                read_first.add(path)
        for path, rule in io.produced:  # a whole-file write over a file the agent read (Claude Code's Write
            if rule == "tool-write" and path not in read_first:  # must read an existing file first)
                r = self.ix.find_latest(ix.reads.get(basename(path)), path, node, True)
                if r is not None:
                    self.edge(r, node, typ, path, "read-before-edit")
        for path in dict.fromkeys([*io.consumed, *io.edits, *io.scripts]):
            w = self.ix.find_writer(path, node)
            if w is not None:
                self.edge(w[0], node, typ, path, "script-run" if path in scripts else w[1])
                continue
            if path in read_first:
                continue
            r = self.ix.find_latest(ix.revealed.get(basename(path)), path, node, True)
            if r is not None:
                self.edge(r, node, typ, path, "revealed-path")
            if not has_glob(path):  # `ls frames/`: the directory itself
                src = self.ix.find_latest(ix.dirs.get(basename(path)), path, node)
                if src is not None:
                    self.edge(src, node, typ, path, "dir-contents")
                    continue
            c = self.ix.find_dir_creator(path, node)  # nobody wrote the file: who made its directory?
            if c is not None:
                self.edge(c[0], node, typ, c[2], "created-dir")
        for word in io.words:
            src = self.ix.find_latest(ix.dirs.get(basename(word)), word, node)
            if src is not None:
                self.edge(src, node, typ, word, "dir-contents")
        for u in io.urls:
            src = self.ix.latest(ix.urls.get(u.rstrip("/"), []), node, True)
            if src is not None:
                self.edge(src, node, typ, u, "revealed-url")
        if io.value_text:
            text = io.value_text[:VALUE_TEXT_MAX]
            values = values_of(text)
            for v in values:
                prods = ix.values.get(v)
                lines = ix.line_numbers.get(v)
                if lines and v in io.line_refs:  # a line to show: a printed line number is its source
                    prods = sorted({*(prods or ()), *lines})
                # how common a number is counts every output showing it, line numbers too
                if prods and len(prods) + (len(lines) if lines and v not in io.line_refs else 0) <= UBIQUITY:
                    echoes = self.echoes.get(v) if value_rule == "value" else None
                    if echoes:
                        prods = [p for p in prods if p not in echoes]
                    src = self.ix.latest(prods, node, True)
                    if src is not None:
                        self.edge(src, node, typ, f"value:{v}", value_rule)
            if ix.lines:
                # short results (even one digit) that an output printed as its last line
                for piece in pieces_of(text):
                    prods = ix.lines.get(piece)
                    if prods and piece not in values and len(prods) <= UBIQUITY:
                        src = self.ix.latest(prods, node, True)
                        if src is not None:
                            self.edge(src, node, typ, f"value:{piece}", value_rule)

    def produce(self, node: int, io: StepIO) -> None:
        ix = self.ix
        for path in (*(p for p, _ in io.produced), *(d for d, _ in io.produced_dirs)):
            # a write into a directory an earlier step created (`mkdir test_dir` -> `echo x >
            # test_dir/a.txt`), unless the path itself had an earlier writer
            c = self.ix.find_dir_creator(path, node)
            if c is not None and self.ix.find_writer(path, node) is None:
                self.edge(c[0], node, "data", c[2], "created-dir")
        for path, rule in io.produced:
            if has_glob(path) or (
                "%" in path and any(c.isdigit() or c == "d" for c in path.split("%", 1)[1][:3])
            ):
                ix.patterns[path].append((node, rule))
                ix.pattern_index.add(path)
            else:
                name = basename(path)
                if name not in ix.files:
                    ix.file_rank[name] = len(ix.file_rank)
                ix.add(ix.files, name, path, node, rule)
                ix.file_log.append((ix.file_rank[name], path, node, rule))
            d = dirname(path)
            if d:
                ix.add(ix.dirs, basename(d), d, node, rule)
            if len(self.produces[node]) < _MAX_ARTIFACTS:
                self.produces[node][path] = None
        for d, rule in io.produced_dirs:
            ix.add(ix.dirs, basename(d), d.rstrip("/"), node, rule)
            ix.add(ix.made, basename(d), d.rstrip("/"), node, rule)
        for path in io.consumed:
            if not has_glob(path):
                ix.add(ix.reads, basename(path), path, node)
            if len(self.consumes[node]) < _MAX_ARTIFACTS:
                self.consumes[node][path] = None
        for u in io.urls:
            if len(self.consumes[node]) < _MAX_ARTIFACTS:
                self.consumes[node][u] = None

    def _typed_in(self, node: int, value: str) -> bool:
        """Was `value` typed into this action's own command (`rg -n "90|80"` printing `~90% less`, `bd show
        spotter-gqc.1`)? Then its output echoes the value back: no source of it for a later step, which
        takes it from where it came from (`echoes`). It still shows what was done, for an answer."""
        for k in (node, self.poll_of.get(node)):  # a poll also echoes what the command it polls was given
            io = self.io.get(k) if k is not None else None
            text = io.value_text if io is not None else ""
            if text and value in text and value_use(text[:VALUE_TEXT_MAX], value) == 1:
                return True
        return False

    def reveal(self, node: int, text: str | None, lists_dir: str | None = None) -> None:
        """Record which demanded values, paths and URLs this step's output shows."""
        if not text:
            return
        t = clip(text)
        ix = self.ix
        if self.finder is not None and node < self.last_use:
            done: set[str] = set()
            for key in set(self.finder.find_matches_as_strings(t, overlapping=True)):
                for kind, last, target in self.wanted[key]:
                    if last <= node:
                        continue
                    if kind == "v":
                        lst = ix.values[target]
                        if not lst or lst[-1] != node:
                            use = value_use(t, key)
                            if use == 1:
                                lst.append(node)
                                if self._typed_in(node, key):
                                    self.echoes[target].add(node)
                            elif use == 2 and node not in ix.line_numbers[target][-1:]:
                                ix.line_numbers[target].append(node)
                    elif kind == "g":
                        lst = ix.values[target]
                        if (not lst or lst[-1] != node) and has_grouped(t, key):
                            lst.append(node)
                    elif kind == "u":
                        ix.urls[key].append(node)
                    elif target in done:
                        continue
                    elif (
                        kind == "p" or (lists_dir and same_file(f"{lists_dir.rstrip('/')}/{key}", target))
                    ) and shows_path(t, key, target):
                        ix.add(ix.revealed, basename(target), target, node)
                        done.add(target)
        tail = t.rstrip()
        line = tail[tail.rfind("\n") + 1 :].strip()
        if 0 < len(line) <= LAST_LINE_MAX:
            ix.lines[line].append(node)


def _probes(path: str, start: str | None = None) -> tuple[str, ...]:
    """Strings whose presence in an output means the output named `path`: the path, its last two
    parts, and its name relative to the run's starting directory `start` (a prompt's `clip.mp4`)."""
    parts = path.rstrip("/").split("/")
    out = [path]
    if len(parts) >= 3 or (len(parts) == 2 and path.startswith("/")):
        out.append("/".join(parts[-2:]))
    if start and len(path) > len(start) + 1 and path.startswith(start) and path[len(start)] == "/":
        out.append(path[len(start) + 1 :])
    return tuple(dict.fromkeys(out))


def start_cwd(trajectory: dict[str, Any]) -> str | None:
    """The directory the run started in, where the runner recorded it (Claude Code's and Codex's
    `cwd`, kept in the trajectory's metadata): every agent's first commands run there, so their
    relative paths resolve against it, and a bare word no longer names the working directory itself."""
    meta = trajectory.get("metadata")
    if not isinstance(meta, str) or '"cwd"' not in meta:
        return None
    try:
        d = orjson.loads(meta)
    except orjson.JSONDecodeError:
        return None
    cwd = d.get("cwd") if isinstance(d, dict) else None
    if not isinstance(cwd, str) or not cwd.startswith("/") or len(cwd) > 4096:
        return None
    return norm_path(cwd)


def build_dag(trajectory: dict[str, Any], steps: list[dict[str, Any]]) -> StepDag:
    """The step DAG of one trajectory, from its `trajectories` row and `steps` rows (any order).

    Never raises on bad input: steps out of order, duplicate call ids, orphan results, calls without
    results, missing sub-agent transcripts and rewritten histories are recorded in
    `metrics["anomalies"]` and the graph is still built.
    """
    return _Builder(trajectory, steps).run()
