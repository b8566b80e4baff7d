"""The LLM behind the skill writer and editor: any OpenAI-compatible Chat Completions endpoint.

Settings are the judge's (`trajlab.judge` LLMSettings: `TRAJLAB_JUDGE_MODEL`, `TRAJLAB_JUDGE_BASE_URL`,
key from `TRAJLAB_JUDGE_API_KEY`/`OPENAI_API_KEY`, or `trajlab.yaml`), so one endpoint serves both.
Calls are deterministic where the server allows (temperature 0, fixed seed) and cached on disk by
a hash of model, messages and sampling parameters, so a rerun reproduces the same skill offline.
Every text passed in must already be redacted (see `excerpt`).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError, TrajlabError
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


@dataclass
class ChatSettings:
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.0
    seed: int = 0
    timeout_s: float = 120.0
    max_retries: int = 3

    @classmethod
    def resolve(
        cls, model: str | None = None, base_url: str | None = None, config: str | None = None
    ) -> ChatSettings:
        """The judge's endpoint settings (flags > environment > trajlab.yaml)."""
        try:
            from ..judge._settings import LLMSettings  # same settings as the judge
        except ImportError:  # pragma: no cover - the judge package ships with trajlab
            LLMSettings = None
        if LLMSettings is None:
            if not model:
                raise ConfigError("no model given for the LLM writer (use --model)")
            return cls(model=model, base_url=base_url)
        s = LLMSettings.resolve(config, model=model, base_url=base_url)
        if not s.model:
            raise ConfigError(
                "no LLM configured: give --model (and --base-url for a local server) or set TRAJLAB_JUDGE_MODEL"
            )
        return cls(
            model=s.model,
            base_url=s.base_url,
            api_key=s.resolved_api_key(),
            temperature=s.temperature,
            seed=s.seed or 0,
            timeout_s=s.timeout_s,
            max_retries=s.max_retries,
        )


class OpenAIChat:
    """Chat Completions over the `openai` package, with an on-disk response cache."""

    def __init__(self, settings: ChatSettings, cache_dir: str | Path | None = None):
        self.settings = settings
        self.model = settings.model
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.requests = 0
        self.cached = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._client: Any = None

    def _key(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        s = self.settings
        blob = json.dumps(
            {"model": s.model, "messages": messages, "t": s.temperature, "seed": s.seed, "max": max_tokens},
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def complete(self, messages: list[dict[str, str]], max_tokens: int = 800) -> str:
        key = self._key(messages, max_tokens)
        path = self.cache_dir / f"{key}.json" if self.cache_dir else None
        if path is not None and path.exists():
            self.cached += 1
            return json.loads(path.read_text(encoding="utf-8"))["content"]
        content = self._call(messages, max_tokens)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"model": self.model, "content": content}), encoding="utf-8")
            tmp.replace(path)
        return content

    def _call(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        import openai

        s = self.settings
        if self._client is None:
            self._client = openai.OpenAI(
                base_url=s.base_url, api_key=s.api_key or "not-needed", timeout=s.timeout_s, max_retries=0
            )
        last: Exception | None = None
        for attempt in range(s.max_retries + 1):
            try:
                self.requests += 1
                r = self._client.chat.completions.create(
                    model=s.model,
                    messages=messages,  # type: ignore[arg-type]
                    temperature=s.temperature,
                    seed=s.seed,
                    max_tokens=max_tokens,
                )
                if r.usage is not None:
                    self.prompt_tokens += r.usage.prompt_tokens or 0
                    self.completion_tokens += r.usage.completion_tokens or 0
                content = r.choices[0].message.content if r.choices else None
                if not content:
                    raise LLMError("the endpoint returned an empty answer")
                return content
            except (
                openai.APIConnectionError,
                openai.APITimeoutError,
                openai.RateLimitError,
                openai.InternalServerError,
            ) as e:
                last = e
                time.sleep(min(0.25 * 2**attempt, 5.0))
            except openai.APIError as e:
                raise LLMError(f"LLM endpoint error: {e}") from e
        raise LLMError(f"LLM endpoint unreachable after {s.max_retries + 1} attempts: {last}")


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
