"""Incremental ingest after trajlab changed: a unit whose bytes did not change is parsed again when the
adapter that parsed it has a new version, or when a file no adapter knew is now claimed by one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from trajlab.dag import build_lab
from trajlab.formats import Adapter, ParseContext, ParsedTrajectory, SourceUnit, adapters, hookimpl
from trajlab.formats import get_adapter as _get_adapter
from trajlab.formats._registry import plugin_manager
from trajlab.ingest import ingest
from trajlab.store import Lab, query

CC = _get_adapter("claude-code").version
"""The Claude Code adapter's version (2 since its branch fix)."""
CX = _get_adapter("codex-rollout").version
"""The Codex adapter's version (2 since calls it refused are errors)."""


def _sources(lab_dir: Path) -> dict[str, dict]:
    rows = query(
        Lab.open(lab_dir), "select source_path, format, adapter_version, status, trajectory_ids from sources"
    ).to_pylist()
    return {Path(r["source_path"]).name: r for r in rows}


def test_a_new_adapter_version_reparses_only_its_units(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, invariant
) -> None:
    lab = tmp_path / "lab"
    ingest([runs], lab, workers=1, progress=False)
    build_lab(lab, progress=False)
    before = _sources(lab)
    assert {r["format"]: r["adapter_version"] for r in before.values()} == {
        "codex-rollout": CX,
        "claude-code": CC,
    }

    monkeypatch.setattr(type(_get_adapter("codex-rollout")), "version", CX + 1)
    rep = ingest([runs], lab, workers=1, progress=False)
    assert rep.commits == 1
    assert {k: (v.files, v.unchanged) for k, v in rep.runners.items()} == {
        "codex": (1, 0),
        "claude_code": (0, 1),
    }
    assert rep.reparsed == {f"codex-rollout v{CX} -> v{CX + 1}": 1}
    assert f"parsed again, bytes unchanged: 1 unit codex-rollout v{CX} -> v{CX + 1}" in rep.format()
    after = _sources(lab)
    assert {r["format"]: r["adapter_version"] for r in after.values()} == {
        "codex-rollout": CX + 1,
        "claude-code": CC,
    }
    # same bytes, same ids: the runs were replaced, not added
    assert {k: r["trajectory_ids"] for k, r in after.items()} == {
        k: r["trajectory_ids"] for k, r in before.items()
    }
    assert query(Lab.open(lab), "select count(*) n from trajectories").to_pylist() == [{"n": 2}]
    invariant(Lab.open(lab))
    # the re-parsed run's DAG rows went with its old steps (they may not match the new ones); the other
    # run's stay, and `trajlab dag` builds the missing one
    dags = query(Lab.open(lab), "select t.runner from dag_metrics join trajectories t using (trajectory_id)")
    assert dags.to_pylist() == [{"runner": "claude_code"}]
    assert build_lab(lab, progress=False).built == 1

    again = ingest([runs], lab, workers=1, progress=False)
    assert again.commits == 0 and again.reparsed == {}


