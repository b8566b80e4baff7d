"""Judge evaluation: against gold labels (accuracy, macro-F1, Cohen's kappa, decisive step exact and
within +-k), and on the Who&When failure-attribution set (agent-level and step-level accuracy)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from ..errors import ConfigError, InputFileError
from ..schema import UNSURE
from ..store import Lab


def load_gold(path: str | Path, lab: Lab | None = None) -> list[dict[str, Any]]:
    """Gold records `{trajectory_id, category, decisive_step_index}` from a JSONL file.

    Also accepts the example generator's `ground_truth.jsonl` (native_id + planted category and
    decisive call id), resolved against `lab`. Lines that cannot be used raise InputFileError naming
    the line.

    One gold label per trajectory: a record with `supersedes` (a human annotation file) replaces the
    record it names; a repeat of the same label replaces the earlier one; two different labels of one
    trajectory, or (given `lab`) a trajectory id the lab does not have, are errors naming the line.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"gold file {p} does not exist")
    found: dict[str, tuple[int, dict[str, Any]]] = {}  # trajectory -> (line, gold record)
    by_record_id: dict[str, str] = {}  # record_id -> trajectory, for `supersedes`
    known: set[str] | None = None
    if lab is not None:
        known = set(lab.read("trajectories", ["trajectory_id"]).column("trajectory_id").to_pylist())
    resolver: _ExampleResolver | None = None

    def add(gold: dict[str, Any], n: int, rec: dict[str, Any]) -> None:
        tid = gold["trajectory_id"]
        sup = rec.get("supersedes")
        if sup:
            if by_record_id.get(sup) != tid or tid not in found:
                raise InputFileError(
                    str(p), f"supersedes {sup}, which is not an earlier record of {tid} in this file", n
                )
        elif tid in found:
            line, prev = found[tid]
            if (prev["category"], prev["decisive_step_index"]) != (
                gold["category"],
                gold["decisive_step_index"],
            ):
                raise InputFileError(
                    str(p),
                    f"conflicting gold labels for {tid}: line {line} says {prev['category']} (step "
                    f"{prev['decisive_step_index']}), this line {gold['category']} (step "
                    f"{gold['decisive_step_index']}); keep one gold label per trajectory (or append a "
                    f'record with "supersedes")',
                    n,
                )
        found[tid] = (n, gold)
        if rec.get("record_id"):
            by_record_id[str(rec["record_id"])] = tid

    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                raise InputFileError(str(p), f"not valid JSON: {e}", n) from e
            if not isinstance(rec, dict):
                raise InputFileError(str(p), "expected a JSON object", n)
            if "trajectory_id" not in rec and "native_id" in rec and "variant" in rec:
                if lab is None:
                    raise InputFileError(
                        str(p), "example ground truth needs the lab to resolve native ids", n
                    )
                resolver = resolver or _ExampleResolver(lab)
                conv = resolver.convert(rec)
                if conv is not None:
                    add(conv, n, rec)
                continue
            if not rec.get("trajectory_id") or not rec.get("category"):
                raise InputFileError(str(p), "a gold record needs trajectory_id and category", n)
            ds = rec.get("decisive_step_index")
            if ds is not None and not isinstance(ds, int):
                raise InputFileError(str(p), f"decisive_step_index must be an integer or null, got {ds!r}", n)
            if known is not None and lab is not None and rec["trajectory_id"] not in known:
                raise InputFileError(
                    str(p), f"unknown trajectory id {rec['trajectory_id']!r}: not in the lab {lab.root}", n
                )
            gold = {
                "trajectory_id": rec["trajectory_id"],
                "category": rec["category"],
                "decisive_step_index": ds,
            }
            add(gold, n, rec)
    return [g for _, g in sorted(found.values(), key=lambda x: x[0])]


