"""`validate_file` names the line and field of every problem; the CLI prints them and exits 1."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from trajlab.cli import cli
from trajlab.taxonomy import validate_file, validate_text

REPO = Path(__file__).resolve().parents[2]
OMNI = (REPO / "taxonomy" / "omni-failure.yaml").read_text()

BAD = """\
format: 1
id: Bad Id
version: "v1"
name: x
description: y
categories:
  - id: a
    name: A
    definition: d
    decision_rules: []
    positive_examples: [ex]
    signals:
      - description: s
        detector: nope
    tie_breakers:
      - versus: zzz
        rule: r
  - id: a
    name: A2
    definiton: d
    decision_rules: [r]
    positive_examples: [ex]
    name: dup
"""


def test_every_problem_has_line_and_field(tmp_path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(BAD)
    problems = validate_file(f)
    expected = [
        f"{f}:2: id: 'Bad Id' must be lowercase letters, digits, '_' or '-', starting with a letter",
        f"{f}:3: version: 'v1' must look like 1, 1.2 or 1.2.3",
        f"{f}:10: categories[0](a).decision_rules: List should have at least 1 item",
        f"{f}:14: categories[0](a).signals[0].detector: unknown detector 'nope'",
        f"{f}:16: categories[0](a).tie_breakers[0].versus: unknown category 'zzz'",
        f"{f}:18: categories[1](a).definition: required field is missing",
        f"{f}:18: categories[1](a).id: duplicate category id 'a'",
        f"{f}:20: categories[1](a).definiton: unknown field",
    ]
    assert problems[0] == f"{f}:23: duplicate key 'name'"
    problems = problems[1:]
    assert len(problems) == len(expected)
    for want, got in zip(expected, problems):
        assert got.startswith(want), (want, got)


def test_syntax_error_and_wrong_top_level() -> None:
    assert validate_text("a: [1, 2", "x.yaml") == [
        "x.yaml:1: YAML syntax error: expected ',' or ']', but got '<stream end>'"
    ]
    assert validate_text("- 1\n", "x.yaml")[0].startswith("x.yaml:1: a taxonomy file must be a YAML mapping")
    assert validate_text("", "x.yaml")[0].startswith("x.yaml:1: a taxonomy file must be a YAML mapping")


def test_unquoted_version_and_self_tie_breaker() -> None:
    text = OMNI.replace('version: "1.0.0"', "version: 1.0")
    (p,) = validate_text(text, "o.yaml")
    assert p.startswith("o.yaml:6: version: 1.0 must be a quoted string")
    text = OMNI.replace(
        "      - versus: insufficient_exploration\n        rule: >-\n          Transcript",
        "      - versus: audio_perception\n        rule: >-\n          Transcript",
        1,
    )
    (p,) = validate_text(text, "o.yaml")
    assert (
        "categories[0](audio_perception).tie_breakers[0].versus: a tie-breaker cannot be versus its own" in p
    )


def test_reserved_label_cannot_be_a_category() -> None:
    text = OMNI.replace("  - id: tool_infrastructure", "  - id: unsure", 1)
    problems = validate_text(text, "o.yaml")
    assert any("categories[5](unsure).id: 'unsure' is reserved" in p for p in problems), problems


def test_cli_validate_show_schema(tmp_path) -> None:
    runner = CliRunner()
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    r = runner.invoke(cli, ["taxonomy", "validate", str(bad), "omni-failure"])
    assert r.exit_code == 1
    assert f"{bad}:23: duplicate key 'name'" in r.output
    assert "omni-failure.yaml: ok (omni-failure v1.0.0, 6 categories)" in r.output
    r = runner.invoke(cli, ["taxonomy", "validate", "multi-agent"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["taxonomy", "show", "omni-failure"])
    assert r.exit_code == 0
    assert "insufficient_exploration" in r.output and "asr_never_run" in r.output
    r = runner.invoke(cli, ["taxonomy", "show", "multi-agent", "--format", "json"])
    assert json.loads(r.output)["id"] == "multi-agent"
    r = runner.invoke(cli, ["taxonomy", "show", "omni-failure", "--format", "markdown"])
    assert "## `audio_perception`: Audio perception and extraction" in r.output
    r = runner.invoke(cli, ["taxonomy", "schema"])
    schema = json.loads(r.output)
    assert schema["title"] == "Taxonomy"
    assert "categories" in schema["required"]
    r = runner.invoke(cli, ["taxonomy", "show", "nope"])
    assert r.exit_code == 1 and "Error: no taxonomy 'nope'" in r.output


def test_a_misspelt_category_after_an_arrow_in_a_rule_is_named() -> None:
    """Free-text rules send cases on as `-> category_id`; an id there that no category has is reported
    with its field (a decision rule or a tie-breaker rule), words without `_` are prose and pass."""
    text = OMNI.replace(
        "transcript was wrong -> audio_perception.", "transcript was wrong -> audio_perceptoin."
    ).replace(
        "- The task needs a modality", "- Goes -> reasoning_calculaton when the task needs a modality", 1
    )
    problems = validate_text(text, "omni.yaml")
    assert len(problems) == 2, problems
    assert any(
        "tie_breakers[0].rule: rule sends cases to unknown category 'audio_perceptoin'" in p for p in problems
    )
    assert any(
        ".decision_rules[0]: rule sends cases to unknown category 'reasoning_calculaton'" in p
        for p in problems
    )
    assert all(p.startswith("omni.yaml:") for p in problems)
    assert validate_text(OMNI, "omni.yaml") == []
    assert validate_text(OMNI.replace("-> audio_perception.", "-> not_a_failure.", 1), "omni.yaml") == []
