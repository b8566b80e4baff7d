"""Type-safe access to runner JSON, shared by the ATIF, Terminal-Bench, OpenHands, SWE-agent,
mini-swe-agent, LLM-in-Sandbox and Kira adapters.

Runner files are data: any field may hold any JSON type. These keep a wrong type from turning into
an exception, a dict used as a key, or a list summed as a token count; `rollback` undoes the steps
of a record that turned out malformed so it can be quarantined whole.
"""

from __future__ import annotations

import json
from typing import Any

from ._base import CallLinker

BAD_SHAPE = (TypeError, AttributeError, ValueError, KeyError, IndexError)


def raw_of_obj(obj: Any) -> bytes:
    """JSON bytes of a parsed JSON value, for a quarantine record: a string keeps its quotes, null is
    `null` and an overflowing number (`1e999`) is `Infinity`, not null as orjson would write it. The
    stdlib encoder: quarantine is the rare path."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str).encode(
        "utf-8", "surrogatepass"
    )


def as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def as_str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def as_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def as_num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def as_id(v: Any) -> str | None:
    """A call/event id usable as a key: strings and integers only."""
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        return None
    return str(v)


def rollback(steps: list[dict[str, Any]], links: list[CallLinker], n: int) -> None:
    """Drop the steps a rejected record added after index `n` (and their call ids from the linkers)."""
    removed = steps[n:]
    del steps[n:]
    for link in links:
        for s in removed:
            cid = s.get("call_id")
            if cid and link.by_id.get(cid) is s:
                del link.by_id[cid]
            if "_early" in s:  # the call had taken results that came before it: orphans again
                s["_early"][0].unpair(s)
        if link.early:  # orphan results of the rejected record wait for no call
            gone = {id(s) for s in removed}
            for cid in [c for c, rows in link.early.items() if any(id(r) in gone for r, _ in rows)]:
                rows = [x for x in link.early[cid] if id(x[0]) not in gone]
                if rows:
                    link.early[cid] = rows
                else:
                    del link.early[cid]
