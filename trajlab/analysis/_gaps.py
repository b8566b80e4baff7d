"""`gaps`: which tools are over-represented in successful vs failed trajectories, with honest statistics."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from ..errors import ConfigError, LabError
from ._catalog import COUNT_SOURCES, TOOL_KEYS, expand, get_analysis, normalize_by
from ._materialize import AUTO_MATERIALIZE_CALLS, refresh_tool_usage
from ._result import AnalysisResult
from ._run import LabLike, execute, lab_facts, open_lab, run_sql
from ._stats import (
    CORRECTIONS,
    TESTS,
    adjust_pvalues,
    bootstrap_rates,
    fisher_pvalues,
    percentile_interval,
    permutation_pvalues,
)

_FLOAT_COLUMNS = (
    "share_success",
    "share_failure",
    "gap",
    "gap_ci_low",
    "gap_ci_high",
    "usage_success",
    "usage_failure",
    "usage_gap",
    "usage_gap_ci_low",
    "usage_gap_ci_high",
    "p_value",
    "p_adjusted",
)
_INT_COLUMNS = (
    "n_calls",
    "calls_success",
    "calls_failure",
    "n_traj_success",
    "n_traj_failure",
    "traj_using_success",
    "traj_using_failure",
)


def gaps_schema(by: Iterable[str] = ()) -> pa.Schema:
    """The columns of a `gaps` result (group columns first)."""
    fields = [pa.field(c, pa.string()) for c in by]
    fields.append(pa.field("tool", pa.string()))
    fields += [pa.field(c, pa.int64()) for c in _INT_COLUMNS]
    fields += [pa.field(c, pa.float64()) for c in _FLOAT_COLUMNS]
    fields += [
        pa.field("supported", pa.bool_()),
        pa.field("significant", pa.bool_()),
        pa.field("favors", pa.string()),
        pa.field("note", pa.string()),
    ]
    return pa.schema(fields)


def _check(
    n_boot: int,
    alpha: float,
    correction: str,
    test: str,
    min_support: int,
    min_traj: int,
    n_perm: int,
    key: str,
    counts: str,
) -> None:
    if not isinstance(n_boot, int) or n_boot < 0:
        raise ConfigError(f"n_boot must be an integer >= 0, not {n_boot!r}")
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1, not {alpha!r}")
    if correction not in CORRECTIONS:
        raise ConfigError(f"correction must be one of {', '.join(CORRECTIONS)}, not {correction!r}")
    if test not in TESTS:
        raise ConfigError(f"test must be one of {', '.join(TESTS)}, not {test!r}")
    if min_support < 0 or min_traj < 0:
        raise ConfigError("min_support and min_trajectories must be >= 0")
    if test == "permutation" and (not isinstance(n_perm, int) or n_perm < 1):
        raise ConfigError(f"n_perm must be a positive integer, not {n_perm!r}")
    if key not in TOOL_KEYS:
        raise ConfigError(f"key must be one of {', '.join(TOOL_KEYS)}, not {key!r}")
    if counts not in COUNT_SOURCES:
        raise ConfigError(f"counts must be one of {', '.join(COUNT_SOURCES)}, not {counts!r}")


def gaps(
    lab: LabLike,
    by: str | Iterable[str] = (),
    min_support: int = 10,
    min_trajectories: int = 5,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    correction: str = "holm",
    test: str = "fisher",
    n_perm: int = 1000,
    key: str = "tool",
    progress: bool = True,
    counts: str = "auto",
) -> AnalysisResult:
    """Per tool (and group): call shares and usage rates in successful vs failed trajectories, and the gap.

    - `gap` = share_success - share_failure, where a share is the tool's calls over all calls of the
      trajectories with that outcome; `usage_gap` = usage_success - usage_failure, where usage is the
      share of trajectories calling the tool at least once.
    - `gap_ci_*` / `usage_gap_ci_*`: percentile bootstrap intervals at level 1 - alpha, from `n_boot`
      replicates that resample trajectories (not calls) with replacement within each outcome; NaN when
      an outcome has fewer than 2 trajectories in the group (its resamples could not vary).
    - `p_value`: two-sided Fisher exact test on per-trajectory usage (`test="fisher"`), or a permutation
      test of the call-share gap that shuffles outcomes over trajectories (`test="permutation"`).
      `favors` is the direction of the tested quantity (usage_gap for Fisher, gap for permutation):
      the two can disagree when failed runs retry a tool many times (more calls, fewer users).
      `p_adjusted` corrects over all supported rows of the result (`correction`: holm, bh, bonferroni, none).
    - `key`: what counts as one tool: `tool` (the normalized tool), `tool_modality` (`python:video`
      apart from `python:compute`), or `program` (every distinct program of a command line).
    - `supported`: at least `min_support` calls and `min_trajectories` trajectories using the tool, and
      both outcomes present in the group. Unsupported rows stay in the table (flagged, with a `note`),
      are left out of the correction, and are never `significant`.
    - `counts`: where the calls per (trajectory, tool) come from. `auto`: the materialized `tool_usage`
      counts when current; on a lab with at least AUTO_MATERIALIZE_CALLS tool calls they are built
      first (once per version of the steps, into LAB/_cache; if the folder is not writable the calls
      are counted from steps and a note says so). `tool_usage`: build them if needed, whatever the
      size. `steps`: count from steps, never write. `params["counts"]` says which one ran.
    """
    cols = normalize_by(by)
    _check(n_boot, alpha, correction, test, min_support, min_trajectories, n_perm, key, counts)
    params: dict[str, Any] = {
        "by": list(cols),
        "min_support": min_support,
        "min_trajectories": min_trajectories,
        "n_boot": n_boot,
        "seed": seed,
        "alpha": alpha,
        "correction": correction,
        "test": test,
        "key": key,
    }
    if test == "permutation":
        params["n_perm"] = n_perm
    lab = open_lab(lab)
    facts = lab_facts(lab)
    missing = facts.missing_basics()
    outcome_missing = facts.missing_outcomes() if not missing else []
    notes: list[str] = []
    if facts.n_unknown and facts.n_trajectories:
        notes.append(f"{facts.n_unknown} trajectories with unknown outcome are left out")
    if missing or outcome_missing == ["no outcomes"]:
        sql = expand(get_analysis("gaps_per_trajectory").text, cols, key)
        params["counts"] = "steps"
        return AnalysisResult(
            "gaps", gaps_schema(cols).empty_table(), sql, params, missing + outcome_missing, notes
        )
    if counts == "tool_usage" or (counts == "auto" and facts.n_tool_calls >= AUTO_MATERIALIZE_CALLS):
        try:
            refresh_tool_usage(lab, key, progress=progress)
        except LabError as e:  # e.g. a read-only lab folder: count from steps
            if counts == "tool_usage":
                raise
            notes.append(f"{e}; calls counted from steps")
    table, sql, shown, _ = execute(
        lab, "gaps_per_trajectory", by=cols, key=key, counts="steps" if counts == "steps" else "auto"
    )
    params["counts"] = shown["counts"]
    # One BLAS thread: the products are small and skinny, and OpenBLAS threads spin badly when the
    # machine is busy (measured: 20x slower with 2 threads on a loaded 2-core machine).
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        rows = _compute(
            table, cols, min_support, min_trajectories, n_boot, seed, alpha, test, n_perm, progress
        )
    p_adj = adjust_pvalues(np.where(rows["supported"], rows["p_value"], np.nan), correction)
    rows["p_adjusted"] = p_adj
    rows["significant"] = rows["supported"] & (np.nan_to_num(p_adj, nan=1.0) < alpha)
    out = pa.Table.from_pydict(
        {f.name: pa.array(rows[f.name], type=f.type, from_pandas=True) for f in gaps_schema(cols)},
        schema=gaps_schema(cols),
    )
    n_groups_missing = sum(1 for n in rows["note"] if n and "no " in n and "trajectories in this group" in n)
    if n_groups_missing:
        notes.append(f"{n_groups_missing} rows belong to groups lacking one outcome: no gap there")
    notes += one_outcome_sources(lab, cols)
    return AnalysisResult("gaps", out, sql, params, outcome_missing, notes)


CONFOUNDERS = ("benchmark", "runner")
"""Columns whose values often come with one outcome only (a dataset of failed runs): checked by
`one_outcome_sources` when the gaps are not grouped by them."""


def one_outcome_sources(lab: LabLike, by: Iterable[str] = (), min_share: float = 0.1) -> list[str]:
    """Notes on benchmarks and runners whose trajectories all have the same outcome and make at least
    `min_share` of that outcome's trajectories in their group (and 5 or more): in pooled gaps the tools
    such a source uses stand for the source, not for success or failure. A source of 10 successes is a
    confounder among 23 successes, however many failures the group has. Checked within each group of
    `by`, and not at all for a column the gaps are grouped by."""
    by = tuple(by)
    keys = "".join(f"{c}, " for c in by)
    notes = []
    for col in CONFOUNDERS:
        if col in by:
            continue
        groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for r in run_sql(
            lab,
            f"SELECT {keys}coalesce({col}, '(none)') AS _v, count(*) AS _n, "
            "count(*) FILTER (WHERE outcome = 'success') AS _s FROM trajectories "
            "WHERE outcome IN ('success', 'failure') GROUP BY ALL ORDER BY ALL",
        ).to_pylist():
            groups.setdefault(tuple(r[c] for c in by), []).append(r)
        for g, rows in groups.items():
            total = sum(r["_n"] for r in rows)
            successes = sum(r["_s"] for r in rows)
            if len(rows) < 2 or not 0 < successes < total:
                continue  # one value only, or one outcome in the whole group: nothing is mixed
            where = "".join(f"{c}={v!r}, " for c, v in zip(by, g))
            for r in sorted(rows, key=lambda r: -r["_n"]):
                if r["_s"] not in (0, r["_n"]):
                    continue
                failed = r["_s"] == 0
                of_class = total - successes if failed else successes
                if r["_n"] >= max(5, min_share * of_class):
                    what, marker, plural = (
                        ("failed", "failure", "failures") if failed else ("succeeded", "success", "successes")
                    )
                    notes.append(
                        f"{where}{col} {r['_v']!r}: all {r['_n']} of its trajectories {what} "
                        f"({r['_n'] / of_class:.0%} of the {of_class} {plural}), so the tools it uses "
                        f"show up as {marker} markers here; compare within each {col} with --by {col}"
                    )
    return notes


def _groups(table: pa.Table, cols: tuple[str, ...]) -> list[tuple[tuple[Any, ...], np.ndarray]]:
    """(group key, row indices) per group, ordered by key with nulls last."""
    if not cols:
        return [((), np.arange(table.num_rows))]
    import polars as pl

    # from_arrow of a Table is a DataFrame (a Series only for an Array)
    df = cast("pl.DataFrame", pl.from_arrow(table.select(list(cols)))).with_row_index("_row")
    grouped = (
        df.group_by(list(cols), maintain_order=True).agg(pl.col("_row")).sort(list(cols), nulls_last=True)
    )
    out = []
    for rec in grouped.iter_rows(named=True):
        key = tuple(rec[c] for c in cols)
        out.append((key, np.asarray(rec["_row"], dtype=np.int64)))
    return out


def _sorted_codes(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """(codes, valid, values): codes number the distinct values in sorted order, so that results do not
    depend on the order in which DuckDB returned the rows (it is not deterministic in parallel)."""
    enc = pc.dictionary_encode(col).combine_chunks()
    values = enc.dictionary
    order = pc.array_sort_indices(values).to_numpy(zero_copy_only=False)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    valid = enc.indices.is_valid().to_numpy(zero_copy_only=False)
    raw = enc.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    codes = rank[raw] if len(rank) else raw
    return codes, valid, values.take(pa.array(order))


def _dense(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(distinct codes in increasing order, each code's position among them), in O(n)."""
    present = np.flatnonzero(np.bincount(codes, minlength=size))
    remap = np.full(max(size, 1), -1, dtype=np.int64)
    remap[present] = np.arange(len(present))
    return present, remap[codes]