class _ExampleResolver:
    """Maps example ground-truth rows (native id, decisive call id) onto lab ids and step indexes."""

    def __init__(self, lab: Lab):
        t = lab.read("trajectories", ["trajectory_id", "native_id"])
        self.by_native = dict(zip(t.column("native_id").to_pylist(), t.column("trajectory_id").to_pylist()))
        self.lab = lab

    def convert(self, rec: dict[str, Any]) -> dict[str, Any] | None:
        if rec.get("outcome") != "failure" or not rec.get("category"):
            return None
        tid = self.by_native.get(rec.get("native_id"))
        if tid is None:
            return None
        steps = self.lab.read_trajectory_steps(tid, ["step_index", "call_id", "kind", "text"]).to_pylist()
        dec = rec.get("decisive") or {}
        idx = None
        if dec.get("call_id"):
            idx = next((s["step_index"] for s in steps if s["call_id"] == dec["call_id"]), None)
        elif dec.get("final_answer"):
            finals = [
                s["step_index"] for s in steps if s["kind"] == "assistant" and (s["text"] or "").strip()
            ]
            idx = finals[-1] if finals else None
        elif dec.get("assistant_text"):
            said = dec["assistant_text"].strip()
            idx = next(
                (
                    s["step_index"]
                    for s in steps
                    if s["kind"] == "assistant" and (s["text"] or "").strip() == said
                ),
                None,
            )
        return {"trajectory_id": tid, "category": rec["category"], "decisive_step_index": idx}


def _latest_labels(
    lab: Lab, judge: str | None, model: str | None, taxonomy_id: str | None
) -> dict[str, dict[str, Any]]:
    if not lab.has("judge_labels"):
        return {}
    rows = lab.read("judge_labels").to_pylist()
    out: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["created_at"]):
        if judge and r["judge"] != judge:
            continue
        if model and r["model"] != model:
            continue
        if taxonomy_id and r["taxonomy_id"] != taxonomy_id:
            continue
        out[r["trajectory_id"]] = r
    return out


def _require_labels(
    lab: Lab, labels: dict[str, Any], judge: str, model: str | None, taxonomy_id: str | None
) -> None:
    """Scoring a judge, model or taxonomy with no label at all would report 0% as if it had run."""
    if labels:
        return
    rows = (
        lab.read("judge_labels", ["judge", "model", "taxonomy_id"]).to_pylist()
        if lab.has("judge_labels")
        else []
    )
    have = sorted({f"{r['judge']} ({r['model']}, {r['taxonomy_id']})" for r in rows})
    what = (
        f"{judge} judge"
        + (f", model {model}" if model else "")
        + (f", taxonomy {taxonomy_id}" if taxonomy_id else "")
    )
    raise ConfigError(
        f"no judge labels for the {what} in {lab.root}; the lab has labels of: {', '.join(have) or 'none'}"
    )


def _require_one_source(
    labels: dict[str, Any], judge: str, model: str | None, taxonomy_id: str | None
) -> None:
    """The latest label per run across models or taxonomies would score a mix of judges (a rerun
    with another model on some runs, another taxonomy's categories) as if it were one."""
    for column, chosen, option in (("taxonomy_id", taxonomy_id, "--taxonomy"), ("model", model, "--model")):
        if chosen:
            continue
        counts = Counter(str(lbl[column]) for lbl in labels.values())
        if len(counts) > 1:
            listed = ", ".join(f"{k}: {n}" for k, n in sorted(counts.items()))
            name = "taxonomies" if column == "taxonomy_id" else "models"
            raise ConfigError(
                f"the latest {judge} labels come from {len(counts)} {name} ({listed} runs); "
                f"choose one with {option}"
            )


def _pick_judge(lab: Lab, judge: str | None) -> str:
    if judge:
        return judge
    if lab.has("judge_labels"):
        kinds = set(lab.read("judge_labels", ["judge"]).column("judge").to_pylist())
        if "llm" in kinds:
            return "llm"
        if "rules" in kinds:
            return "rules"
    raise ConfigError("no judge labels in the lab: run `trajlab judge LAB` (or --rules) first")


def classification_metrics(gold: list[str], pred: list[str | None]) -> dict[str, Any]:
    """Accuracy, macro-F1 (over the gold classes) and Cohen's kappa (None when undefined: every gold
    and predicted label is the same category); a missing prediction counts as wrong (label `(none)`)."""
    from sklearn.metrics import cohen_kappa_score, f1_score

    p = [x if x is not None else "(none)" for x in pred]
    n = len(gold)
    if n == 0:
        return {"n": 0, "accuracy": None, "macro_f1": None, "kappa": None}
    labels = sorted(set(gold))
    acc = sum(g == q for g, q in zip(gold, p)) / n
    f1 = float(f1_score(gold, p, labels=labels, average="macro", zero_division=0))
    # One label on both sides: chance agreement is 1 and kappa is undefined (scikit-learn: nan).
    kappa = float(cohen_kappa_score(gold, p)) if len(set(gold) | set(p)) > 1 else None
    return {"n": n, "accuracy": acc, "macro_f1": f1, "kappa": kappa}


