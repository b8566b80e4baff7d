"""Adapter regexes over message text stay linear on hostile input and find what they found before."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from trajlab.formats import chat_messages, claude_code, mini_swe_agent, who_and_when
from trajlab.formats._scan import through_last

PIECES = ["<think>", "</think>", "```", "\n```", "```bash\n", "<output>", "</output>", "a", "\n", " "]


@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_searching_up_to_the_last_closer_finds_the_same(pieces: list[str]) -> None:
    text = "".join(pieces)
    for rx, closer in (
        (chat_messages._THINK_RE, "</think>"),
        (mini_swe_agent._ACTION_RE, "\n```"),
        (mini_swe_agent._OUTPUT_RE, "</output>"),
        (who_and_when._CODE_RE, "```"),
    ):
        assert rx.findall(text, 0, through_last(text, closer)) == rx.findall(text)


def test_code_fences_keep_their_language_and_a_short_info_string() -> None:
    assert who_and_when._code_blocks("x\n```python title=a.py\nprint(1)\n```") == [("python", "print(1)\n")]
    # the info string is bounded (200 characters): a longer first line is no fence opening
    assert who_and_when._code_blocks("```sh " + "x" * 300 + "\nls\n```") == []


def test_many_unclosed_openings_cost_linear_time() -> None:
    """Each of these took seconds at 8,000 repetitions and grew with the square of the length; at
    200,000 (1-3 MB) they would take hours. Now they return at once."""
    n = 200_000
    assert who_and_when._code_blocks("```x" * n) == []
    assert chat_messages._THINK_RE.findall("<think>a" * n, 0, through_last("<think>a" * n, "</think>")) == []
    assert claude_code._slash_prompt("<command-name>a" * n) is None
    text = "<output>a" * n
    assert mini_swe_agent._OUTPUT_RE.search(text, 0, through_last(text, "</output>")) is None


def test_a_chat_log_with_many_unclosed_think_tags_ingests(tmp_path) -> None:
    from trajlab.ingest import ingest
    from trajlab.store import Lab

    body = "<think>a" * 200_000
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "chat.json").write_text(
        json.dumps([{"role": "user", "content": "q?"}, {"role": "assistant", "content": body}])
    )
    report = ingest([tmp_path / "runs"], tmp_path / "lab", workers=1, progress=False)
    assert report.records_seen == report.records_ingested + report.records_quarantined
    steps = Lab.open(tmp_path / "lab").read("steps", ["kind", "text"]).to_pylist()
    assert [s["kind"] for s in steps] == ["user", "assistant"] and steps[1]["text"] == body
