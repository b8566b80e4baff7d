"""Seeded mutants of the repo's own adapter fixtures, for tests/formats/test_format_mutations.py.

A *case* is one fixture file an adapter reads (`primary`, relative to tests/fixtures) and the folder
copied with it (`root`, so companions such as result.json or sub-agent transcripts come along). A
*mutant* is that file's bytes damaged one way: cut off, a record replaced by junk, a field of the wrong
type, keys deleted, records or call ids duplicated, odd token counts or timestamps, bad UTF-8, a BOM,
CRLF line ends. The same seed always gives the same mutants.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Case:
    adapter: str
    primary: str  # fixture file to damage, relative to tests/fixtures
    root: str  # folder copied with it (relative to tests/fixtures), the primary inside it
    jsonl: bool  # one record per line (else one JSON document)
    lines: str = ""  # JSONL: "step" when steps.source_line is the file line, "row" when a line is a run


@dataclass(frozen=True)
class Mutant:
    name: str
    data: bytes
    kind: str  # what was done, for messages
    junk_line: int | None = None  # 1-based line that now holds no usable record (JSONL)
    edited: tuple[int, ...] = ()  # 1-based lines whose values were changed (JSONL)


NESTED_OK = 200  # parses with orjson (limit 1024) and the stdlib
NESTED_DEEP = 3000  # deeper than either parser accepts
JUNK: list[tuple[str, bytes]] = [
    ("null", b"null"),
    ("list", b"[]"),
    ("string", b'"x"'),
    ("1e999", b"1e999"),
    ("nested", b"[" * NESTED_OK + b"]" * NESTED_OK),
    ("too-deep", b"[" * NESTED_DEEP + b"]" * NESTED_DEEP),
]
_JUNK_VALUES: dict[str, Any] = {
    "null": None,
    "list": [],
    "string": "x",
    "1e999": float("inf"),
    "nested": json.loads(JUNK[4][1]),
    "too-deep": [],  # a placeholder _deep_dump writes out NESTED_DEEP deep
}
ODD_TYPES: list[Any] = ["text", 7, -1.5, True, [], {}, ["a", 1], {"k": [None]}, None]
TOKEN_VALUES: list[Any] = [-5, 10**30, 2**63, 1.5e308, "12", -(2**70)]
TIME_VALUES: list[Any] = ["yesterday", "", -1e300, 1e300, {}, [2026, 1, 1], "2026-13-45T99:99:99Z", True]
TOKEN_HINTS = ("token", "usage", "cost")
TIME_HINTS = ("time", "timestamp", "created", "started", "ended", "_at", "date")
ID_HINTS = ("call_id", "tool_call_id", "tool_use_id", "callid", "id")


def _spots(doc: Any) -> list[tuple[Any, Any, list[Any]]]:
    """Every (container, key, path) inside a parsed JSON document."""
    out: list[tuple[Any, Any, list[Any]]] = []

    def walk(x: Any, path: list[Any]) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                out.append((x, k, [*path, k]))
                walk(v, [*path, k])
        elif isinstance(x, list):
            for i, v in enumerate(x):
                out.append((x, i, [*path, i]))
                walk(v, [*path, i])

    walk(doc, [])
    return out


def _keyed(doc: Any, hints: tuple[str, ...]) -> list[tuple[Any, Any, list[Any]]]:
    return [s for s in _spots(doc) if isinstance(s[1], str) and any(h in s[1].lower() for h in hints)]


def _wrong_type(v: Any, rng: random.Random) -> Any:
    """A value of another JSON type than `v` (string where an object/list/number is expected, ...)."""
    choices = [o for o in ODD_TYPES if type(o) is not type(v)]
    return copy.deepcopy(rng.choice(choices))


def _edit(doc: Any, rng: random.Random, kind: str) -> bool:
    """Apply one value-level mutation in place; False when the document has nothing to apply it to."""
    spots = _spots(doc)
    if kind == "wrong-type":
        if not spots:
            return False
        for holder, key, _ in rng.sample(spots, min(3, len(spots))):
            holder[key] = _wrong_type(holder[key], rng)
        return True
    if kind == "nulls":  # null everywhere a field could be optional
        dicts = [(h, k) for h, k, _ in spots if isinstance(h, dict)]
        for holder, key in dicts:
            holder[key] = None
        return bool(dicts)
    if kind == "delete-keys":
        dicts = [(h, k) for h, k, _ in spots if isinstance(h, dict)]
        if not dicts:
            return False
        for holder, key in rng.sample(dicts, min(4, len(dicts))):
            holder.pop(key, None)
        return True
    if kind in ("tokens", "timestamps"):
        found = _keyed(doc, TOKEN_HINTS if kind == "tokens" else TIME_HINTS)
        leaves = [(h, k) for h, k, _ in found if not isinstance(h[k], (dict, list))]
        if not leaves:
            return False
        values = TOKEN_VALUES if kind == "tokens" else TIME_VALUES
        for holder, key in leaves:
            holder[key] = copy.deepcopy(rng.choice(values))
        return True
    if kind in ("ids-duplicated", "ids-missing"):
        ids = [(h, k) for h, k, _ in _keyed(doc, ID_HINTS) if isinstance(h[k], (str, int))]
        if len(ids) < (2 if kind == "ids-duplicated" else 1):
            return False
        if kind == "ids-duplicated":
            first = ids[0][0][ids[0][1]]
            for holder, key in ids[1:]:
                holder[key] = first
        else:
            for holder, key in rng.sample(ids, max(1, len(ids) // 2)):
                del holder[key]
        return True
    if kind == "non-utf8":
        strs = [(h, k) for h, k, _ in spots if isinstance(h[k], str) and len(h[k]) > 2]
        if not strs:
            return False
        holder, key = rng.choice(strs)
        holder[key] = holder[key][:2] + "\udcff\udcfe" + holder[key][2:]  # becomes raw 0xff 0xfe bytes
        return True
    raise ValueError(kind)


VALUE_KINDS = (
    "wrong-type",
    "nulls",
    "delete-keys",
    "tokens",
    "timestamps",
    "ids-duplicated",
    "ids-missing",
    "non-utf8",
)


def _dump(doc: Any, indent: int | None) -> bytes:
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    return text.encode("utf-8", "surrogateescape")  # \udcff -> the raw byte 0xff


def _utf8_cut(data: bytes, rng: random.Random) -> tuple[bytes, int]:
    """`data` cut inside a multi-byte UTF-8 sequence (one is planted when the text has none)."""
    starts = [i for i, b in enumerate(data) if b >= 0xC0]
    if not starts:
        q = data.find(b'"', len(data) // 2)
        if q < 0:
            q = len(data) // 2
        data = data[: q + 1] + "\u20ac".encode() + data[q + 1 :]
        starts = [q + 1]
    at = rng.choice(starts)
    return data[: at + 1], at + 1


def jsonl_mutants(data: bytes, seed: str) -> Iterator[Mutant]:
    rng = random.Random(seed)
    lines = data.splitlines(keepends=True)
    idx = [i for i, line in enumerate(lines) if line.strip()]
    parsed: dict[int, Any] = {}
    for i in idx:
        with contextlib.suppress(ValueError):
            parsed[i] = json.loads(lines[i])
    ok = sorted(parsed)

    def join(ls: list[bytes]) -> bytes:
        return b"".join(ls)

    # truncation: mid-record at a few offsets, and inside a UTF-8 sequence
    for frac in (0.33, 0.71, 0.97):
        cut = max(1, int(len(data) * frac))
        if data[cut - 1 : cut] == b"\n":
            cut -= 1
        yield Mutant(f"cut{int(frac * 100)}", data[:cut], "truncated")
    cut_data, _ = _utf8_cut(data, rng)
    yield Mutant("cut-utf8", cut_data, "truncated mid UTF-8")
    # a line replaced by junk
    for n, (label, junk) in enumerate(JUNK):
        i = idx[0] if n == 0 else rng.choice(idx)  # the first line decides what the file is: always one
        ls = list(lines)
        ls[i] = junk + b"\n"
        yield Mutant(f"line{i + 1}-{label}", join(ls), f"line replaced by {label}", junk_line=i + 1)
    # value-level edits on a few lines each
    for kind in VALUE_KINDS:
        for attempt in range(3):
            picks = rng.sample(ok, min(3, len(ok)))
            ls = list(lines)
            edited = []
            for i in picks:
                doc = copy.deepcopy(parsed[i])
                if _edit(doc, rng, kind):
                    ls[i] = _dump(doc, None) + b"\n"
                    edited.append(i + 1)
            if edited:
                yield Mutant(f"{kind}-{attempt}", join(ls), kind, edited=tuple(sorted(edited)))
                break
    # ids duplicated across lines: a whole record repeated, and every record doubled
    i = rng.choice(ok)
    ls = list(lines)
    ls.insert(i + 1, lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n")
    yield Mutant(f"dup-line{i + 1}", join(ls), "record duplicated")
    yield Mutant(
        "dup-all", join([ln if ln.endswith(b"\n") else ln + b"\n" for ln in lines] * 2), "file doubled"
    )
    yield Mutant("bom", b"\xef\xbb\xbf" + data, "BOM")
    yield Mutant("crlf", data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), "CRLF")


def _records_list(doc: Any) -> list[Any] | None:
    """The document's longest list of objects (its steps/messages/events/samples), if any."""
    best: list[Any] | None = None
    for holder, key, _ in [(None, None, []), *_spots(doc)]:
        v = doc if holder is None else holder[key]
        is_records = isinstance(v, list) and v and all(isinstance(x, dict) for x in v)
        if is_records and (best is None or len(v) > len(best)):
            best = v
    return best


