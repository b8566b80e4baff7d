"""Answer edges: which steps' outputs the final answer rests on, and which of its values nothing supports."""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ._model import STATE_GRADED_RUNNERS
from ._tokens import basename, clip, same_file, scan

if TYPE_CHECKING:
    from ._build import _Builder

SHORT_ANSWER_WORDS = 40
"""Answers up to this many words are also matched word by word (names, labels, single digits)."""
DERIVED_LOOKBACK = 8
"""Evidence steps before the answer whose numbers may combine into an answer value (a + b, a * b...)."""
DERIVED_MAX_NUMBERS = 16
DERIVED_MAX_PER_OUTPUT = 6
_DIFF_METADATA = re.compile(
    r"^(?:index [0-9a-f]+\.\.[0-9a-f]+(?: \d+)?|(?:old|new|deleted file|new file) mode \d+"
    r"|(?:dis)?similarity index \d+%)\r?(?:\n|$)|^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@",
    re.M,
)
"""What git writes around a diff's changes (blob hashes, file modes, hunk line numbers): no claims."""


def _diff_claims(text: str) -> str:
    """Of a unified diff, what it claims: its headers (the files) and its added lines. Context and
    removed lines are the code as it was (` print(division(123, 15))` states no 123)."""
    out = []
    in_hunk = False
    for line in text.splitlines():
        if line.startswith("diff --git"):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
            line = "@@"  # after the line numbers git writes the enclosing function: context, no claim
        elif in_hunk and not line.startswith("+"):
            continue
        out.append(line)
    return "\n".join(out)


_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
# numbers (one digit too) that are not clock times, line-number prefixes or parts of names:
# (?<![\w.:])-?\d+(?:\.\d+)?(?![\w:]|\.\d), written to start with a character class (a sign or a
# digit, the look-behind checked after it) so that the search skips to candidates in C
_NUM_RE = re.compile(r"[-\d](?:(?<=-)(?<![\w.:]-)\d+|(?<=\d)(?<![\w.:]\d)\d*)(?:\.\d+)?(?![\w:]|\.\d)")
_NUM_ITER = _NUM_RE.finditer
_PIECE_RE = re.compile(r"[A-Za-z0-9][\w.-]*[A-Za-z0-9]|\d")
_BENCH_MARKER = re.compile(r"^[\w.-]+ COMPLETE !#!#[ \t]*$", re.M)
"""The lines AutoGenBench's scripts print when they end (`SCENARIO.PY COMPLETE !#!#`, `RUN.SH COMPLETE
!#!#`), which Who&When logs keep in the last message: the harness's, not the answer's."""
_STOP = frozenset(
    [
        "that",
        "this",
        "with",
        "from",
        "have",
        "will",
        "would",
        "there",
        "their",
        "then",
        "than",
        "what",
        "which",
        "when",
        "where",
        "answer",
        "final",
        "terminate",
        # function words and the talk of a conversation, not claims about the task
        "both",
        "each",
        "every",
        "other",
        "others",
        "more",
        "most",
        "many",
        "much",
        "very",
        "here",
        "your",
        "over",
        "under",
        "same",
        "should",
        "could",
        "does",
        "done",
        "made",
        "make",
        "next",
        "once",
        "still",
        "well",
        "within",
        "without",
        "while",
        "through",
        "between",
        "since",
        "until",
        "upon",
        "might",
        "must",
        "need",
        "needs",
        "using",
        "please",
        "thanks",
        "thank",
        "sure",
        "agree",
        "agreed",
        "verify",
        "verified",
        "confirm",
        "confirmed",
        "information",
        "conversation",
        "step",
        "steps",
        "task",
        "finalize",
        "objections",
        "therefore",
        "because",
        "based",
        "into",
        "about",
        "after",
        "before",
        "these",
        "those",
        "they",
        "them",
        "also",
        "just",
        "only",
        "some",
        "such",
        "total",
        "value",
        "values",
        "result",
        "results",
        "number",
        "numbers",
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "been",
        "being",
        "is",
        "it",
        "its",
        "correct",
        "approximately",
        "around",
        "roughly",
        "likely",
        "probably",
        "seems",
        "appears",
    ]
)
WRITE_RULES = frozenset(
    [
        *("tool-write", "tool-edit", "apply-patch", "sed-in-place", "heredoc-write", "redirect", "tee"),
        *("code-write", "copy-dest", "touch"),
    ]
)
"""Writes that change the files a code task hands in (`answer-final-write`): editors, patches, shell
writes, copies and moves. Not build outputs, downloads or media artifacts (`output-flag`, `download`,
`ffmpeg-output`, ...), which a diff does not carry."""


def task_text(b: _Builder) -> str:
    task = b.t.get("task") or ""
    if not task:
        task = next((s.get("text") or "" for s in b.steps if s.get("kind") == "user"), "")
    return task


def is_evidence(b: _Builder, i: int) -> bool:
    """Steps whose output can support an answer: tool calls, orphan results, summaries, sub-agent reports."""
    n = b.nodes[i]
    return n["kind"] in ("action", "result", "compaction") or (
        n["kind"] == "text" and n["agent_id"] != b.root
    )


