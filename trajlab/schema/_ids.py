"""Content-hash ids. Every id is derived from content, so re-ingesting identical bytes changes nothing."""

from __future__ import annotations

import xxhash

DIGEST_ALGORITHM = "xxh3_128"


def digest_bytes(*parts: bytes | str) -> str:
    """`xxh3_128:<32 hex>` over the parts, separated so that ("ab","c") != ("a","bc")."""
    h = xxhash.xxh3_128()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass") if isinstance(p, str) else p)
        h.update(b"\x00")
    return f"{DIGEST_ALGORITHM}:{h.hexdigest()}"


def short_id(prefix: str, *parts: bytes | str | None) -> str:
    """`<prefix>_<16 hex>` from the parts (None parts count as empty)."""
    h = xxhash.xxh3_128()
    for p in parts:
        if p is None:
            p = b""
        h.update(p.encode("utf-8", "surrogatepass") if isinstance(p, str) else p)
        h.update(b"\x00")
    return f"{prefix}_{h.hexdigest()[:16]}"


def trajectory_id(runner: str, native_key: str | None, source_digest: str, locator: str | None) -> str:
    return short_id("t", runner, native_key, source_digest, locator)


def step_id(trajectory_id: str, step_index: int) -> str:
    return f"{trajectory_id}:{step_index}"
