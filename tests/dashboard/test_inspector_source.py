"""The step inspector names the file a step's `source_line` counts lines of, when not the run's own."""

from __future__ import annotations

import json

from trajlab.dashboard._inspector import _source_file


def test_the_file_of_a_sub_agents_step() -> None:
    md = json.dumps({"source_file": "s1/subagents/agent-a1.jsonl", "compaction_agent": True})
    assert _source_file({"metadata": md}) == "s1/subagents/agent-a1.jsonl"


def test_no_file_for_the_runs_own_steps_or_damaged_metadata() -> None:
    assert _source_file({"metadata": None}) is None
    assert _source_file({}) is None
    assert _source_file({"metadata": json.dumps({"phase": "agent"})}) is None
    assert _source_file({"metadata": '{"source_file": '}) is None  # not JSON
    assert _source_file({"metadata": json.dumps(["source_file"])}) is None  # not an object
    assert _source_file({"metadata": json.dumps({"source_file": 7})}) is None
