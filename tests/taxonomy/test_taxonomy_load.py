"""Loading taxonomies by id and path, the bundled copies, and the fixed omni-failure ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajlab.errors import ConfigError, InputFileError
from trajlab.taxonomy import (
    BUNDLED_DIR,
    DETECTORS,
    Taxonomy,
    find_taxonomy,
    load_taxonomy,
    validate_file,
)

REPO = Path(__file__).resolve().parents[2]
OMNI_IDS = [
    "audio_perception",
    "video_perception",
    "insufficient_exploration",
    "knowledge_retrieval",
    "reasoning_calculation",
    "tool_infrastructure",
]


def test_omni_failure_has_the_architecture_ids_in_order() -> None:
    tax = load_taxonomy(REPO / "taxonomy" / "omni-failure.yaml")
    assert tax.id == "omni-failure"
    assert tax.version == "1.0.0"
    assert tax.category_ids == OMNI_IDS
    assert tax.get("audio_perception").name == "Audio perception and extraction"
    assert "tool_infrastructure" in tax and "not_a_failure" not in tax
    with pytest.raises(KeyError, match="not in taxonomy omni-failure"):
        tax.get("nope")


def test_every_category_is_rich() -> None:
    tax = load_taxonomy("omni-failure")
    for c in tax.categories:
        assert len(c.decision_rules) >= 2, c.id
        assert len(c.tie_breakers) >= 2, c.id
        assert len(c.positive_examples) >= 2 and len(c.negative_examples) >= 2, c.id
        assert len(c.signals) >= 2, c.id
    # The tie-breaker the study relies on: wrong transcript vs never transcribed.
    audio = tax.get("audio_perception")
    tb = next(t for t in audio.tie_breakers if t.versus == "insufficient_exploration")
    assert "Transcript was wrong -> audio_perception" in tb.rule
    assert "Never transcribed" in tb.rule


def test_detector_map_routes_rules_signals_to_categories() -> None:
    m = load_taxonomy("omni-failure").detector_map()
    assert m["asr_failed"] == "audio_perception"
    assert m["asr_never_run"] == "insufficient_exploration"
    assert m["frames_never_extracted"] == "insufficient_exploration"
    assert m["command_not_found"] == "tool_infrastructure"
    assert m["network_error"] == "tool_infrastructure"
    assert set(m) <= set(DETECTORS)
    ma = load_taxonomy("multi-agent").detector_map()
    assert ma["repeated_step"] == "coordination_failure"
    assert ma["command_not_found"] == "execution_error"


@pytest.mark.parametrize("name", ["omni-failure.yaml", "multi-agent.yaml"])
def test_bundled_taxonomies_are_the_repo_files(name: str) -> None:
    """The package ships the repository's taxonomy/ folder (a link in a checkout, files in a wheel)."""
    assert (REPO / "taxonomy").resolve() == BUNDLED_DIR
    assert (BUNDLED_DIR / name).is_file()
    assert validate_file(REPO / "taxonomy" / name) == []
    assert '"taxonomy/bundled/*.yaml"' in (REPO / "pyproject.toml").read_text(encoding="utf-8")


def test_an_installed_copy_loads_the_bundled_taxonomies_outside_the_repo(tmp_path) -> None:
    from installed_copy import run_in_installed_copy

    n_omni, n_multi = run_in_installed_copy(
        tmp_path,
        "import trajlab.taxonomy as t; "
        "print(len(t.load_taxonomy('omni-failure').categories), len(t.load_taxonomy('multi-agent').categories))",
    )
    assert int(n_omni) == 6 and int(n_multi) > 0


def test_lookup_order_explicit_then_cwd_then_env_then_bundled(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRAJLAB_TAXONOMY_PATH", raising=False)
    # Nothing local: the bundled copy is used, so a non-editable install works.
    assert find_taxonomy("omni-failure") == BUNDLED_DIR / "omni-failure.yaml"
    src = (REPO / "taxonomy" / "omni-failure.yaml").read_text()
    env_dir = tmp_path / "envdir"
    env_dir.mkdir()
    (env_dir / "omni-failure.yaml").write_text(src.replace('version: "1.0.0"', 'version: "2.0.0"'))
    monkeypatch.setenv("TRAJLAB_TAXONOMY_PATH", str(env_dir))
    assert load_taxonomy("omni-failure").version == "2.0.0"
    (tmp_path / "taxonomy").mkdir()
    (tmp_path / "taxonomy" / "omni-failure.yaml").write_text(
        src.replace('version: "1.0.0"', 'version: "3.0.0"')
    )
    assert load_taxonomy("omni-failure").version == "3.0.0"
    explicit = tmp_path / "mine.yml"
    explicit.write_text(src.replace('version: "1.0.0"', 'version: "4.1"'))
    assert load_taxonomy(explicit).version == "4.1"
    assert load_taxonomy(str(explicit)).version == "4.1"


def test_unknown_id_and_missing_file_are_config_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"no taxonomy .no-such.*known ids: .*omni-failure"):
        load_taxonomy("no-such")
    with pytest.raises(ConfigError, match="does not exist"):
        load_taxonomy(tmp_path / "missing.yaml")


def test_invalid_file_raises_input_file_error_with_line(tmp_path) -> None:
    src = (REPO / "taxonomy" / "omni-failure.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        src.replace(
            "    decision_rules:\n      - An audio step", "    decision_rulez:\n      - An audio step", 1
        )
    )
    with pytest.raises(InputFileError) as ei:
        load_taxonomy(bad)
    # Problems come sorted by line: the category lacks decision_rules (its first line), and has a typo.
    assert ei.value.line == src.splitlines().index("  - id: audio_perception") + 1
    assert "categories[0](audio_perception).decision_rules: required field is missing" in str(ei.value)
    assert "(and 1 more; run `trajlab taxonomy validate" in str(ei.value)
    assert str(bad) in str(ei.value)


def test_content_hash_changes_with_content() -> None:
    a = load_taxonomy("omni-failure")
    data = a.model_dump()
    data["categories"][0]["definition"] += " (edited)"
    b = Taxonomy.model_validate(data)
    assert a.content_hash != b.content_hash
    assert a.content_hash == load_taxonomy("omni-failure").content_hash


def test_plain_strings_are_accepted_for_examples_and_signals() -> None:
    t = Taxonomy.model_validate(
        {
            "id": "tiny",
            "version": "1",
            "name": "Tiny",
            "description": "two categories",
            "categories": [
                {
                    "id": "a",
                    "name": "A",
                    "definition": "d",
                    "decision_rules": ["r"],
                    "positive_examples": ["x"],
                    "signals": ["look at s"],
                },
                {
                    "id": "b",
                    "name": "B",
                    "definition": "d",
                    "decision_rules": ["r"],
                    "positive_examples": ["y"],
                },
            ],
        }
    )
    assert t.categories[0].positive_examples[0].text == "x"
    assert t.categories[0].signals[0].description == "look at s"
    assert t.categories[0].signals[0].detector is None
