"""Content-hash ids. Every id is derived from content, so re-ingesting identical bytes changes nothing."""

from __future__ import annotations

from typing import Any

import orjson
import xxhash

DIGEST_ALGORITHM = "xxh3_128"


def _part(p: Any) -> bytes:
    """A part's bytes: text as UTF-8, bytes as they are, None as empty, anything else (a runner's id
    that is a number, a boolean or an object: damaged input) as its JSON text, so the id is still stable."""
    if isinstance(p, str):
        return p.encode("utf-8", "surrogatepass")
    if p is None:
        return b""
    if isinstance(p, (bytes, bytearray, memoryview)):
        return bytes(p)
    return orjson.dumps(p, default=str, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def digest_bytes(*parts: bytes | str) -> str:
    """`xxh3_128:<32 hex>` over the parts, separated so that ("ab","c") != ("a","bc")."""
    h = xxhash.xxh3_128()
    for p in parts:
        h.update(_part(p))
        h.update(b"\x00")
    return f"{DIGEST_ALGORITHM}:{h.hexdigest()}"


def short_id(prefix: str, *parts: bytes | str | None) -> str:
    """`<prefix>_<16 hex>` from the parts (None parts count as empty)."""
    h = xxhash.xxh3_128()
    for p in parts:
        h.update(_part(p))
        h.update(b"\x00")
    return f"{prefix}_{h.hexdigest()[:16]}"


def trajectory_id(runner: str, native_key: str | None, source_digest: str, locator: str | None) -> str:
    return short_id("t", runner, native_key, source_digest, locator)


def step_id(trajectory_id: str, step_index: int) -> str:
    return f"{trajectory_id}:{step_index}"