def test_a_lab_from_before_adapter_versions_counts_as_version_1(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows written before the column existed read as null: taken as version 1, so upgrading trajlab
    does not re-parse a whole lab unless an adapter really changed."""
    from trajlab.ingest import _worker

    real = _worker._close_unit

    def without_version(*a, **k):  # type: ignore[no-untyped-def]
        res = real(*a, **k)
        res.source.pop("adapter_version")
        return res

    monkeypatch.setattr(_worker, "_close_unit", without_version)  # a sources row as trajlab 0.1 wrote it
    lab = tmp_path / "lab"
    ingest([runs], lab, workers=1, progress=False)
    assert {r["adapter_version"] for r in _sources(lab).values()} == {None}
    monkeypatch.undo()
    # the adapters as they were at version 1 (the Claude Code and Codex adapters have changed since)
    monkeypatch.setattr(type(_get_adapter("claude-code")), "version", 1)
    monkeypatch.setattr(type(_get_adapter("codex-rollout")), "version", 1)
    rep = ingest([runs], lab, workers=1, progress=False)
    assert rep.commits == 0 and rep.reparsed == {}
    monkeypatch.setattr(type(_get_adapter("claude-code")), "version", 2)
    rep = ingest([runs], lab, workers=1, progress=False)
    assert rep.reparsed == {"claude-code v1 -> v2": 1}


class ToyTraceAdapter(Adapter):
    """A third-party format: `*.toytrace.json` = {"task": ..., "calls": [command, ...]}."""

    name = "toy-trace"
    runner = "toy"
    extensions = (".toytrace.json",)

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        return head_bytes.lstrip().startswith(b'{"task"')

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        doc = orjson.loads(unit.primary.read_bytes())
        ctx.records_seen += 1
        ctx.records_ingested += 1
        steps = [{"kind": "user", "text": doc["task"]}] + [
            {"kind": "tool_call", "tool_name": "shell", "arguments": {"command": c}, "call_id": f"c{i}"}
            for i, c in enumerate(doc["calls"])
        ]
        yield ParsedTrajectory({"task_id": doc["task"]}, steps, native_key=doc["task"])


class _ToyPlugin:
    @hookimpl
    def register_adapters(self, register: Callable[[type[Adapter]], None]) -> None:
        register(ToyTraceAdapter)


@pytest.fixture()
def toy_plugin() -> Iterator[Callable[[], None]]:
    pm = plugin_manager()

    def install() -> None:
        pm.register(_ToyPlugin(), name="toy-plugin")
        adapters.cache_clear()

    yield install
    if pm.has_plugin("toy-plugin"):
        pm.unregister(name="toy-plugin")
    adapters.cache_clear()


def test_a_file_no_adapter_knew_is_ingested_once_a_plugin_claims_it(
    tmp_path: Path, toy_plugin: Callable[[], None], invariant
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.toytrace.json").write_bytes(orjson.dumps({"task": "count frames", "calls": ["ffprobe a.mp4"]}))
    lab = tmp_path / "lab"
    first = ingest([runs], lab, workers=1, progress=False)
    assert [Path(p).name for p, _ in first.unknown] == ["a.toytrace.json"]
    assert _sources(lab)["a.toytrace.json"]["status"] == "unknown"

    toy_plugin()
    rep = ingest([runs], lab, workers=1, progress=False)
    assert rep.unknown == [] and rep.reparsed == {"now recognised by toy-trace (was no adapter)": 1}
    src = _sources(lab)["a.toytrace.json"]
    assert (src["status"], src["format"], src["adapter_version"]) == ("ingested", "toy-trace", 1)
    l2 = Lab.open(lab)
    assert query(l2, "select count(*) n from quarantine").to_pylist() == [{"n": 0}]
    assert query(l2, "select tool from steps where kind = 'tool_call'").to_pylist() == [{"tool": "ffprobe"}]
    invariant(l2)


def test_a_new_rows_version_reparses_every_unit(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change of what every adapter's rows go through (tool normalization, say) bumps ROWS_VERSION."""
    from trajlab.formats import ROWS_VERSION as v
    from trajlab.ingest import _plan, _worker

    lab = tmp_path / "lab"
    ingest([runs], lab, workers=1, progress=False)
    assert {r["format"]: r["rows_version"] for r in _rows_versions(lab)} == {
        "codex-rollout": v,
        "claude-code": v,
    }
    monkeypatch.setattr(_plan, "ROWS_VERSION", v + 1)
    monkeypatch.setattr(_worker, "ROWS_VERSION", v + 1)
    rep = ingest([runs], lab, workers=1, progress=False)
    assert rep.reparsed == {f"trajlab's row finishing (tool normalization, ids) v{v} -> v{v + 1}": 2}
    assert {r["format"]: r["rows_version"] for r in _rows_versions(lab)} == {
        "codex-rollout": v + 1,
        "claude-code": v + 1,
    }
    assert ingest([runs], lab, workers=1, progress=False).commits == 0


def _rows_versions(lab_dir: Path) -> list[dict]:
    return query(Lab.open(lab_dir), "select format, rows_version from sources").to_pylist()


def test_a_unit_another_adapter_now_claims_is_parsed_again_by_it(
    runs: Path, tmp_path: Path, invariant
) -> None:
    """A plugin adapter that claims Codex rollouts ahead of the built-in one (same version number, 1):
    the rollout, already ingested by codex-rollout, is parsed again by the new adapter."""
    base = type(_get_adapter("codex-rollout"))
    lab = tmp_path / "lab"
    ingest([runs], lab, workers=1, progress=False)

    class CodexPlus(base):  # type: ignore[misc, valid-type]
        name = "codex-plus"
        priority = base.priority - 1

    class _Plugin:
        @hookimpl
        def register_adapters(self, register: Callable[[type[Adapter]], None]) -> None:
            register(CodexPlus)

    pm = plugin_manager()
    pm.register(_Plugin(), name="codex-plus-plugin")
    adapters.cache_clear()
    try:
        assert CodexPlus.version == base.version
        rep = ingest([runs], lab, workers=1, progress=False)
        assert rep.reparsed == {"now recognised by codex-plus (was codex-rollout)": 1}
        assert {k: (v.files, v.unchanged) for k, v in rep.runners.items()} == {
            "codex": (1, 0),
            "claude_code": (0, 1),
        }
        assert sorted(r["format"] for r in _sources(lab).values()) == ["claude-code", "codex-plus"]
        invariant(Lab.open(lab))
        assert ingest([runs], lab, workers=1, progress=False).commits == 0
    finally:
        pm.unregister(name="codex-plus-plugin")
        adapters.cache_clear()


def test_a_touched_unit_whose_adapter_changed_is_reported_and_loses_its_dag(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same bytes, a new mtime (a copy, `touch`) and a new adapter version: parsed again (not just
    re-fingerprinted), reported as such, and its DAG rows go with its old steps."""
    import os

    lab = tmp_path / "lab"
    ingest([runs], lab, workers=1, progress=False)
    build_lab(lab, progress=False)
    (rollout,) = (runs / "codex").iterdir()
    st = rollout.stat()
    os.utime(rollout, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    monkeypatch.setattr(type(_get_adapter("codex-rollout")), "version", CX + 1)
    rep = ingest([runs], lab, workers=1, progress=False)
    assert rep.reparsed == {f"codex-rollout v{CX} -> v{CX + 1}": 1}
    assert rep.runners["codex"].files == 1
    assert _sources(lab)[rollout.name]["adapter_version"] == CX + 1
    dags = query(Lab.open(lab), "select t.runner from dag_metrics join trajectories t using (trajectory_id)")
    assert dags.to_pylist() == [{"runner": "claude_code"}]
