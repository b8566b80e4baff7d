"""The in-memory step DAG: rows of the three DAG tables plus a lazily built networkx graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

DAG_VERSION = 36
"""Version of the DAG rules. Stored in `dag_metrics.dag_version`; `build_lab` rebuilds older DAGs.
5: C1 controls are cleaned out of stored labels; a retry with blank arguments no longer fails the build;
sub-agent anomalies say which case they are (own step as parent, parent after its first step, inferred).
6: shell rules look through the wrappers and runners tool normalization resolves (`xvfb-run`, `setsid`,
`uv run`, `npx`, `script -c`, `watch`, ...); `parallel CMD ::: A B` is expanded into its jobs.
7: an execution of code an earlier step wrote (`metadata.executes_step`) gets a data edge from it
(`executes`), and its error candidates name that author.
8: `find DIR -name PAT` reads `DIR/PAT` (it read any file matching PAT), and its `-exec` commands are
looked through.
9: a lookup (`find`, `ls`, `stat`, Glob...) of a failed step's input is not its retry.
10: GNU `parallel` jobs come from the splitter tool normalization uses (`trajlab.normalize.parallel_jobs`):
arguments from standard input, `-a` or `::::` files run CMD as written (its scripts and reads are seen),
several `:::` sources form their product, positional `{1}` `{2}`, `:::+` links, `-I` renames `{}`, and
the options that take a value (`--jl`, `-s`, `-kj 4`, `--arg-sep`) or not (`--onall`) are told apart.
11: candidate `unevidenced_origin`: a number or name of the final answer that no tool output, argument or
input shows is traced to the first message that states it.
12: candidate `stopped_after`: the last action of a run that never answered (the author of its code for an
execution); `unevidenced_origin` scores 0.865, above `answer_without_modality`, whose unused branch it
explains.
13: an `unevidenced_origin` candidate carries its `term` (the rules judge reads it there, not from the reason).
14: exit code 1 of a grep/diff whose output is nothing but other programs' error lines (`zsh:1: operation
not permitted: ps`, `cat: a.txt: No such file or directory`) is an error, not "no match"; Codex batches
come from timestamps (its usage sits on a response's last step, not its first); calls of one record are one
batch; a retry prefers the same file or command to a merely similar one; what an output showed links only
steps of the agent that saw it (files stay shared); SWE-agent's search/replace `edit` writes the open
file; `cp`/`mv`/`tee`/`touch` are final writes; git's diff metadata is no claim of an answer.
15: the run's starting directory (Claude Code's and Codex's `cwd`) resolves every agent's first relative
paths, and a path relative to it, shown in an output, names the file (a prompt's `clip.mp4` feeds a `Read`
of `/work/task/clip.mp4`); a bare word naming that directory is no use of its files; `$120`, `45%`, `57°F`
state their numbers; a verifier's failed verdict is no step error, and `first_error` also names an orphan
result or a flagged message; a diff answer claims its added lines, not its context or removed lines;
Terminus-2's handoff questioner sees only its prompt, not the history; an edit of a file a step read
is `read-before-edit` even when that step's output also showed the path; inline Python's dotted imports
read the module's file and `python -m pkg.mod` runs `pkg/mod.py`; a failure the agent answered by changing
the file the step read or imported is addressed, not unrecovered; a bare `TERMINATE` is no answer and a
`FINAL ANSWER:` thought is; the very same command run again past the 10-action window is a retry; the
starting directory is revealed by no output; a tool output that starts `Browser Use rejected this action` is an
error; function words and conversation talk (`both`, `since`, `agree`, `steps`...) are no answer terms.
16: a command with neither exit code nor error flag (SWE-agent, terminals, chat logs) is an error when its
output ends in an uncaught Python exception, a pytest summary with failures, or only shell errors.
17: an earlier hand-in (`submit`, Terminus-2's first `mark_task_complete`) is no dead end; `asciinema rec FILE`
writes FILE; agent CLIs' model and prompt flags (`mini -m anthropic/claude-sonnet-4-0`) are no paths.
18: a Terminal-Bench run with no answering message answers with its last action (its tests grade the state).
19: a step that timed out while its output says a server is up (`Serving HTTP on ...`) is `ok`.
20: AutoGenBench's end markers (`SCENARIO.PY COMPLETE !#!#`) in the answer message are no answer terms.
21: rule 16 only for runners whose logs do not say how commands ended (not Claude Code, Codex, OpenHands,
Inspect, mini-swe-agent, Who&When: their missing error flag means success).
22: a hand-in (`finish`, `submit`) without a logged result is `ok` and no anomaly; every piece of a polled
command before its last poll is `ok` (an empty poll too) and no dead end, not only the last but one.
23: `read-before-edit` comes from the read that showed the edit's old text (none for an undo), and such an
edit takes no `revealed-path` edge for the file; a failure's retry is the most similar command of the
window, not the first one similar enough.
24: a time of day is one value (`12:00 PM` states `12:00`; `2013-05-01T03:56:47-00:00` states `03:56:47`),
its fields none, in typed text and outputs (the `56` of a clock no longer links two steps).
25: grep/rg/ag read their files, not their pattern or option values; a quoted or escaped path with spaces
that starts like a path is read; regex alternations and options are no file patterns.
26: candidate `failed_answer`: a failed run where no other signal fired points at its answer step.
27: an action given a value in its command only echoes it: a later action takes the value from an earlier
source; style lengths (`0.8rem`, `16px`) are no values.
28: a review's fixes: grep's bundled `-rnf FILE`, attached `-ePAT` and `--file=F`; a path with spaces must
name a file of a known type and read like no prose; time ranges, MAC addresses, zones on their own; a
log shown after `cd`/`export` is still a log; a virtualenv prompt is a trailer; a retry search ends at a
command 90% similar; no quadratic or cubic regexes or scans on long outputs.
29: an audit's fixes: a `FINAL ANSWER:` line is all an answer claims, and an action whose output writes it
can be the answer step; a code executor's turn without code is no action after the answer; Terminal-Bench
keystrokes form no batches and its last action claims nothing; setup-phase steps are no dead ends; git's
hunk-header function is no claim; a sub-agent report's paths link to their writers; a page that did not
load is an error; `answer_unsupported` needs an evidence step.
30: a second Claude Code/Codex audit's fixes: a poll echoes what its command was given; a shorter path
probe inside a longer path counts only when that path names the same file; summaries are read to 40,000
characters; an add-only patch takes the read that showed its context; a whole-file Write over a read file
takes that read; Claude Code's TaskOutput polls its background command and reports its failure.
31: a Who&When audit's fixes: a cut-off message handing code to the executor is no answer; the answering
agent's own messages are no support; a failed command's programs wrote nothing; executor turns without
code are no dead ends; a browser click on another link is no retry.
32: a code executor's `code_blocks` are read: shell blocks as commands, Python blocks as inline code.
33: a run with an expected answer (a QA task) takes no `answer-final-write` support from the files it
wrote: it hands in its answer, not its files.
34: two calls close in time (Codex) are not one response when the first had finished before the second
was issued and records lie between them (its output): a quick ffmpeg and the tesseract run on its frames
0.15 s later are two responses, and the frames' data edge is kept.
35: a web step that an answer lacking the task's media evidence stands on (on its path, or an unrecorded
search it may come from) is a `knowledge_instead_of_evidence` candidate ranked above that answer; an
answer source that prints literal arithmetic which checks out says so in its reason.
36: Terminal-Bench's `asciinema rec` (the session recorder its harness starts) is no call without result:
it records until the session ends."""

STATE_GRADED_RUNNERS = frozenset(["terminal_bench"])
"""Runners whose logs hold no message with an answer because the tests grade the state the agent left
(Terminal-Bench runs its tests in the container): the last action is the answer step, and its keystrokes
claim nothing."""

NODE_KINDS: dict[str, str] = {
    "tool_call": "action",
    "tool_result": "result",
    "assistant": "text",
    "reasoning": "reasoning",
    "user": "input",
    "system": "input",
    "compaction": "compaction",
}
"""Step kind -> node kind. A tool call and its result are one `action` node; `result` is an orphan result."""

MEDIA_MODALITIES = ("audio", "video", "image", "document", "web")
"""Modalities that form branches (file, compute and text nodes only carry a branch along)."""

ANSWER_PATH_EDGES = frozenset(["data", "answer", "spawn", "return", "summary"])
"""Edge types along which a step's output can reach the final answer."""