def json_mutants(data: bytes, seed: str) -> Iterator[Mutant]:
    rng = random.Random(seed)
    doc = json.loads(data)
    for frac in (0.33, 0.71, 0.97):
        yield Mutant(f"cut{int(frac * 100)}", data[: max(1, int(len(data) * frac))], "truncated")
    cut_data, _ = _utf8_cut(data, rng)
    yield Mutant("cut-utf8", cut_data, "truncated mid UTF-8")
    # the whole document replaced by junk
    for label, junk in JUNK[:4]:
        yield Mutant(f"doc-{label}", junk, f"document is {label}")
    # a record of its main list replaced by junk, or duplicated
    recs = _records_list(doc)
    if recs is not None:
        for label, _ in JUNK:
            d = copy.deepcopy(doc)
            r = _records_list(d)
            assert r is not None
            r[rng.randrange(len(r))] = _JUNK_VALUES[label]
            if label == "1e999":
                yield Mutant(f"rec-{label}", _dump(d, 1).replace(b"Infinity", b"1e999"), "record 1e999")
            elif label == "too-deep":
                yield Mutant(f"rec-{label}", _deep_dump(d, r), "record nested too deep")
            else:
                yield Mutant(f"rec-{label}", _dump(d, 1), f"record replaced by {label}")
        d = copy.deepcopy(doc)
        r = _records_list(d)
        assert r is not None
        k = rng.randrange(len(r))
        r.insert(k, copy.deepcopy(r[k]))
        yield Mutant("rec-dup", _dump(d, 1), "record duplicated")
    for kind in VALUE_KINDS:
        for attempt in range(2):
            d = copy.deepcopy(doc)
            if _edit(d, rng, kind):
                yield Mutant(f"{kind}-{attempt}", _dump(d, 1), kind)
    yield Mutant("bom", b"\xef\xbb\xbf" + data, "BOM")
    yield Mutant("crlf", data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), "CRLF")


