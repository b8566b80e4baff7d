"""A thin, reusable wrapper over the `openai` client for JSON answers from any compatible endpoint.

It adds what a batch job needs and the SDK leaves to the caller: a bound on concurrent requests
shared by every thread, retries with exponential backoff (honouring Retry-After) on 429, 5xx,
timeouts and broken connections, JSON-schema structured output with a fallback for servers that do
not support it, a content-hash response cache, and token accounting.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai
import orjson

from ..errors import TrajlabError
from ..redact import redact
from ._cache import ResponseCache, cache_key
from ._settings import LOCAL_PLACEHOLDER_KEY, LLMSettings

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class LLMRequestError(TrajlabError):
    """A request failed for good (non-retryable error, or retries exhausted)."""

    def __init__(self, message: str, status: int | None = None, attempts: int = 1, retryable: bool = False):
        self.status = status
        self.attempts = attempts
        self.retryable = retryable
        super().__init__(message)


@dataclass
class Completion:
    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None
    finish_reason: str | None = None
    attempts: int = 0
    """HTTP requests made for this completion (0 when served from the cache)."""
    cached: bool = False


@dataclass
class ClientStats:
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    cache_write_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _retry_after(err: Exception) -> float | None:
    resp = getattr(err, "response", None)
    headers = getattr(resp, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return float(ra)
    except ValueError:
        try:
            dt = email.utils.parsedate_to_datetime(ra)
        except (TypeError, ValueError):
            return None
        return max(0.0, dt.timestamp() - time.time())


def _format_unsupported(err: openai.BadRequestError) -> bool:
    text = str(err).lower()
    return "response_format" in text or "json_schema" in text or "schema" in text


class LLMClient:
    """Chat Completions with retries, a concurrency bound, structured output and a cache (thread-safe)."""

    def __init__(
        self,
        settings: LLMSettings,
        cache: ResponseCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
        client: openai.OpenAI | None = None,
    ):
        if not settings.model:
            raise TrajlabError("LLMClient needs a model name (settings.model)")
        self.settings = settings
        self.cache = cache
        self._sleep = sleep
        self._client = client or openai.OpenAI(
            api_key=settings.resolved_api_key(),
            base_url=settings.base_url,
            timeout=settings.timeout_s,
            max_retries=0,  # retries are ours: backoff, Retry-After and accounting in one place
        )
        self._sem = threading.BoundedSemaphore(settings.max_concurrency)
        self._lock = threading.Lock()
        self.stats = ClientStats()
        self.response_format = settings.response_format

    # -- public ----------------------------------------------------------------------------------

    def request_payload(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None,
        name: str,
        max_tokens: int | None,
        response_format: str | None = None,
    ) -> dict[str, Any]:
        """The exact request body (`response_format`: None = the one in use, after any fallback)."""
        s = self.settings
        response_format = response_format or self.response_format
        body: dict[str, Any] = {
            "model": s.model,
            "messages": messages,
            "temperature": s.temperature,
            "max_tokens": max_tokens or s.max_completion_tokens,
        }
        if s.seed is not None:
            body["seed"] = s.seed
        if schema is not None and response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            }
        elif schema is not None and response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def cache_key(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None = None,
        name: str = "answer",
        max_tokens: int | None = None,
    ) -> str:
        """The response-cache key of a request: endpoint and body in the *configured* response format.

        Not the format in use after a json_schema -> json_object fallback: a new client starts from
        the configured format again, so keys of the fallback format would never be found on a rerun.
        """
        body = self.request_payload(messages, schema, name, max_tokens, self.settings.response_format)
        return cache_key({"base_url": self.settings.base_url or "openai", **body})

    def forget(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None = None,
        name: str = "answer",
        max_tokens: int | None = None,
    ) -> None:
        """Drop a cached response (one the caller could not use), so the next run sends it again."""
        if self.cache is not None:
            self.cache.delete(self.cache_key(messages, schema, name, max_tokens))

    def chat(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None = None,
        name: str = "answer",
        max_tokens: int | None = None,
        use_cache: bool = True,
    ) -> Completion:
        """One completion; retried on transient errors; raises LLMRequestError when it gives up."""
        body = self.request_payload(messages, schema, name, max_tokens)
        key = self.cache_key(messages, schema, name, max_tokens)
        if use_cache and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and isinstance(hit.get("content"), str):
                with self._lock:
                    self.stats.cache_hits += 1
                return Completion(
                    content=hit["content"],
                    prompt_tokens=int(hit.get("prompt_tokens") or 0),
                    completion_tokens=int(hit.get("completion_tokens") or 0),
                    model=hit.get("model"),
                    finish_reason=hit.get("finish_reason"),
                    attempts=0,
                    cached=True,
                )
        comp = self._send(body, schema, name, max_tokens)
        if self.cache is not None and comp.finish_reason != "length":
            entry = {
                "content": comp.content,
                "prompt_tokens": comp.prompt_tokens,
                "completion_tokens": comp.completion_tokens,
                "model": comp.model,
                "finish_reason": comp.finish_reason,
            }
            if not self.cache.put(key, entry):
                with self._lock:
                    self.stats.cache_write_errors += 1
        return comp

    # -- internals -------------------------------------------------------------------------------

    def _backoff(self, attempt: int, err: Exception | None) -> float:
        s = self.settings
        delay = min(s.max_backoff_s, s.backoff_s * (2 ** (attempt - 1))) * random.uniform(0.8, 1.2)
        ra = _retry_after(err) if err is not None else None
        if ra is not None:
            delay = max(delay, min(ra, s.max_backoff_s * 2))
        return delay

    def _send(
        self, body: dict[str, Any], schema: dict[str, Any] | None, name: str, max_tokens: int | None
    ) -> Completion:
        s = self.settings
        attempts = 0
        last: str = "no attempt made"
        status: int | None = None
        while True:
            attempts += 1
            err: Exception | None = None
            try:
                with self._sem:
                    with self._lock:
                        self.stats.requests += 1
                    # The documented `client.post` for raw requests: same transport, auth, timeouts
                    # and typed errors, without the SDK's per-request transformation of the (large)
                    # body and response models, which cost more CPU than the rest of a judge call.
                    text = self._client.post("/chat/completions", cast_to=str, body=body)
            except openai.BadRequestError as e:
                if schema is not None and self.response_format == "json_schema" and _format_unsupported(e):
                    # The server does not do JSON-schema output: fall back to JSON mode for the rest of the run.
                    self.response_format = "json_object"
                    body = self.request_payload(body["messages"], schema, name, max_tokens)
                    attempts -= 1
                    continue
                self._failed()
                raise LLMRequestError(f"request rejected (HTTP 400): {self._short(e)}", 400, attempts) from e
            except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as e:
                self._failed()
                raise LLMRequestError(
                    f"request refused (HTTP {e.status_code}): {self._short(e)}", e.status_code, attempts
                ) from e
            except openai.APIStatusError as e:
                status = e.status_code
                if status not in RETRY_STATUS:
                    self._failed()
                    raise LLMRequestError(f"HTTP {status}: {self._short(e)}", status, attempts) from e
                err, last = e, f"HTTP {status}"
            except openai.APITimeoutError as e:
                err, last, status = e, f"timed out after {s.timeout_s:g}s", None
            except openai.APIConnectionError as e:
                err, last, status = e, f"connection error: {self._short(e)}", None
            except (openai.APIResponseValidationError, ValueError) as e:
                err, last, status = e, f"malformed response: {self._short(e)}", None
            else:
                try:
                    resp = orjson.loads(text)
                    choice = resp["choices"][0]
                    content = choice["message"].get("content") or ""
                except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError) as e:
                    err, last = e, f"malformed response: {self._short(e, 120)}"
                else:
                    usage = resp.get("usage") or {}
                    comp = Completion(
                        content=str(content),
                        prompt_tokens=int(usage.get("prompt_tokens") or 0),
                        completion_tokens=int(usage.get("completion_tokens") or 0),
                        model=resp.get("model"),
                        finish_reason=choice.get("finish_reason"),
                        attempts=attempts,
                    )
                    with self._lock:
                        self.stats.prompt_tokens += comp.prompt_tokens
                        self.stats.completion_tokens += comp.completion_tokens
                    return comp
            if attempts > s.max_retries:
                self._failed()
                raise LLMRequestError(
                    f"{last}; gave up after {attempts} attempts", status, attempts, retryable=True
                ) from err
            with self._lock:
                self.stats.retries += 1
            self._sleep(self._backoff(attempts, err))

    def _short(self, e: Exception, n: int = 300) -> str:
        """An error's text for a status reason (stored in the lab and printed): the API key, and any
        other secret a server echoed back (some quote the key they rejected), redacted first."""
        text = " ".join(str(e).split())
        key = getattr(self._client, "api_key", None)
        if isinstance(key, str) and len(key) >= 8 and key != LOCAL_PLACEHOLDER_KEY:
            text = text.replace(key, "[REDACTED:api_key]")
        text = redact(text)
        return text if len(text) <= n else text[: n - 1] + "…"

    def _failed(self) -> None:
        with self._lock:
            self.stats.failures += 1