def supports(b: _Builder, i: int, answer: int) -> bool:
    """Evidence that can support the answer: not a message of the agent that answers (an Orchestrator's
    own instruction "search for 'Ethan Zohn birthdate'" is no evidence for its "Ethan Zohn")."""
    if not is_evidence(b, i):
        return False
    n = b.nodes[i]
    return n["kind"] != "text" or n["agent_id"] != b.nodes[answer]["agent_id"]


def _number(v: str) -> float | None:
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None


def _decimals(v: str) -> int:
    return len(v.split(".", 1)[1]) if "." in v else 0


def _derived(b: _Builder, answer: int, targets: list[str]) -> dict[str, tuple[int, ...]]:
    """Answer numbers equal to the sum, difference, product or ratio of two numbers that recent steps
    printed (mental arithmetic on printed evidence). Outputs with many numbers are skipped."""
    recent: list[int] = []
    for i in sorted(b.nodes, reverse=True):
        if i < answer and b.nodes[i]["kind"] == "action" and b.nodes[i]["status"] == "ok":
            recent.append(i)
            if len(recent) == DERIVED_LOOKBACK:
                break
    nums: dict[float, int] = {}
    for i in recent:
        found_here = list(
            itertools.islice(_NUM_ITER(clip(b.by_idx[i].get("output") or "")), DERIVED_MAX_PER_OUTPUT + 1)
        )
        if len(found_here) > DERIVED_MAX_PER_OUTPUT:
            continue  # a metadata dump (ffprobe, logs): too many numbers to tell a result from noise
        for v in [m.group() for m in found_here]:
            x = _number(v)
            if x is not None and x not in nums and len(nums) < DERIVED_MAX_NUMBERS:
                nums[x] = i
    found: dict[str, tuple[int, ...]] = {}
    items = list(nums.items())
    for t in targets:
        tx = _number(t)
        if tx is None or abs(tx) < 10:
            continue
        d = _decimals(t)
        half = 10 ** (-d) / 2  # x hits when abs(round(x, d) - tx) < half (inlined: no call per test)
        for (a, ia), (c, ic) in itertools.combinations(items, 2):
            if (
                abs(round(a + c, d) - tx) < half
                or abs(round(a * c, d) - tx) < half
                or abs(round(abs(a - c), d) - tx) < half
                or (c and abs(round(a / c, d) - tx) < half)
                or (a and abs(round(c / a, d) - tx) < half)
            ):
                found[t] = (ia, ic)
                break
    return found


def answer_edges(b: _Builder, answer: int, required: list[str]) -> dict[str, Any]:
    """Draw `answer` edges into the answer step; report which of its terms have support."""
    s = b.by_idx[answer]
    text = s.get("text") or ""
    marked = _final_answer_line(text or s.get("output") or "") if b.t.get("final_answer") else None
    if marked is not None:
        # `FINAL ANSWER: x` (AutoGen, Magentic-One): that line is the claim; the rest of the message is
        # what the harness logged around it (tracebacks, warnings, "Max rounds (30) reached.")
        text = marked
    elif b.nodes[answer]["kind"] == "action" and b.t.get("runner") in STATE_GRADED_RUNNERS:
        text = ""  # the tests grade the state it left: its keystrokes claim nothing
    elif b.nodes[answer]["kind"] == "action":
        out = s.get("output") or ""
        text = "\n".join(x for x in (s.get("arguments"), out if "diff --git" in out[:2000] else None) if x)
        if "diff --git" in text:
            text = _diff_claims(
                _DIFF_METADATA.sub(lambda m: "@@" if m.group().startswith("@@") else "", text)
            )
    text = clip(text)
    if "!#!#" in text:
        text = _BENCH_MARKER.sub("", text)
    short = len(text.split()) <= SHORT_ANSWER_WORDS
    paths, urls, values = scan(text)
    supported: list[str] = []
    unsupported: list[str] = []
    # a code task hands in its files; a run graded against an expected answer (a QA benchmark such as
    # GAIA behind Who&When) hands in its answer, and the scripts it wrote on the way are no part of it
    if not required and not (b.t.get("expected_answer") or "").strip():
        supported += _final_writes(b, answer)
    for v in values:
        prods = [p for p in b.ix.values.get(v, ()) if p < answer and supports(b, p, answer)]
        if prods:
            b.edge(prods[-1], answer, "answer", f"value:{v}", "answer-value")
            supported.append(v)
        else:
            unsupported.append(v)
    if unsupported:
        for v, srcs in _derived(b, answer, unsupported).items():
            for j in srcs:
                b.edge(j, answer, "answer", f"value:{v}", "answer-derived")
            supported.append(v)
            unsupported.remove(v)
    for p in paths:
        if p[:2] in ("a/", "b/") and ("diff --git" in text or "+++ " in text):
            p = p[2:]  # git diff prefixes
        w = b.ix.find_writer(p, answer)
        src = w[0] if w else b.ix.find_latest(b.ix.reads.get(p.rsplit("/", 1)[-1]), p, answer)
        if src is not None:
            b.edge(src, answer, "answer", p, "answer-path")
            supported.append(p)
    for u in urls:
        src = b.ix.latest(b.ix.urls.get(u.rstrip("/"), []), answer)
        if src is not None and supports(b, src, answer):
            b.edge(src, answer, "answer", u, "answer-path")
            supported.append(u)
    words: list[str] = []
    if short:
        words = _short_answer_terms(b, answer, text, supported)
    return {
        "terms": len(values) + len(paths) + len(urls) + len(words),
        "supported": supported,
        "unsupported_values": unsupported if short else [],
    }


