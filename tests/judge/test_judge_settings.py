"""LLMSettings resolution (flags > env > config file) and the client wrapper's retry policy."""

from __future__ import annotations

import pytest
from llm_servers import Reply, Status

from trajlab.errors import ConfigError
from trajlab.judge import LLMClient, LLMRequestError, LLMSettings, ResponseCache


def test_resolution_order(tmp_path, monkeypatch) -> None:
    for v in ("TRAJLAB_JUDGE_MODEL", "TRAJLAB_JUDGE_BASE_URL", "OPENAI_BASE_URL", "TRAJLAB_CONFIG"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.chdir(tmp_path)
    assert not LLMSettings.resolve().configured
    (tmp_path / "trajlab.yaml").write_text(
        "judge:\n  model: from-config\n  max_concurrency: 3\n  base_url: http://cfg/v1\n"
    )
    s = LLMSettings.resolve()
    assert (s.model, s.max_concurrency, s.base_url) == ("from-config", 3, "http://cfg/v1")
    monkeypatch.setenv("TRAJLAB_JUDGE_MODEL", "from-env")
    assert LLMSettings.resolve().model == "from-env"
    assert LLMSettings.resolve(model="from-flag").model == "from-flag"
    assert LLMSettings.resolve(model=None).model == "from-env"  # None = flag not given


def test_api_key_comes_from_the_environment_only(monkeypatch) -> None:
    monkeypatch.delenv("TRAJLAB_JUDGE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="no API key for the OpenAI API"):
        LLMSettings(model="gpt-x").resolved_api_key()
    assert LLMSettings(model="m", base_url="http://127.0.0.1:1/v1").resolved_api_key() == "not-needed"
    monkeypatch.setenv("MY_KEY", "secret-value")
    s = LLMSettings(model="m", api_key_env="MY_KEY")
    assert s.resolved_api_key() == "secret-value"
    assert "secret-value" not in repr(s) and "api_key" not in s.public()


def test_bad_settings_are_config_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match="unknown judge settings: bogus"):
        LLMSettings.resolve(bogus=1)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("judge: [1, 2]\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        LLMSettings.resolve(cfg)
    with pytest.raises(ConfigError, match="does not exist"):
        LLMSettings.resolve(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="max prompt tokens"):
        LLMSettings.resolve(max_prompt_tokens=10)


def test_client_honours_retry_after_and_caches(tmp_path, scripted_llm) -> None:
    srv = scripted_llm(script=[Status(429, retry_after=0.4), Status(503), Reply('{"ok": 1}')])
    slept: list[float] = []
    s = LLMSettings(model="m", base_url=srv.base_url, backoff_s=0.01, max_backoff_s=1.0, max_retries=3)
    c = LLMClient(s, cache=ResponseCache(tmp_path / "cache"), sleep=slept.append)
    comp = c.chat([{"role": "user", "content": "hi"}], schema={"type": "object"})
    assert comp.content == '{"ok": 1}' and comp.attempts == 3 and not comp.cached
    assert slept[0] >= 0.4  # Retry-After wins over the small exponential backoff
    assert slept[1] < 0.1
    again = c.chat([{"role": "user", "content": "hi"}], schema={"type": "object"})
    assert again.cached and again.attempts == 0 and srv.n_requests == 3
    assert c.stats.as_dict() == {
        "requests": 3,
        "retries": 2,
        "cache_hits": 1,
        "cache_write_errors": 0,
        "prompt_tokens": comp.prompt_tokens,
        "completion_tokens": 20,
        "failures": 0,
    }


def test_an_answer_the_cache_cannot_store_is_still_used(tmp_path, scripted_llm) -> None:
    """A full disk under the response cache: the answer was paid for, so it is returned (and counted),
    not lost in an OSError that stopped the judge run."""
    from tmpfs import fill, tmpfs

    srv = scripted_llm(script=[Reply('{"ok": 1}'), Reply('{"ok": 2}')])
    s = LLMSettings(model="m", base_url=srv.base_url, backoff_s=0.01, max_retries=0)
    with tmpfs(tmp_path / "fs", 1) as fs:
        (fs / "cache").mkdir()
        fill(fs)
        c = LLMClient(s, cache=ResponseCache(fs / "cache"), sleep=lambda s: None)
        comp = c.chat([{"role": "user", "content": "hi"}], schema={"type": "object"})
        assert comp.content == '{"ok": 1}' and not comp.cached
        assert c.stats.cache_write_errors == 1
        assert [p for p in (fs / "cache").rglob("*") if p.is_file()] == []  # no entry, no temporary file
        again = c.chat([{"role": "user", "content": "hi"}], schema={"type": "object"})
        assert again.content == '{"ok": 2}' and not again.cached and srv.n_requests == 2


def test_client_gives_up_with_a_typed_error(scripted_llm) -> None:
    srv = scripted_llm(responder=lambda req, n: Status(502))
    c = LLMClient(
        LLMSettings(model="m", base_url=srv.base_url, backoff_s=0.001, max_retries=2), sleep=lambda s: None
    )
    with pytest.raises(LLMRequestError) as ei:
        c.chat([{"role": "user", "content": "hi"}])
    assert ei.value.status == 502 and ei.value.attempts == 3 and ei.value.retryable
    assert srv.n_requests == 3
