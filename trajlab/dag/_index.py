"""The producer index of one DAG build: which earlier step wrote, created, revealed or printed each
file, directory, URL and value, and the latest-producer lookups the data-edge rules use.

Every lookup answers "the latest earlier step that `node` could have seen" (not a call issued in the
same response as `node`). Entries are grouped so that a lookup costs about the number of distinct
paths that can name the same file, not the number of steps so far: long runs stay linear.
"""

from __future__ import annotations

from collections import defaultdict

from ._tokens import basename, has_glob, pattern_matches, same_file

_MAX_PARENTS = 12  # directories up from a path looked up for the step that created them


class OutputPatterns:
    """Output patterns (`frames/%03d.png`) in the order they first appeared, indexed by the directory
    they write into and by how they end, so that a path is tested only against the patterns that can
    match it (a run can write thousands of distinct patterns: one scan of all per lookup is quadratic)."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.rank: dict[str, int] = {}
        self.by_dir: dict[str, list[str]] = defaultdict(list)
        self.anywhere: list[str] = []  # one component, or a wildcard in the directory: any directory
        self.by_tail: dict[str, list[str]] = defaultdict(list)  # last 3 characters -> patterns
        self.star_tail: list[str] = []  # a `*` in the last 6 characters: may end in anything

    def add(self, pattern: str) -> None:
        if pattern in self.rank:
            return
        self.rank[pattern] = len(self.order)
        self.order.append(pattern)
        parts = pattern.rstrip("/").split("/")
        d = parts[-2] if len(parts) > 1 else None
        if d is None or has_glob(d) or "%" in d:
            self.anywhere.append(pattern)
        else:
            self.by_dir[d].append(pattern)
        if "*" in pattern[-6:]:
            self.star_tail.append(pattern)
        elif len(pattern) >= 3:
            self.by_tail[pattern[-3:]].append(pattern)

    def for_path(self, path: str) -> list[str]:
        """The patterns that may match a path without wildcards and pass the lookups' tail test
        (`pat.endswith(path[-3:]) or "*" in pat[-6:]`), in first-appearance order. `pattern_matches`
        compares as many trailing components as both have, so when both have a directory, a
        pattern's literal directory must be the path's."""
        if len(self.order) < 8 or len(path) < 3:
            return self.order
        parts = path.rstrip("/").split("/")
        if len(parts) >= 2:
            mine, other = self.by_dir.get(parts[-2]), self.anywhere
        else:
            mine, other = self.by_tail.get(path[-3:]), self.star_tail
        if not mine:
            return other
        if not other:
            return mine
        return sorted((*mine, *other), key=self.rank.__getitem__)


class WrittenCode:
    """The code a run wrote (path -> body, in first-write order), its paths indexed by basename: a
    script is looked up among the paths that can name the same file (`same_file` implies equal
    basenames, but for the empty path), not by a scan of every file written so far, which is
    quadratic in a long run that writes many files and runs many scripts."""

    def __init__(self) -> None:
        self.body: dict[str, str] = {}
        self.by_name: dict[str, list[str]] = defaultdict(list)

    def update(self, written: dict[str, str]) -> None:
        for p, c in written.items():
            if p not in self.body:
                self.by_name[basename(p)].append(p)
            self.body[p] = c

    def find(self, script: str) -> str | None:
        """The body written at `script`, else at the first-written path that names the same file."""
        c = self.body.get(script)
        if c:
            return c
        name = basename(script)
        if not name or (script.endswith("/") and "" in self.body):  # same_file's corner cases
            return next((c for p, c in self.body.items() if same_file(p, script)), None)
        return next((self.body[p] for p in self.by_name.get(name, ()) if same_file(p, script)), None)


Entries = dict[str, dict[str, list[tuple[int, int, str]]]]
"""basename -> path -> [(sequence number, step, rule)] in step order. Grouped by path, a lookup compares
its path with each distinct path of that basename once, not with every entry: a run that writes
`out/result.txt` 5,000 times and then reads `run7/result.txt` made 5,000 `same_file` calls per read."""


class ProducerIndex:
    """What earlier steps wrote, created, revealed and printed, and the latest-producer lookups over it.
    Lists grow in step order, so the last fitting entry is the latest."""

    def __init__(self, batch: dict[int, int]) -> None:
        self.batch = batch  # step -> first step of its parallel batch (the builder fills it)
        self.seq = 0  # entries' order across the paths of one basename (the order of the flat lists before)
        self.files: Entries = defaultdict(dict)
        self.file_rank: dict[str, int] = {}  # basename -> order of its first write (files' key order)
        # every file write in step order: (rank of its basename, path, producer, rule)
        self.file_log: list[tuple[int, str, int, str]] = []
        self.patterns: dict[str, list[tuple[int, str]]] = defaultdict(list)  # pattern -> [(producer, rule)]
        self.pattern_index = OutputPatterns()
        # glob a step read -> (file_log entries / patterns looked at, the ones it matches): each lookup
        # of the same glob looks only at what was written since the previous one
        self.glob_files: dict[str, tuple[int, list[tuple[int, str, int, str]]]] = {}
        self.glob_patterns: dict[str, tuple[int, list[str]]] = {}
        self.dirs: Entries = defaultdict(dict)
        self.revealed: Entries = defaultdict(dict)
        self.urls: dict[str, list[int]] = defaultdict(list)
        self.values: dict[str, list[int]] = defaultdict(list)
        self.line_numbers: dict[str, list[int]] = defaultdict(list)  # a value printed only as a line number
        self.made: Entries = defaultdict(dict)  # directories steps created
        self.reads: Entries = defaultdict(dict)
        self.lines: dict[str, list[int]] = defaultdict(list)  # an output's last line -> producers
        # Who saw which output (set by `_structure.structure` when a run has sub-agents): step -> its
        # conversation ("" for the root and its peers, else the sub-agent), and a sub-agent's last step
        # (its report) -> the conversation it reports to. None: one conversation saw everything.
        self.group: dict[int, str] | None = None
        self.reports: dict[int, str] = {}

    def add(self, entries: Entries, name: str, path: str, step: int, rule: str = "") -> None:
        self.seq += 1
        by_path = entries[name]
        got = by_path.get(path)
        if got is None:
            by_path[path] = [(self.seq, step, rule)]
        else:
            got.append((self.seq, step, rule))

    def ok_src(self, src: int, dst: int) -> bool:
        """An earlier step whose output `dst` could have seen (not a call issued in the same response)."""
        if src >= dst:
            return False
        b = self.batch.get(dst)
        return b is None or self.batch.get(src) != b

    def ok_seen(self, src: int, dst: int) -> bool:
        """`ok_src`, and `dst`'s agent saw `src`'s output. Files are shared by every agent, but what an
        output showed (values, paths, URLs) only the agent that ran the step saw: a sub-agent sees its
        own steps (its prompt is its first one), the agent that spawned it only its report."""
        if not self.ok_src(src, dst):
            return False
        g = self.group
        if g is None:
            return True
        a, b = g.get(src), g.get(dst)
        return a == b or self.reports.get(src) == b

    def find_writer(self, path: str, node: int) -> tuple[int, str, str] | None:
        ix = self
        best: tuple[int, str, str] | None = None
        glob = has_glob(path)
        if glob:
            best = self._glob_writer(path, node)
        else:
            w = self._latest(ix.files.get(basename(path)), path, node)
            if w is not None:
                best = (w[1], w[2], w[3])
        if not ix.patterns:
            return best
        tail = path[-3:]
        for pat in self._glob_patterns(path) if glob else ix.pattern_index.for_path(path):
            if not (pat.endswith(tail) or "*" in pat[-6:] or glob):
                continue
            if not (pattern_matches(pat, path) or (glob and pattern_matches(path, pat))):
                continue
            for src, rule in reversed(ix.patterns[pat]):
                if best is not None and src <= best[0]:
                    break
                if self.ok_src(src, node):
                    best = (src, rule, pat)
                    break
        return best

    def _glob_writer(self, glob: str, node: int) -> tuple[int, str, str] | None:
        """The latest earlier write of a file the glob matches; of the files one step wrote, the one
        whose name was written first."""
        ix = self
        seen, matches = ix.glob_files.get(glob, (0, []))
        log = ix.file_log
        for k in range(seen, len(log)):
            if pattern_matches(glob, log[k][1]):
                matches.append(log[k])
        ix.glob_files[glob] = (len(log), matches)
        best: tuple[int, str, str] | None = None
        best_rank = 0
        for rank, p, src, rule in reversed(matches):  # in step order
            if best is not None and src < best[0]:
                break
            if self.ok_src(src, node) and (best is None or rank < best_rank):
                best, best_rank = (src, rule, p), rank
        return best

    def _glob_patterns(self, glob: str) -> list[str]:
        """The output patterns a glob may name, in first-appearance order."""
        order = self.pattern_index.order
        seen, matches = self.glob_patterns.get(glob, (0, []))
        for pat in order[seen:]:
            if pattern_matches(pat, glob) or pattern_matches(glob, pat):
                matches.append(pat)
        self.glob_patterns[glob] = (len(order), matches)
        return matches

    def _latest(
        self, by_path: dict[str, list[tuple[int, int, str]]] | None, path: str, node: int, seen: bool = False
    ) -> tuple[int, int, str, str] | None:
        """(sequence number, step, rule, path) of the latest entry naming the same file as `path` that
        `node` could have seen (with `seen`: whose output `node`'s agent saw, see `ok_seen`)."""
        if not by_path:  # most lookups: no entry of that basename
            return None
        best: tuple[int, int, str, str] | None = None
        ok = self.ok_seen if seen else self.ok_src
        for q, entries in by_path.items():
            if not same_file(q, path):
                continue
            for seq, src, rule in reversed(entries):
                if best is not None and seq < best[0]:
                    break
                if ok(src, node):
                    best = (seq, src, rule, q)
                    break
        return best

    def find_latest(
        self, by_path: dict[str, list[tuple[int, int, str]]] | None, path: str, node: int, seen: bool = False
    ) -> int | None:
        e = self._latest(by_path, path, node, seen)
        return None if e is None else e[1]

    def find_dir_creator(self, path: str, node: int) -> tuple[int, str, str] | None:
        """(step, rule, directory): the latest earlier step that created the closest directory `path`
        lies in (`mkdir test_dir` for `test_dir/file1.txt`), or that wrote a "file" which `path` shows
        is a directory. One lookup per parent directory: no scan of earlier steps."""
        ix = self
        p = path.rstrip("/")
        for _ in range(_MAX_PARENTS):
            k = p.rfind("/")
            if k <= 0:
                return None
            p = p[:k]
            name = p[p.rfind("/") + 1 :]
            if name in ("", ".", "..", "~") or has_glob(name):
                continue
            best: tuple[int, str, str] | None = None
            for entries in (ix.made.get(name), ix.files.get(name)):
                e = self._latest(entries, p, node)  # steps only grow along entries: the latest is the largest
                if e is not None and (best is None or e[1] > best[0]):
                    best = (e[1], e[2], e[3])
            if best is not None:
                return best
        return None

    def latest(self, producers: list[int], node: int, seen: bool = False) -> int | None:
        ok = self.ok_seen if seen else self.ok_src
        for src in reversed(producers):
            if ok(src, node):
                return src
        return None