def _final_answer_line(text: str) -> str | None:
    """The last `FINAL ANSWER ...` line of a text, or None."""
    k = text.rfind("FINAL ANSWER")
    if k < 0:
        return None
    end = text.find("\n", k)
    return text[k : end if end >= 0 else len(text)]


def content_words(text: str, task_lower: str) -> list[str]:
    """The words of `text` (4+ letters, in order, once each) that are neither stop words nor in the task."""
    return [
        w
        for w in dict.fromkeys(_WORD_RE.findall(text))
        if w.lower() not in _STOP and w.lower() not in task_lower
    ]


def numbers_in(text: str) -> list[str]:
    """The numbers of `text` (one digit too; not clock times, line-number prefixes or parts of names)."""
    return list(dict.fromkeys(m.group() for m in _NUM_ITER(text)))


def _short_answer_terms(b: _Builder, answer: int, text: str, supported: list[str]) -> list[str]:
    """Words of a short answer found in an output, and pieces (even one digit) an output is exactly."""
    words = content_words(text, task_text(b).lower())
    evid = [i for i in sorted(b.nodes) if i < answer and supports(b, i, answer)]
    exact: dict[str, int] = {}
    for i in evid:
        tail = (b.by_idx[i].get("output") or "")[-200:].rstrip()
        last = tail[tail.rfind("\n") + 1 :].strip()
        if 0 < len(last) <= 40:
            exact[last] = i
    for piece in dict.fromkeys(_PIECE_RE.findall(text)):
        if piece in exact and piece not in supported:
            b.edge(exact[piece], answer, "answer", f"value:{piece}", "answer-value")
            supported.append(piece)
    if words:
        outs = [(i, clip(b.by_idx[i].get("output") or b.by_idx[i].get("text") or "")) for i in reversed(evid)]
        # every output in one string, latest first: the first hit of a word is in the latest output
        # holding it, found by C searches instead of a loop over outputs (NUL delimits like a string end)
        big = "\0".join(o for _, o in outs)
        starts: list[int] = []
        pos = 0
        for _, o in outs:
            starts.append(pos)
            pos += len(o) + 1
        lower = big.lower()  # a word whose lower case is not in it is in no case variant in `big`
        for w in words[:20]:
            best = -1
            if w.lower() not in lower:
                continue
            for f in dict.fromkeys((w, w.lower(), w.upper(), w.capitalize())):
                # the first occurrence (before the best so far) not inside a longer name
                m = term_re(f).search(big, 0, len(big) if best < 0 else best + len(f))
                if m is not None and (best < 0 or m.start() < best):
                    best = m.start()
            src = outs[bisect_right(starts, best) - 1][0] if best >= 0 else None
            if src is not None:
                b.edge(src, answer, "answer", w, "answer-term")
                supported.append(w)
    return words


@lru_cache(maxsize=4096)
def term_re(term: str) -> re.Pattern[str]:
    """`term` not inside a longer name (as `_tokens.find_path`): no word character, `.` or `-` before
    it, no word character or `-` after it. The literal comes first, so the search runs in C."""
    n = len(term)
    return re.compile(rf"{re.escape(term)}(?<![A-Za-z0-9_.\-].{{{n}}})(?![A-Za-z0-9_\-])", re.S)


def _final_writes(b: _Builder, answer: int) -> list[str]:
    """Code tasks: the final version of every file the run wrote (and did not delete) is its answer."""
    last_writer: dict[str, int] = {}
    # the written paths by basename: a deleted path is compared only with those that can name the same
    # file (`same_file` implies equal basenames but for the empty path), not with every file written
    by_name: dict[str, set[str]] = defaultdict(set)
    for i in sorted(b.io):
        io = b.io[i]
        if i >= answer or b.nodes[i]["status"] in ("error", "timeout"):
            continue
        for path, rule in io.produced:
            if rule in WRITE_RULES:
                last_writer[path] = i
                by_name[basename(path)].add(path)
        for gone in io.deleted:
            name = basename(gone)
            if not name or (gone.endswith("/") and "" in last_writer):  # same_file's corner cases
                near: Iterable[str] = list(last_writer)
            else:
                near = by_name.get(name, ())
            for path in [p for p in near if same_file(p, gone)]:
                del last_writer[path]
                by_name[basename(path)].discard(path)
    for path, i in last_writer.items():
        b.edge(i, answer, "answer", path, "answer-final-write")
    return list(last_writer)