def step_metrics(gold: list[int | None], pred: list[int | None], k: int) -> dict[str, Any]:
    pairs = [(g, q) for g, q in zip(gold, pred) if g is not None]
    n = len(pairs)
    exact = sum(q is not None and q == g for g, q in pairs)
    near = sum(q is not None and abs(q - g) <= k for g, q in pairs)
    return {"n": n, "exact": exact / n if n else None, f"within_{k}": near / n if n else None, "k": k}


def evaluate(
    lab: Lab | str | Path,
    gold: str | Path | list[dict[str, Any]],
    judge: str | None = None,
    model: str | None = None,
    taxonomy_id: str | None = None,
    k: int = 1,
) -> dict[str, Any]:
    """Compare the latest judge labels with gold labels.

    Category metrics are over all gold records (`unsure` excluded); a trajectory the judge did not
    label (abstained, error, missing) counts as wrong, and the same metrics restricted to labeled
    trajectories are reported under `on_labeled`. Decisive-step metrics use records whose gold has a step.
    """
    lab = lab if isinstance(lab, Lab) else Lab.open(lab)
    records = gold if isinstance(gold, list) else load_gold(gold, lab)
    jkind = _pick_judge(lab, judge)
    labels = _latest_labels(lab, jkind, model, taxonomy_id)
    _require_labels(lab, labels, jkind, model, taxonomy_id)
    _require_one_source(labels, jkind, model, taxonomy_id)
    records = [r for r in records if r["category"] != UNSURE]
    g_cat, p_cat, g_step, p_step = [], [], [], []
    lab_g, lab_p, lab_gs, lab_ps = [], [], [], []
    confusion: Counter[tuple[str, str]] = Counter()
    statuses: Counter[str] = Counter()
    for r in records:
        lbl = labels.get(r["trajectory_id"])
        status = lbl["status"] if lbl else "missing"
        statuses[status] += 1
        cat = lbl["category"] if lbl and status == "labeled" else None
        step = lbl["decisive_step_index"] if lbl and status == "labeled" else None
        g_cat.append(r["category"])
        p_cat.append(cat)
        g_step.append(r["decisive_step_index"])
        p_step.append(step)
        confusion[(r["category"], cat or "(none)")] += 1
        if cat is not None:
            lab_g.append(r["category"])
            lab_p.append(cat)
            lab_gs.append(r["decisive_step_index"])
            lab_ps.append(step)
    return {
        "judge": jkind,
        "model": model or sorted({lbl["model"] for lbl in labels.values()} or {None}, key=str)[-1],
        "n_gold": len(records),
        "statuses": dict(statuses),
        "coverage": (len(lab_g) / len(records)) if records else None,
        "category": classification_metrics(g_cat, p_cat),
        "decisive_step": step_metrics(g_step, p_step, k),
        "on_labeled": {
            "category": classification_metrics(lab_g, lab_p),
            "decisive_step": step_metrics(lab_gs, lab_ps, k),
        },
        "confusion": [{"gold": g, "pred": p, "n": n} for (g, p), n in sorted(confusion.items())],
    }


