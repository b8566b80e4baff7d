"""gzip for the app's responses: the ~1.8 MB of JavaScript bundles and the JSON of callbacks and pages.

Static bundles (Dash's fingerprinted component suites, which it marks cacheable for a year, and our
assets) are compressed once per URL and kept; callback responses are compressed per request at a fast
level. Nothing else changes: headers (ETag included) stay, `Vary: Accept-Encoding` is added, and a
client that does not ask for gzip gets the plain bytes.
"""

from __future__ import annotations

import gzip
import threading
from collections import OrderedDict
from typing import Any

from flask import Flask, request

COMPRESSIBLE = {
    "application/javascript",
    "text/javascript",
    "application/json",
    "text/css",
    "text/html",
    "text/plain",
    "image/svg+xml",
}
MIN_SIZE = 1024
STATIC_LEVEL = 9
DYNAMIC_LEVEL = 3
STATIC_PREFIXES = ("/_dash-component-suites/", "/assets/")


class _StaticCache:
    def __init__(self, size: int = 64):
        self.size = size
        self._d: OrderedDict[tuple[str, str, int], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, int], data: bytes) -> bytes:
        with self._lock:
            hit = self._d.get(key)
            if hit is not None:
                self._d.move_to_end(key)
                return hit
        out = gzip.compress(data, STATIC_LEVEL, mtime=0)
        with self._lock:
            self._d[key] = out
            while len(self._d) > self.size:
                self._d.popitem(last=False)
        return out


def install_compression(server: Flask) -> None:
    """Register an `after_request` hook on `server` that gzips compressible responses."""
    cache = _StaticCache()

    @server.after_request
    def _gzip(resp: Any) -> Any:
        if (
            resp.status_code != 200
            or resp.mimetype not in COMPRESSIBLE
            or "Content-Encoding" in resp.headers
            or "gzip" not in request.headers.get("Accept-Encoding", "").lower()
        ):
            return resp
        resp.direct_passthrough = False  # files sent by Flask: read them (assets are small)
        data = resp.get_data()
        if len(data) < MIN_SIZE:
            return resp
        if request.method == "GET" and request.path.startswith(STATIC_PREFIXES):
            body = cache.get((request.full_path, resp.headers.get("ETag", ""), len(data)), data)
        else:
            body = gzip.compress(data, DYNAMIC_LEVEL, mtime=0)
        resp.set_data(body)
        resp.headers["Content-Encoding"] = "gzip"
        # The ETag stays as it is, so Dash's and Flask's If-None-Match checks still answer 304.
        resp.vary.add("Accept-Encoding")
        return resp