USE_EDGES = frozenset(["data", "answer", "spawn", "return", "summary"])
"""Outgoing edge types that count as "the output was used" (an action without any is a dead end)."""


@dataclass
class StepDag:
    """One trajectory's step DAG.

    `nodes`, `edges` and `metrics` are rows of `dag_nodes`, `dag_edges` and `dag_metrics`;
    `candidates` is `metrics["decisive_candidates"]` parsed (ranked, best first). `graph` is a
    networkx MultiDiGraph keyed by edge type, so two edges of different types between the same
    pair of steps are both kept.
    """

    trajectory_id: str
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    metrics: dict[str, Any]
    candidates: list[dict[str, Any]] = field(default_factory=list)
    _graph: Any = field(default=None, repr=False, compare=False)

    @property
    def graph(self) -> nx.MultiDiGraph:
        if self._graph is None:
            import networkx as nx

            g = nx.MultiDiGraph(trajectory_id=self.trajectory_id)
            for n in self.nodes:
                g.add_node(n["node_id"], **{k: v for k, v in n.items() if k != "trajectory_id"})
            for e in self.edges:
                g.add_edge(
                    e["src"], e["dst"], key=e["type"], type=e["type"], artifact=e["artifact"], rule=e["rule"]
                )
            self._graph = g
        return self._graph

    @property
    def answer_step(self) -> int | None:
        return self.metrics.get("answer_step")

    def node(self, node_id: int) -> dict[str, Any] | None:
        return next((n for n in self.nodes if n["node_id"] == node_id), None)

    def edges_of(self, type: str | None = None) -> list[tuple[int, int]]:
        return [(e["src"], e["dst"]) for e in self.edges if type is None or e["type"] == type]

    @property
    def anomalies(self) -> list[str]:
        return list(self.metrics.get("anomalies") or [])
