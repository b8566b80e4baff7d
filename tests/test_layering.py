"""Lower layers never import higher ones (see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "trajlab"

LAYER = {
    "errors": 0,
    "schema": 0,
    "normalize": 0,
    "redact": 0,
    "tabular": 0,
    "textsafe": 0,
    "_version": 0,
    "__init__": 0,
    "fsutil": 0,
    "gcutil": 0,
    "sigutil": 0,
    "batching": 0,
    "py": 0,
    "_compiled": 0,
    "compiled": 0,
    "formats": 1,
    "store": 2,
    "ingest": 3,
    "examples": 3,
    "dag": 4,
    "taxonomy": 5,
    "judge": 5,
    "review": 6,
    "analysis": 7,
    "figures": 8,
    "distill": 8,
    "dashboard": 9,
    "cli": 10,
    "pipeline": 10,
    "__main__": 10,
}


def _top(modpath: Path) -> str:
    rel = modpath.relative_to(PKG)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    pkg_parts = path.relative_to(PKG.parent).with_suffix("").parts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[: len(pkg_parts) - node.level]
                if path.name == "__init__.py":
                    base = pkg_parts[: len(pkg_parts) - node.level + 1]
                out.append(".".join([*base, node.module] if node.module else base))
            elif node.module:
                out.append(node.module)
    return out


def test_no_upward_imports() -> None:
    bad = []
    for f in PKG.rglob("*.py"):
        top = _top(f)
        if top not in LAYER:
            bad.append(f"{f}: package {top!r} has no layer in tests/test_layering.py")
            continue
        for imp in _imports(f):
            parts = imp.split(".")
            if parts[0] != "trajlab" or len(parts) < 2 or parts[1] in ("__init__",):
                continue
            target = parts[1]
            if target not in LAYER:
                continue
            if LAYER[target] > LAYER[top]:
                bad.append(
                    f"{f.relative_to(PKG.parent)} (layer {LAYER[top]}) imports {imp} (layer {LAYER[target]})"
                )
    assert not bad, "\n".join(bad)
