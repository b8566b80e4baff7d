"""read_jsonl_lines: the same lines, counts and quarantine rows as read_jsonl, as tuples."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from trajlab.formats import ParseContext, SourceUnit, read_jsonl
from trajlab.formats._read import read_jsonl_lines

DAMAGED = (
    b'{"type": "a", "n": 1}\n'
    b"\n"  # blank: not a record
    b"{not json\n"
    b'{"s": "\\ud83d cut emoji"}\n'  # lone surrogate: valid JSON, orjson refuses it
    b"null\n"
    b'{"bad": "\xff\xfe"}\n'  # invalid UTF-8
    b'["list"]\r\n'
    b'{"type": "b", "cut'  # last line cut off
)


def _ctx(path: Path) -> ParseContext:
    return ParseContext(SourceUnit(path, "test"))


def test_same_records_and_quarantine_as_read_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(DAMAGED)
    a, b = _ctx(path), _ctx(path)
    records = [(r.obj, r.line, r.offset, r.raw) for r in read_jsonl(path, a)]
    lines = list(read_jsonl_lines(path, b))
    assert lines == records
    assert [x[1] for x in lines] == [1, 4, 5, 7]
    assert lines[1][0]["s"].startswith("\ufffd") and lines[1][0]["s"].endswith(" cut emoji")
    assert lines[3][2] == DAMAGED.index(b'["list"]')
    assert (b.records_seen, b.records_ingested) == (a.records_seen, a.records_ingested) == (7, 4)
    assert [(q.line, q.byte_offset, q.error_type, q.reason, q.raw) for q in b.quarantined] == [
        (q.line, q.byte_offset, q.error_type, q.reason, q.raw) for q in a.quarantined
    ]
    assert [q.error_type for q in b.quarantined] == ["json", "utf8", "truncated"]


def test_reject_line_is_reject_of_the_record(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_bytes(b'{"x": 1}\n["no"]\n')
    a, b = _ctx(path), _ctx(path)
    for rec in read_jsonl(path, a):
        if rec.line == 2:
            a.reject(rec, "line 2: not an object")
    for _obj, line, off, raw in read_jsonl_lines(path, b):
        if line == 2:
            b.reject_line(path, line, off, raw, "line 2: not an object")
    assert (b.records_seen, b.records_ingested, b.records_quarantined) == (2, 1, 1)
    assert [asdict(q) for q in b.quarantined] == [asdict(q) for q in a.quarantined]
    assert b.quarantined[0].raw == b'["no"]\n' and b.quarantined[0].byte_offset == 9
