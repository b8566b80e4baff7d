"""LLM endpoint settings: model, URL, key, sampling, concurrency, timeouts, retries and prices.

Resolution order (first wins): explicit arguments (the CLI flags), environment variables, a config
file (`--config FILE`, else `$TRAJLAB_CONFIG`, else `./trajlab.yaml`; keys under `judge:` or
`llm:`), then defaults. The API key is never written anywhere: it is read from the variable named by
`api_key_env` (default `TRAJLAB_JUDGE_API_KEY`, then `OPENAI_API_KEY`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from ..errors import ConfigError

ENV = {
    "model": "TRAJLAB_JUDGE_MODEL",
    "base_url": "TRAJLAB_JUDGE_BASE_URL",
}
FALLBACK_ENV = {"base_url": "OPENAI_BASE_URL"}
KEY_ENVS = ("TRAJLAB_JUDGE_API_KEY", "OPENAI_API_KEY")
CONFIG_ENV = "TRAJLAB_CONFIG"
CONFIG_NAME = "trajlab.yaml"
LOCAL_PLACEHOLDER_KEY = "not-needed"


@dataclass(frozen=True)
class LLMSettings:
    """How to reach an OpenAI-compatible Chat Completions endpoint, and how hard to push it."""

    model: str | None = None
    base_url: str | None = None
    """None = the OpenAI API. Any OpenAI-compatible server works (vLLM, SGLang, Ollama, llama.cpp)."""
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int | None = 0
    max_concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 5
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    max_prompt_tokens: int = 16_000
    max_completion_tokens: int = 800
    max_windows: int = 6
    response_format: Literal["json_schema", "json_object", "none"] = "json_schema"
    taxonomy_detail: Literal["full", "compact"] = "full"
    redact: bool = True
    short_answers: bool = False
    """Ask for a short rationale (<= 160 chars) and one evidence quote of <= 80 chars
    (small local models are slow to generate and ramble)."""
    price_in_per_mtok: float | None = None
    """USD per million prompt tokens (for --dry-run cost estimates)."""
    price_out_per_mtok: float | None = None
    """USD per million completion tokens."""

    @property
    def configured(self) -> bool:
        """A model is named: the LLM judge can run (otherwise the rules judge is the default)."""
        return bool(self.model)

    def resolved_api_key(self) -> str:
        if self.api_key:
            return self.api_key
        names = [self.api_key_env] if self.api_key_env else list(KEY_ENVS)
        for n in names:
            v = os.environ.get(n or "")
            if v:
                return v
        if self.api_key_env:  # named on purpose: sending no key instead would fail later, obscurely
            raise ConfigError(
                f"the API key variable {self.api_key_env} (--api-key-env / api_key_env) is not set or empty"
            )
        if self.base_url:  # local servers (llama.cpp, vLLM, Ollama) usually need no key
            return LOCAL_PLACEHOLDER_KEY
        raise ConfigError(
            f"no API key for the OpenAI API: set {' or '.join(n for n in names if n)}, "
            "or give --base-url for a local OpenAI-compatible server"
        )

    def estimate_cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.price_in_per_mtok is None or self.price_out_per_mtok is None:
            return None
        return (prompt_tokens * self.price_in_per_mtok + completion_tokens * self.price_out_per_mtok) / 1e6

    def public(self) -> dict[str, Any]:
        """The settings without the key (for reports and prompt hashes)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "api_key"}
        d["api_key_set"] = bool(self.api_key)
        return d

    def with_(self, **changes: Any) -> LLMSettings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def resolve(cls, config: str | os.PathLike[str] | None = None, **overrides: Any) -> LLMSettings:
        """Settings from overrides (None = not given), then the environment, then a config file."""
        base = _from_config(config)
        for name, var in ENV.items():
            if os.environ.get(var):
                base[name] = os.environ[var]
        for name, var in FALLBACK_ENV.items():
            if name not in base and os.environ.get(var):
                base[name] = os.environ[var]
        base.update({k: v for k, v in overrides.items() if v is not None})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(base) - known)
        if unknown:
            raise ConfigError(
                f"unknown judge settings: {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        try:
            s = cls(**base)
        except TypeError as e:
            raise ConfigError(f"bad judge settings: {e}") from e
        s.validate()
        return s

    def validate(self) -> None:
        if self.max_concurrency < 1:
            raise ConfigError("concurrency must be at least 1")
        if self.max_prompt_tokens < 512:
            raise ConfigError("max prompt tokens must be at least 512")
        if self.timeout_s <= 0:
            raise ConfigError("timeout must be positive")
        if self.max_retries < 0:
            raise ConfigError("retries cannot be negative")
        if self.response_format not in ("json_schema", "json_object", "none"):
            raise ConfigError(
                f"response_format must be json_schema, json_object or none, not {self.response_format!r}"
            )
        if self.taxonomy_detail not in ("full", "compact"):
            raise ConfigError(f"taxonomy_detail must be full or compact, not {self.taxonomy_detail!r}")


def _from_config(config: str | os.PathLike[str] | None) -> dict[str, Any]:
    path: Path | None = None
    if config is not None:
        path = Path(config)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
    elif os.environ.get(CONFIG_ENV):
        path = Path(os.environ[CONFIG_ENV])
    elif Path(CONFIG_NAME).is_file():
        path = Path(CONFIG_NAME)
    if path is None or not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping")
    section = data.get("judge", data.get("llm", {}))
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: `judge:` must be a mapping of settings")
    if "api_key" in section:
        raise ConfigError(f"{path}: do not store API keys in config files; name a variable with api_key_env")
    return dict(section)
