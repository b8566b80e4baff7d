"""The LLM behind the skill writer and editor: any OpenAI-compatible Chat Completions endpoint.

Settings and client are the judge's (`trajlab.judge.LLMSettings` / `LLMClient`: `TRAJLAB_JUDGE_MODEL`,
`TRAJLAB_JUDGE_BASE_URL`, key from `TRAJLAB_JUDGE_API_KEY`/`OPENAI_API_KEY`, or `trajlab.yaml`), so
one endpoint serves both. Calls are deterministic where the server allows (temperature 0, fixed
seed), retried with backoff, and cached on disk by the request body, so a rerun reproduces the same
skill offline.
Every text passed in must already be redacted (see `excerpt`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError, TrajlabError
from ..judge import LLMClient, LLMRequestError, LLMSettings, ResponseCache
from ..redact import redact

EXCERPT_CHARS = 200


class LLMError(TrajlabError):
    """The endpoint failed or answered with something unusable."""


def excerpt(text: str | None, limit: int = EXCERPT_CHARS) -> str:
    """A short, secret-free excerpt of trajectory text (data, never instructions)."""
    t = redact(text or "")
    t = " ".join(t.split())
    return t if len(t) <= limit else t[: limit - 1] + "…"


class ChatClient(Protocol):
    model: str

    def complete(self, messages: list[dict[str, str]], max_tokens: int = 800) -> str: ...


class JudgeChat:
    """The judge's `LLMClient` (retries, backoff, response cache) behind the small ChatClient interface."""

    def __init__(
        self, settings: LLMSettings, cache_dir: str | Path | None = None, max_tokens: int | None = None
    ):
        if not settings.model:
            raise ConfigError(
                "no LLM configured: give --model (and --base-url for a local server) or set TRAJLAB_JUDGE_MODEL"
            )
        self.settings = settings
        self.model = settings.model
        self.client = LLMClient(settings, ResponseCache(cache_dir) if cache_dir else None)
        self.max_tokens = max_tokens  # a cap on every answer (small local models ramble)

    @classmethod
    def resolve(
        cls,
        model: str | None = None,
        base_url: str | None = None,
        config: str | None = None,
        cache_dir: str | Path | None = None,
        seed: int | None = None,
    ) -> JudgeChat:
        """Settings as the judge resolves them: flags, then environment, then trajlab.yaml."""
        return cls(LLMSettings.resolve(config, model=model, base_url=base_url, seed=seed), cache_dir)

    @property
    def requests(self) -> int:
        return self.client.stats.requests

    @property
    def cached(self) -> int:
        return self.client.stats.cache_hits

    def complete(self, messages: list[dict[str, str]], max_tokens: int = 800) -> str:
        try:
            cap = min(max_tokens, self.max_tokens) if self.max_tokens else max_tokens
            comp = self.client.chat(messages, max_tokens=cap)
        except LLMRequestError as e:
            raise LLMError(f"LLM endpoint error: {e}") from e
        if not comp.content:
            raise LLMError("the endpoint returned an empty answer")
        return comp.content


def parse_json_answer(text: str) -> Any:
    """The JSON object in a model answer (tolerates code fences and prose around it)."""
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else t
        t = t.rsplit("```", 1)[0]
    start, end = t.find("{"), t.rfind("}")
    if start < 0 or end <= start:
        raise LLMError("the model answer holds no JSON object")
    try:
        return json.loads(t[start : end + 1])
    except json.JSONDecodeError as e:
        raise LLMError(f"the model answer is not valid JSON: {e}") from e


def prompt_hash(*parts: str) -> str:
    return "sha256:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