def _compute(
    table: pa.Table,
    cols: tuple[str, ...],
    min_support: int,
    min_traj: int,
    n_boot: int,
    seed: int,
    alpha: float,
    test: str,
    n_perm: int,
    progress: bool,
) -> dict[str, Any]:
    traj_idx, _, traj_values = _sorted_codes(table.column("trajectory_id"))
    tool_idx, tool_valid, tool_values = _sorted_codes(table.column("tool"))
    tool_names = tool_values.to_pylist()
    success = table.column("success").to_numpy()
    n_calls = table.column("n_calls").to_numpy().astype(np.float64)

    groups = _groups(table, cols)
    import scipy.sparse as sp  # here, not at import: scipy costs every CLI command 0.15 s

    seeds = np.random.SeedSequence(seed).spawn(len(groups))
    rows: dict[str, list[Any]] = {f.name: [] for f in gaps_schema(cols)}
    bar = tqdm(groups, desc="gaps", unit="group", disable=(not progress) or None, leave=False)
    for (key, r), ss in zip(bar, seeds):
        rng = np.random.default_rng(ss)
        local_traj, first = _dense(traj_idx[r], len(traj_values))
        n_t = len(local_traj)
        valid = tool_valid[r]
        tools_here, tool_local = _dense(tool_idx[r][valid], len(tool_names))
        if len(tools_here) == 0:
            continue
        counts = sp.csr_matrix((n_calls[r][valid], (first[valid], tool_local)), shape=(n_t, len(tools_here)))
        s_local = np.zeros(n_t, dtype=bool)
        s_local[first] = success[r]
        c_s, c_f = counts[s_local], counts[~s_local]
        n_s, n_f = int(s_local.sum()), int((~s_local).sum())
        calls_s = np.asarray(c_s.sum(axis=0)).ravel()
        calls_f = np.asarray(c_f.sum(axis=0)).ravel()
        users_s = np.asarray((c_s > 0).sum(axis=0)).ravel()
        users_f = np.asarray((c_f > 0).sum(axis=0)).ravel()
        with np.errstate(invalid="ignore", divide="ignore"):
            share_s = calls_s / calls_s.sum() if calls_s.sum() else np.full(len(calls_s), np.nan)
            share_f = calls_f / calls_f.sum() if calls_f.sum() else np.full(len(calls_f), np.nan)
            usage_s = users_s / n_s if n_s else np.full(len(users_s), np.nan)
            usage_f = users_f / n_f if n_f else np.full(len(users_f), np.nan)
        k = len(tools_here)
        nan = np.full(k, np.nan)
        both = n_s > 0 and n_f > 0
        # a resample of a single trajectory is that trajectory: with one run of an outcome the replicates
        # cannot vary, and a zero-width interval would read as an exact gap
        if n_s >= 2 and n_f >= 2 and n_boot > 0:
            bs_share_s, bs_use_s = bootstrap_rates(c_s, n_boot, rng)
            bs_share_f, bs_use_f = bootstrap_rates(c_f, n_boot, rng)
            gap_lo, gap_hi = percentile_interval(bs_share_s - bs_share_f, alpha)
            use_lo, use_hi = percentile_interval(bs_use_s - bs_use_f, alpha)
        else:
            gap_lo = gap_hi = use_lo = use_hi = nan
        if not both:
            pvals = nan
        elif test == "fisher":
            pvals = fisher_pvalues(users_s, n_s, users_f, n_f)
        else:
            pvals = permutation_pvalues(counts, s_local, n_perm, rng)
        total_calls = calls_s + calls_f
        total_users = users_s + users_f
        for j in range(k):
            note = None
            if not both:
                note = f"no {'failed' if n_f == 0 else 'successful'} trajectories in this group"
            elif total_calls[j] < min_support:
                note = f"{int(total_calls[j])} calls < min_support {min_support}"
            elif total_users[j] < min_traj:
                note = f"used in {int(total_users[j])} trajectories < min_trajectories {min_traj}"
            for c, v in zip(cols, key):
                rows[c].append(v)
            gap = share_s[j] - share_f[j]
            rows["tool"].append(tool_names[tools_here[j]])
            rows["n_calls"].append(int(total_calls[j]))
            rows["calls_success"].append(int(calls_s[j]))
            rows["calls_failure"].append(int(calls_f[j]))
            rows["n_traj_success"].append(n_s)
            rows["n_traj_failure"].append(n_f)
            rows["traj_using_success"].append(int(users_s[j]))
            rows["traj_using_failure"].append(int(users_f[j]))
            rows["share_success"].append(share_s[j])
            rows["share_failure"].append(share_f[j])
            rows["gap"].append(gap)
            rows["gap_ci_low"].append(gap_lo[j])
            rows["gap_ci_high"].append(gap_hi[j])
            rows["usage_success"].append(usage_s[j])
            rows["usage_failure"].append(usage_f[j])
            rows["usage_gap"].append(usage_s[j] - usage_f[j])
            rows["usage_gap_ci_low"].append(use_lo[j])
            rows["usage_gap_ci_high"].append(use_hi[j])
            rows["p_value"].append(pvals[j])
            rows["p_adjusted"].append(np.nan)
            rows["supported"].append(note is None)
            rows["significant"].append(False)
            # the direction of the quantity the test is about: usage for Fisher, call share for permutation
            tested = usage_s[j] - usage_f[j] if test == "fisher" else gap
            rows["favors"].append(
                None if not np.isfinite(tested) or tested == 0 else ("success" if tested > 0 else "failure")
            )
            rows["note"].append(note)
    return _sorted(rows, cols)


def _sorted(rows: dict[str, list[Any]], cols: tuple[str, ...]) -> dict[str, Any]:
    """Rows in group order (already sorted), then by gap descending (NaN last), then tool name."""
    n = len(rows["tool"])
    out: dict[str, Any] = {}
    if n == 0:
        out = {k: list(v) for k, v in rows.items()}
    else:
        gap = np.asarray(rows["gap"], dtype=np.float64)
        group_pos = np.zeros(n, dtype=np.int64)
        if cols:
            keys = [tuple(rows[c][i] for c in cols) for i in range(n)]
            order_of = {k: i for i, k in enumerate(dict.fromkeys(keys))}
            group_pos = np.array([order_of[k] for k in keys])
        tools = np.asarray(rows["tool"], dtype=object)
        tool_rank = np.argsort(np.argsort(tools.astype(str), kind="stable"), kind="stable")
        order = np.lexsort((tool_rank, np.where(np.isnan(gap), np.inf, -gap), group_pos))
        out = {k: [v[i] for i in order] for k, v in rows.items()}
    for k in ("supported", "significant"):
        out[k] = np.asarray(out[k], dtype=bool)
    out["p_value"] = np.asarray(out["p_value"], dtype=np.float64)
    return out
