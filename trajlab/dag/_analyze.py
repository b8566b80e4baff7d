"""Whole-graph analysis of a built DAG: answer edges and path, layers, branches, metrics, candidates."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime, timezone
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import orjson

from ._answer import answer_edges, task_text
from ._candidates import rank_candidates
from ._model import ANSWER_PATH_EDGES, DAG_VERSION, MEDIA_MODALITIES, USE_EDGES, StepDag
from ._nodes import FINISH_TOOLS, is_setup, ran_nothing
from ._stepio import BOOKKEEPING_TOOLS, SETUP_TOOLS
from ._tokens import AUDIO_EXT, DOC_EXT, IMAGE_EXT, VIDEO_EXT, basename, ext_of, same_file, scan

if TYPE_CHECKING:
    from ._build import _Builder

_DOMAIN_WORDS: dict[str, str] = {
    "audio": "audio",
    "speech": "audio",
    "asr": "audio",
    "music": "audio",
    "sound": "audio",
    "podcast": "audio",
    "video": "video",
    "movie": "video",
    "clip": "video",
    "image": "image",
    "photo": "image",
    "ocr": "image",
    "chart": "image",
    "vision": "image",
    "visual": "image",
    "document": "document",
    "pdf": "document",
    "doc": "document",
    "docs": "document",
    "web": "web",
    "search": "web",
    "browse": "web",
    "browsing": "web",
}
_MIXED_WORDS = frozenset(["mixed", "multimodal", "omni", "av", "audiovisual", "multi", "omnimodal"])
# A branch continues into these modalities (frames extracted from a video are still the video branch).
_CONTINUES = {("video", "image"), ("document", "image")}


def required_modalities(domain: str | None, task: str | None) -> list[str]:
    """Modalities a task calls for: named by its domain, or, for mixed domains, by its media files.

    A video in a mixed task needs both its picture and its sound (video and audio).
    """
    words = set(re.split(r"[^a-z]+", (domain or "").lower())) - {""}
    req = {m for w in words if (m := _DOMAIN_WORDS.get(w))}
    if words & _MIXED_WORDS:
        for p in scan(task or "")[0]:
            e = ext_of(p)
            if e in VIDEO_EXT:
                req |= {"video", "audio"}
            elif e in AUDIO_EXT:
                req.add("audio")
            elif e in IMAGE_EXT:
                req.add("image")
            elif e in DOC_EXT:
                req.add("document")
    return [m for m in MEDIA_MODALITIES if m in req]


def analyze(b: _Builder, answer: int | None, retries: dict[int, int]) -> StepDag:
    nodes = b.nodes
    required = required_modalities(b.t.get("domain"), task_text(b))
    support = (
        answer_edges(b, answer, required)
        if answer is not None
        else {"terms": 0, "supported": [], "unsupported_values": []}
    )
    order = sorted(nodes)
    preds: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for src, dst, typ in b.edges:
        preds[dst].append((src, typ))
    # layers: longest path from the roots over every edge type (edges always point forward)
    layer: dict[int, int] = {}
    lp: dict[int, int] = {}
    for v in order:
        lay = 0
        best = 1
        for u, t in preds.get(v, ()):
            if layer[u] >= lay:
                lay = layer[u] + 1
            if (t == "data" or t == "answer") and lp[u] >= best:
                best = lp[u] + 1
        layer[v] = lay
        lp[v] = best
        nodes[v]["layer"] = lay
    per_layer: dict[int, int] = defaultdict(int)
    for v in order:
        per_layer[layer[v]] += 1
    # answer path: everything whose output reaches the answer node
    on: set[int] = set()
    if answer is not None:
        stack = [answer]
        while stack:
            v = stack.pop()
            if v in on:
                continue
            on.add(v)
            stack += [u for u, t in preds.get(v, ()) if t in ANSWER_PATH_EDGES and u not in on]
            a = nodes[v]["agent_id"]
            sp = b.parent.get(a) if a != b.root else None
            if sp is not None and sp in nodes and sp < v and sp not in on:
                stack.append(sp)
    for v in on:
        nodes[v]["on_answer_path"] = True
    actions = [v for v in order if nodes[v]["kind"] == "action"]
    dead = []
    for v in actions:
        n = nodes[v]
        if (
            n["tool"] in SETUP_TOOLS
            or n["tool"] in BOOKKEEPING_TOOLS
            or n["tool"] in FINISH_TOOLS
            or v == answer
        ):
            continue  # an earlier hand-in (Terminus-2 asks "Are you sure?" and the agent calls again) is none
        if b.chain_end.get(v, v) != v:
            continue  # a piece of a polled command that the next poll continues
        if is_setup(b.by_idx[v]) or ran_nothing(b.by_idx[v]):
            continue  # the harness's setup (Terminal-Bench installs the agent), an executor with no code
        if n["status"] in ("ok", "no-output") and not (b.out_types.get(v, set()) & USE_EDGES):
            n["is_dead_end"] = True
            dead.append(v)
    branches, merges = _branches(b, order, preds, answer)
    for v, art in b.produces.items():
        nodes[v]["produces"] = list(art)
    for v, art in b.consumes.items():
        nodes[v]["consumes"] = list(art)
    for a, r in retries.items():
        nodes[r]["retry_of"] = a
    recovered = {a for a in retries if _recovers(a, retries, nodes, b.chain_end)}
    # a poll the session refused (`write_stdin failed: stdin is closed`) is recovered when a later
    # poll of the same session did not fail: the command still came to its outcome
    for v, cmd in b.poll_of.items():
        end = b.chain_end.get(cmd, v)
        if end > v and nodes[v]["status"] == "error" and nodes[end]["status"] not in ("error", "timeout"):
            recovered.add(v)
    errors = [v for v in order if nodes[v]["status"] in ("error", "timeout")]
    failed = [v for v in errors if nodes[v]["kind"] == "action" and v not in recovered]
    addressed = _addressed(b, failed)
    unrecovered = [v for v in failed if v not in addressed]
    answer_branches = list(dict.fromkeys(nodes[v]["branch"] for v in order if v in on and nodes[v]["branch"]))
    ctx = {
        "answer": answer,
        "on": on,
        "required": required,
        "support": support,
        "branches": branches,
        "errors": errors,
        "unrecovered": unrecovered,
        "recovered": recovered,
        "actions": actions,
        "retries": retries,
    }
    candidates = rank_candidates(b, ctx)
    # every key has src < dst: `_Builder.edge`, the only writer, drops src == dst and raises on src > dst
    edges = [
        {"trajectory_id": b.tid, "src": s, "dst": d, "type": t, "artifact": art, "rule": rule}
        for (s, d, t), (art, rule) in sorted(b.edges.items(), key=itemgetter(0))
    ]
    metrics = {
        "trajectory_id": b.tid,
        "n_nodes": len(nodes),
        "n_edges": len(edges),
        "depth": (max(layer.values()) + 1) if layer else 0,
        "width": max(per_layer.values(), default=0),
        "longest_path": max(lp.values(), default=0),
        "n_branches": len(branches),
        "n_merges": len(merges),
        "branches": list(branches),
        "modalities": list(dict.fromkeys(nodes[v]["modality"] for v in actions)),
        "answer_branches": answer_branches,
        "merge_nodes": merges,
        "n_retries": len(retries),
        "n_recoveries": len(recovered & set(errors)),
        "n_errors": len(errors),
        "n_unrecovered_errors": len(unrecovered),
        "n_dead_ends": len(dead),
        "answer_path_share": (sum(1 for v in actions if v in on) / len(actions)) if actions else None,
        "first_error_step": errors[0] if errors else None,
        "decisive_candidates": orjson.dumps(candidates).decode(),
        "anomalies": b.anomalies + _ingest_anomalies(b.t),
        "answer_step": answer,
        "required_modalities": required,
        "built_at": datetime.now(timezone.utc),
        "dag_version": DAG_VERSION,
    }
    return StepDag(b.tid, [nodes[v] for v in order], edges, metrics, candidates)


def _addressed(b: _Builder, failed: list[int]) -> set[int]:
    """Failed runs of code that the same agent then changed: a reproduction of a bug followed by its fix
    (`python -c "from tests.m import f; f(23, 0)"` fails, tests/m.py is edited or rewritten next). The
    failure was dealt with, not left behind, even when nothing ran the code again. The file is one the
    step read or imported, not the script it ran (changing that is another attempt, judged by its
    retry, as OpenHands' edits of a failing `reproduce_error.py` are). The file must have
    existed when the step failed (an earlier step read, ran or wrote it): creating a missing script is
    no such fix, since the failed step never ran it and what it was to compute stays missing."""
    wanted = {basename(f) for v in failed if v in b.io for f in b.io[v].consumed}
    if not wanted:
        return set()
    nodes = b.nodes
    # the steps that touched each such file: (step, path, whether it wrote it)
    touched: dict[str, list[tuple[int, str, bool]]] = defaultdict(list)
    for w, wio in b.io.items():
        for p, wrote in (
            *((p, True) for p in wio.edits),
            *((p, True) for p, _ in wio.produced),
            *((p, False) for p in wio.consumed),
            *((p, False) for p in wio.scripts),
        ):
            name = basename(p)
            if name in wanted:
                touched[name].append((w, p, wrote))
    out: set[int] = set()
    for v in failed:
        io = b.io.get(v)
        if io is None:
            continue
        agent = nodes[v]["agent_id"]
        for f in io.consumed:  # not a script it ran: editing that one is another attempt, a retry
            hits = [(u, wrote) for u, p, wrote in touched.get(basename(f), ()) if same_file(p, f)]
            existed = any(u < v and nodes[u]["status"] == "ok" for u, _ in hits)
            if existed and any(
                wrote and u > v and nodes[u]["agent_id"] == agent and nodes[u]["status"] != "error"
                for u, wrote in hits
            ):
                out.add(v)
                break
    return out


def _recovers(
    a: int, retries: dict[int, int], nodes: dict[int, dict[str, Any]], chain_end: dict[int, int]
) -> bool:
    """Does the retry chain from failed step `a` end in success? A polled retry succeeds when its last poll does."""
    seen = set()
    while a in retries and a not in seen:
        seen.add(a)
        a = chain_end.get(retries[a], retries[a])
        if nodes[a]["status"] not in ("error", "timeout"):
            return True
    return False


def _branches(
    b: _Builder, order: list[int], preds: dict[int, list[tuple[int, str]]], answer: int | None
) -> tuple[dict[str, str], list[int]]:
    """Label modality branches along data edges; return ({branch: modality}, merge nodes)."""
    nodes = b.nodes
    branches: dict[str, str] = {}
    counts: dict[str, int] = defaultdict(int)
    merges: list[int] = []
    by_key: dict[tuple[str, str | None], str] = {}
    for v in order:
        n = nodes[v]
        if n["kind"] != "action" and v != answer:
            continue  # only actions (and the answer, for merges) take part in branches
        incoming: list[str] = []
        for u, t in preds.get(v, ()):
            br = nodes[u]["branch"]
            if br and (t == "data" or t == "answer") and br not in incoming:
                incoming.append(br)
        media = n["kind"] == "action" and n["modality"] in MEDIA_MODALITIES and n["tool"] not in SETUP_TOOLS
        if len(incoming) >= 2 and (n["kind"] == "action" or v == answer):
            merges.append(v)
            continue
        if media:
            same = [
                br
                for br in incoming
                if branches[br] == n["modality"] or (branches[br], n["modality"]) in _CONTINUES
            ]
            if same:
                n["branch"] = same[0]
            else:
                primary = b.io[v].primary
                key = (n["modality"], primary.rstrip("/").rsplit("/", 1)[-1] if primary else None)
                br = by_key.get(key)
                if br is None:
                    counts[n["modality"]] += 1
                    br = by_key[key] = f"{n['modality']}#{counts[n['modality']]}"
                    branches[br] = n["modality"]
                n["branch"] = br
        elif n["kind"] == "action" and len(incoming) == 1:
            n["branch"] = incoming[0]
    return branches, merges


_GRAPH_ANOMALY_PREFIXES = ("call without result", "result without call", "duplicate call id")


def _ingest_anomalies(t: dict[str, Any]) -> list[str]:
    """Ingest-time anomalies of the trajectory the DAG rules do not detect themselves."""
    out = []
    for a in t.get("anomalies") or []:
        if isinstance(a, str) and not a.startswith(_GRAPH_ANOMALY_PREFIXES):
            out.append(f"ingest: {a}")
    return out[:20]