def evaluate_who_and_when(
    lab: Lab | str | Path, judge: str | None = None, model: str | None = None, taxonomy_id: str | None = None
) -> dict[str, Any]:
    """Agent-level and step-level accuracy on Who&When, the way that benchmark reports them.

    The predicted agent is the agent of the predicted decisive step; step-level accuracy needs the
    exact history index (`steps.step_index`). Runs the judge did not label count as wrong; the
    figures over labeled runs only are given too. Reported overall and per subset.
    """
    lab = lab if isinstance(lab, Lab) else Lab.open(lab)
    t = lab.read(
        "trajectories", ["trajectory_id", "metadata"], pc.field("benchmark") == "who_and_when"
    ).to_pylist()
    if not t:
        raise ConfigError(
            f"no Who&When trajectories in {lab.root} (ingest the Who&When dataset first: `trajlab ingest WHO_AND_WHEN_DIR --out LAB`)"
        )
    jkind = _pick_judge(lab, judge)
    labels = _latest_labels(lab, jkind, model, taxonomy_id)
    _require_labels(lab, labels, jkind, model, taxonomy_id)
    _require_one_source(labels, jkind, model, taxonomy_id)
    ids = [r["trajectory_id"] for r in t]
    steps = lab.read(
        "steps", ["trajectory_id", "step_index", "agent_id"], pc.field("trajectory_id").isin(ids)
    ).to_pylist()
    agent_at = {(s["trajectory_id"], s["step_index"]): s["agent_id"] for s in steps}
    groups: dict[str, Counter[str]] = {}
    for r in t:
        meta = json.loads(r["metadata"] or "{}")
        ann = meta.get("who_and_when") or {}
        if ann.get("mistake_step") is None:
            continue
        subset = meta.get("subset") or "all"
        lbl = labels.get(r["trajectory_id"])
        pred_step = lbl["decisive_step_index"] if lbl and lbl["status"] == "labeled" else None
        pred_agent = agent_at.get((r["trajectory_id"], pred_step)) if pred_step is not None else None
        for g in ("all", subset):
            c = groups.setdefault(g, Counter())
            c["n"] += 1
            c["labeled"] += pred_step is not None
            c["agent"] += pred_agent is not None and pred_agent == ann.get("mistake_agent")
            c["step"] += pred_step is not None and pred_step == ann["mistake_step"]
    out: dict[str, Any] = {"judge": jkind, "subsets": {}}
    for g, c in groups.items():
        n, lab_n = c["n"], c["labeled"]
        out["subsets"][g] = {
            "n": n,
            "labeled": lab_n,
            "agent_accuracy": c["agent"] / n if n else None,
            "step_accuracy": c["step"] / n if n else None,
            "agent_accuracy_on_labeled": c["agent"] / lab_n if lab_n else None,
            "step_accuracy_on_labeled": c["step"] / lab_n if lab_n else None,
        }
    return out


def format_eval(res: dict[str, Any]) -> str:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    if "subsets" in res:
        lines = [
            f"Who&When failure attribution, {res['judge']} judge",
            "subset               n  labeled  agent-acc  step-acc  (on labeled: agent, step)",
        ]
        for g, s in sorted(res["subsets"].items()):
            lines.append(
                f"{g:<18} {s['n']:>3}  {s['labeled']:>7}  {pct(s['agent_accuracy']):>9}  {pct(s['step_accuracy']):>8}"
                f"  ({pct(s['agent_accuracy_on_labeled'])}, {pct(s['step_accuracy_on_labeled'])})"
            )
        return "\n".join(lines)
    c, d = res["category"], res["decisive_step"]
    lc, ld = res["on_labeled"]["category"], res["on_labeled"]["decisive_step"]
    k = d["k"]
    kappa = "-" if c["kappa"] is None else f"{c['kappa']:.3f}"
    lkappa = "-" if lc["kappa"] is None else f"{lc['kappa']:.3f}"
    lines = [
        f"{res['judge']} judge ({res['model']}) vs {res['n_gold']} gold labels; coverage {pct(res['coverage'])}; "
        f"statuses {res['statuses']}",
        f"all gold:     accuracy {pct(c['accuracy'])}  macro-F1 {pct(c['macro_f1'])}  kappa {kappa}  "
        f"decisive step exact {pct(d['exact'])}  within +-{k} {pct(d[f'within_{k}'])} (n={d['n']})",
        f"labeled only: accuracy {pct(lc['accuracy'])}  macro-F1 {pct(lc['macro_f1'])}  kappa {lkappa}  "
        f"decisive step exact {pct(ld['exact'])}  within +-{k} {pct(ld[f'within_{k}'])} (n={ld['n']})",
        "confusion (gold -> predicted):",
    ]
    lines += [f"  {r['gold']} -> {r['pred']}: {r['n']}" for r in res["confusion"]]
    return "\n".join(lines)
