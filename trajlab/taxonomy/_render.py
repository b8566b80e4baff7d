"""Human-readable renderings of a taxonomy (terminal text and Markdown)."""

from __future__ import annotations

from ._model import Taxonomy


def to_markdown(tax: Taxonomy) -> str:
    lines = [f"# {tax.name} (`{tax.id}` v{tax.version})", "", tax.description, ""]
    if tax.guidance:
        lines += ["## Guidance", "", *[f"- {g}" for g in tax.guidance], ""]
    for c in tax.categories:
        lines += [f"## `{c.id}`: {c.name}", "", c.definition, "", "Decision rules:", ""]
        lines += [f"- {r}" for r in c.decision_rules]
        if c.tie_breakers:
            lines += ["", "Tie-breakers:", ""]
            lines += [f"- vs `{t.versus}`: {t.rule}" for t in c.tie_breakers]
        lines += ["", "Examples:", ""]
        lines += [f"- yes: {e.text}" + (f" ({e.why})" if e.why else "") for e in c.positive_examples]
        lines += [f"- no: {e.text}" + (f" ({e.why})" if e.why else "") for e in c.negative_examples]
        if c.signals:
            lines += ["", "Signals:", ""]
            lines += [
                f"- {s.description}" + (f" [rules detector `{s.detector}`]" if s.detector else "")
                for s in c.signals
            ]
        lines.append("")
    return "\n".join(lines)


def to_text(tax: Taxonomy, verbose: bool = False) -> str:
    """Compact terminal view: one line per category, or everything with `verbose`."""
    if verbose:
        return to_markdown(tax)
    width = max(len(c.id) for c in tax.categories)
    lines = [f"{tax.id} v{tax.version}: {tax.name} ({len(tax.categories)} categories)", ""]
    for c in tax.categories:
        det = sorted({s.detector for s in c.signals if s.detector})
        lines.append(f"  {c.id.ljust(width)}  {c.name}")
        if det:
            lines.append(f"  {'':{width}}  rules detectors: {', '.join(det)}")
    return "\n".join(lines)
