"""The distillation stage of `trajlab demo`: distil, score planted-pattern recovery, compare conditions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..fsutil import atomic_write_text
from ..store import Lab
from ._compare import compare
from ._distill import distill
from ._features import load_corpus
from ._recovery import pattern_recovery
from ._spec import validate_path


def demo_distill(
    lab: str | Path, out: str | Path, examples: str | Path | None = None, progress: bool = False
) -> tuple[str, dict[str, Any]]:
    """Distil skills from `lab` into OUT/skills; (printable summary, numbers) for the demo report.

    With `examples` (a `trajlab examples` folder) the planted-pattern precision/recall is added; when
    the lab holds `no-skill` and `skill` runs of the same tasks, their paired comparison too.
    """
    out = Path(out)
    res = distill(out / "skills", lab=lab, progress=progress)
    written = [s for s in res.skills if not s.refused]
    # few runs can give no rule above the support thresholds: then there is no skill folder to check
    reps = validate_path(out / "skills") if written else []
    check = (
        f"spec check: {sum(r.ok for r in reps)}/{len(reps)} skills valid"
        if written
        else ("spec check: no skill was written (no rule reached the support thresholds on these runs)")
    )
    lines = [res.format(), check]
    data: dict[str, Any] = {
        "rules": len(res.rules),
        "skills": {s.name: s.version for s in res.skills if not s.refused},
        "refused": [s.name for s in res.skills if s.refused],
        "valid": all(r.ok for r in reps),
    }
    if examples is not None and (Path(examples) / "ground_truth.jsonl").exists():
        from ..examples import load_ground_truth, load_patterns

        the_lab = Lab.open(lab)
        rep = pattern_recovery(
            the_lab,
            load_corpus(the_lab),
            res.rules,
            load_ground_truth(examples),
            descriptions=load_patterns(examples),
        )
        lines.append(rep.format().splitlines()[-1].strip())
        data.update(
            precision=rep.precision, recall=rep.recall, precision_with_causes=rep.precision_with_causes
        )
    try:
        cmp = compare(lab, lab, "no-skill", "skill")
    except ConfigError:
        cmp = None
    if cmp is not None:
        lines.append(
            f"no-skill vs skill runs: accuracy {cmp.accuracy_a:.3f} -> {cmp.accuracy_b:.3f} "
            f"({cmp.delta:+.3f}) over {cmp.pairs} paired runs, McNemar p = {cmp.p_value:.3g}"
        )
        if examples is not None:
            lines.append(
                "  (the example runs' skill condition is generated with a higher success rate: this line "
                "shows `skills compare` at work, not a measured effect of the distilled skills)"
            )
        data.update(skill_delta=cmp.delta, skill_p=cmp.p_value)
        path = out / "comparison.json"  # as `trajlab skills compare --json` prints it
        atomic_write_text(path, json.dumps(cmp.to_dict(), indent=2, default=str) + "\n")
        lines.append(f"  comparison -> {path}")
    return "\n".join(lines), data
