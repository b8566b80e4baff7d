"""Checks every adapter's tests share: corpus sniffing and wrong-type fuzzing of fixture files."""

from __future__ import annotations

import copy
import json
import random
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trajlab.formats import ParseContext, SourceUnit, detect, finish_trajectory, get_adapter, head
from trajlab.ingest import unit_digest
from trajlab.schema import TABLES, default_row
from trajlab.store import rows_to_table, table_schema


def parse_text(name: str, text: str, adapter_name: str) -> tuple[list[tuple[dict, list[dict]]], ParseContext]:
    """Write `text` as the file `name` (it may name folders) in a fresh temporary folder and parse it as
    `parse_detected` does."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        return parse_detected(path, adapter_name)


def call_values(steps: list[dict[str, Any]], *fields: str) -> list[tuple[Any, ...]]:
    """Per tool-call step, the values of `fields` for comparing with what a test wrote. Adapter rows are
    sparse (the store fills in defaults later): a missing `is_error` is False (the store's default), a
    missing `output` compares as "" (the lab keeps it null), `arguments` is parsed from its JSON text, and
    anything else missing is None."""
    missing = {"output": "", "is_error": False}

    def value(s: dict[str, Any], f: str) -> Any:
        v = s.get(f)
        if f == "arguments":
            return json.loads(v) if v is not None else None
        return missing.get(f) if v is None and f in missing else v

    return [tuple(value(s, f) for f in fields) for s in steps if s["kind"] == "tool_call"]


ODD_VALUES = [None, 0, -1, 1.5, True, "", "{bad", [], {}, [1, "a", None], {"a": [1]}]


def parse_detected(path: Path, adapter_name: str) -> tuple[list[tuple[dict, list[dict]]], ParseContext]:
    """Detect `path` (it must be `adapter_name`'s), parse it and finish its rows, as ingest would; the
    records invariant holds."""
    adapter, tried = detect(path, head(path))
    assert adapter is not None and adapter.name == adapter_name, tried
    unit = SourceUnit(path, adapter.name, adapter.companions(path))
    unit.digest = unit_digest(unit.files)
    ctx = ParseContext(unit, adapter.runner)
    now = datetime.now(timezone.utc)
    out = [finish_trajectory(pt, unit, adapter.runner, adapter.name, now) for pt in adapter.parse(unit, ctx)]
    assert ctx.records_seen == ctx.records_ingested + ctx.records_quarantined
    return out, ctx


def claimed_by(corpus_dir: Path, adapter_names: list[str]) -> set[Path]:
    """Corpus files that these adapters' sniffers say yes to (priority aside)."""
    files = [f for f in corpus_dir.rglob("*") if f.is_file()]
    claimed: set[Path] = set()
    for name in adapter_names:
        a = get_adapter(name)
        claimed |= {f for f in files if a.matches_extension(f) and a.sniff(f, head(f))}
    return claimed


def claimed_folders(corpus_dir: Path, claimed: set[Path]) -> set[str]:
    return {f.relative_to(corpus_dir).parts[0] for f in claimed}


def mutate(o: Any, rng: random.Random) -> Any:
    """Replace a few values anywhere in the document by values of the wrong type."""
    spots: list[tuple[Any, Any]] = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            spots.extend((x, k) for k in x)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            spots.extend((x, i) for i in range(len(x)))
            for v in x:
                walk(v)

    walk(o)
    for holder, key in rng.sample(spots, min(3, len(spots))):
        holder[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return o


def check_wrong_types(adapter_name: str, fixture: Path, tmp_path: Path, rounds: int = 25) -> None:
    """Mutated copies of `fixture` parse and convert to Arrow rows without raising, and every record
    is either ingested or quarantined."""
    adapter = get_adapter(adapter_name)
    rng = random.Random(fixture.name)
    text = fixture.read_text()
    for i in range(rounds):
        if fixture.name.endswith(".jsonl"):
            out = []
            for line in text.splitlines():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    out.append(line)  # the fixture's own broken lines stay broken
                    continue
                out.append(json.dumps(mutate(obj, rng) if rng.random() < 0.5 else obj))
            data = "\n".join(out) + "\n"
        else:
            data = json.dumps(mutate(json.loads(text), rng), indent=1)
        p = tmp_path / f"m{i}{fixture.suffix}"
        p.write_text(data)
        unit = SourceUnit(p, adapter.name)
        unit.digest = unit_digest([p])
        ctx = ParseContext(unit, adapter.runner)
        now = datetime.now(timezone.utc)
        for pt in adapter.parse(unit, ctx):
            t, steps = finish_trajectory(pt, unit, adapter.runner, adapter.name, now)
            rows_to_table([t], table_schema("trajectories"), default_row(TABLES["trajectories"]))
            rows_to_table(steps, table_schema("steps"), default_row(TABLES["steps"]))
        assert ctx.records_seen == ctx.records_ingested + ctx.records_quarantined, p


PARSE_NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def parse_tree(root: Path, now: datetime = PARSE_NOW) -> tuple[Any, dict[str, Any]]:
    """Discover and parse every unit under `root` without a lab: (discovery, {relative primary path:
    (unit, parse context, [(trajectory row, step rows), ...])})."""
    from trajlab.ingest import discover

    disc = discover([root])
    out = {}
    for u in disc.units:
        a = get_adapter(u.adapter)
        u.digest = unit_digest(u.files)
        ctx = ParseContext(u, a.runner)
        rows = [finish_trajectory(pt, u, a.runner, a.name, now) for pt in a.parse(u, ctx)]
        out[u.primary.relative_to(root).as_posix()] = (u, ctx, rows)
    return disc, out
