"""Find, parse and validate taxonomy files, naming the field and line of every problem."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import ConfigError, InputFileError
from ._model import Taxonomy, cross_ref_problems

ENV_PATH = "TRAJLAB_TAXONOMY_PATH"
# installed with the package; in a checkout a link to the repository's taxonomy/ folder (the copy users edit)
BUNDLED_DIR = (Path(__file__).parent / "bundled").resolve()
SUFFIXES = (".yaml", ".yml")


class _DupKeyLoader(yaml.SafeLoader):
    """SafeLoader that records duplicate mapping keys instead of silently keeping the last."""

    duplicates: list[tuple[str, int]]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                dup = key in seen
            except TypeError:
                continue
            if dup:
                self.duplicates.append((str(key), key_node.start_mark.line + 1))
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _parse_yaml(text: str) -> tuple[Any, yaml.Node | None, list[tuple[str, int]]]:
    loader = _DupKeyLoader(text)
    loader.duplicates = []
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node, loader.duplicates


def _line_of(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at `loc` (or of its deepest existing ancestor)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    nxt = v
                    line = k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
            line = nxt.start_mark.line + 1
        if nxt is None:
            break
        node = nxt
    return line


def _field_name(data: Any, loc: tuple[Any, ...]) -> str:
    """`categories[2].decision_rules` plus the category id when there is one, for readable messages."""
    out = ""
    cur = data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            cid = (
                cur[part].get("id")
                if isinstance(cur, list) and part < len(cur) and isinstance(cur[part], dict)
                else None
            )
            if cid and out.startswith("categories") and out.count("[") == 1:
                out += f"({cid})"
        else:
            out += ("." if out else "") + str(part)
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            cur = None
    return out or "(top level)"


_PATTERN_HINTS = {
    "id": "must be lowercase letters, digits, '_' or '-', starting with a letter",
    "version": 'must look like 1, 1.2 or 1.2.3 (quote it in YAML: "1.0.0")',
}


def _friendly(err: Any) -> str:
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err.get("type") == "string_pattern_mismatch":
        hint = _PATTERN_HINTS.get(str(err["loc"][-1]))
        if hint:
            return f"{err.get('input')!r} {hint}"
    if err.get("type") == "string_type" and err["loc"][-1] == "version":
        return f'{err.get("input")!r} must be a quoted string such as "1.0.0"'
    if err.get("type") == "extra_forbidden":
        return "unknown field (check the spelling; `trajlab taxonomy schema` lists the fields)"
    if err.get("type") == "missing":
        return "required field is missing"
    return msg


def _problems(text: str, source: str) -> tuple[list[str], Taxonomy | None]:
    try:
        data, root, dups = _parse_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(e, "problem", None) or str(e)
        return [f"{where}: YAML syntax error: {problem}"], None
    problems = [f"{source}:{line}: duplicate key {key!r}" for key, line in dups]
    if not isinstance(data, dict):
        return [
            *problems,
            f"{source}:1: a taxonomy file must be a YAML mapping (id, version, categories...)",
        ], None
    try:
        tax = Taxonomy.model_validate(data)
    except ValidationError as e:
        found: list[tuple[tuple[Any, ...], str]] = []
        for err in e.errors():
            loc = tuple(err["loc"])
            if not loc:  # model-level cross-reference errors: reported precisely below
                continue
            found.append((loc, _friendly(err)))
        cats = data.get("categories")
        if isinstance(cats, list):
            found += cross_ref_problems(cats)
        located = [(_line_of(root, loc) or 0, _field_name(data, loc), msg) for loc, msg in found]
        for line, field, msg in sorted(located, key=lambda x: x[0]):
            where = f"{source}:{line}" if line else source
            problems.append(f"{where}: {field}: {msg}")
        return problems, None
    return problems, (tax if not problems else None)


def validate_text(text: str, source: str = "<taxonomy>") -> list[str]:
    """Problems in taxonomy YAML text, each naming `source:line`, the field, and what is wrong."""
    return _problems(text, source)[0]


def validate_file(path: str | os.PathLike[str]) -> list[str]:
    """Problems in a taxonomy file (empty list when it is valid)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return [f"{p}: cannot read: {e}"]
    return validate_text(text, str(p))


def parse_file(path: str | os.PathLike[str]) -> Taxonomy:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputFileError(str(p), f"cannot read: {e}") from e
    problems, tax = _problems(text, str(p))
    if tax is None:
        first = problems[0]
        rest = (
            f" (and {len(problems) - 1} more; run `trajlab taxonomy validate {p}`)"
            if len(problems) > 1
            else ""
        )
        # problems already start with "path:line: "; InputFileError adds the path again, so strip it.
        where, _, msg = first.partition(": ")
        line = where.rsplit(":", 1)[-1]
        raise InputFileError(str(p), msg + rest, int(line) if line.isdigit() else None)
    return tax


def search_dirs() -> list[Path]:
    """Where taxonomy ids are looked up, in order: ./taxonomy, $TRAJLAB_TAXONOMY_PATH, the bundled copies."""
    dirs = [Path.cwd() / "taxonomy"]
    env = os.environ.get(ENV_PATH)
    if env:
        dirs += [Path(d) for d in env.split(os.pathsep) if d]
    dirs.append(BUNDLED_DIR)
    return dirs


def find_taxonomy(ref: str | os.PathLike[str]) -> Path:
    """Resolve a path or an id such as `omni-failure` to a taxonomy file."""
    p = Path(ref).expanduser()
    if p.is_file():
        return p
    if p.is_dir():
        raise ConfigError(f"taxonomy file {ref} is a folder, not a YAML file")
    if p.suffix in SUFFIXES or os.sep in str(ref):
        raise ConfigError(f"taxonomy file {ref} does not exist")
    tried = []
    for d in search_dirs():
        for suf in SUFFIXES:
            cand = d / f"{ref}{suf}"
            if cand.is_file():
                return cand
        tried.append(str(d))
    raise ConfigError(
        f"no taxonomy {str(ref)!r} (looked for {ref}.yaml in: {', '.join(tried)}); "
        f"known ids: {', '.join(available_ids()) or 'none'}"
    )


def available_ids() -> list[str]:
    ids: dict[str, None] = {}
    for d in search_dirs():
        if d.is_dir():
            for f in sorted(d.iterdir()):
                if f.suffix in SUFFIXES:
                    ids.setdefault(f.stem, None)
    return list(ids)


def load_taxonomy(ref: str | os.PathLike[str] | Taxonomy) -> Taxonomy:
    """Load a taxonomy from a file path or by id (./taxonomy, $TRAJLAB_TAXONOMY_PATH, then bundled)."""
    if isinstance(ref, Taxonomy):
        return ref
    return parse_file(find_taxonomy(ref))