def _deep_dump(doc: Any, recs: list[Any]) -> bytes:
    """`doc` with the junk element of `recs` written as a list nested NESTED_DEEP deep (json.dumps
    itself would recurse too deep)."""
    marker = "@@DEEP@@"
    for i, v in enumerate(recs):
        if isinstance(v, list):
            recs[i] = marker
            break
    out = _dump(doc, 1)
    return out.replace(json.dumps(marker).encode(), b"[" * NESTED_DEEP + b"]" * NESTED_DEEP)


ODD_NAME_KEYS = ("name", "model", "tool_name")
ODD_VALUES: list[Any] = [True, 1.5, -7, {"k": 1}, ["a", 1]]


def _set_key(doc: Any, key: str, value: Any) -> int:
    """Every value held under `key` anywhere in `doc` (but nulls and values of `value`'s own type)
    replaced by `value`; how many were."""
    n = 0
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == key and v is not None and type(v) is not type(value):
                doc[k] = copy.deepcopy(value)
                n += 1
            else:
                n += _set_key(v, key, value)
    elif isinstance(doc, list):
        for v in doc:
            n += _set_key(v, key, value)
    return n


def _keys(doc: Any, out: set[str]) -> set[str]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.add(k)
            _keys(v, out)
    elif isinstance(doc, list):
        for v in doc:
            _keys(v, out)
    return out


def odd_value_mutants(case: Case, data: bytes, keys: tuple[str, ...] | None = None) -> list[Mutant]:
    """For each key (of `keys`, default every key the file has) and each of ODD_VALUES, one mutant in
    which every value under that key, anywhere in the file, is that value of another type: what a
    damaged, hand-edited or newer runner's file holds (`"id": true`, `"secs": [..]`, `"model": {..}`)."""
    docs: list[Any] = []
    lines = data.splitlines(keepends=True) if case.jsonl else [data]
    for line in lines:
        try:
            docs.append(json.loads(line))
        except ValueError:
            docs.append(None)
    names = sorted(_keys(docs, set())) if keys is None else [k for k in keys if k in _keys(docs, set())]
    out = []
    for key in names:
        for n, value in enumerate(ODD_VALUES):
            changed = list(lines)
            edited = []
            for i, doc in enumerate(docs):
                d = copy.deepcopy(doc)
                if doc is not None and _set_key(d, key, value):
                    changed[i] = _dump(d, None) + b"\n" if case.jsonl else _dump(d, 1)
                    edited.append(i + 1)
            if edited:
                kind = f"every {key} is {value!r}"
                name = f"odd-{key[:40]}-{n}"
                out.append(Mutant(name, b"".join(changed), kind, edited=tuple(edited) if case.jsonl else ()))
    return out


def odd_name_mutants(case: Case, data: bytes) -> list[Mutant]:
    """`odd_value_mutants` of the tool names, model names and `tool_name` fields."""
    return odd_value_mutants(case, data, ODD_NAME_KEYS)


def mutants(case: Case, data: bytes, seed: str = "") -> list[Mutant]:
    gen: Callable[[bytes, str], Iterator[Mutant]] = jsonl_mutants if case.jsonl else json_mutants
    return list(gen(data, case.primary + seed))
