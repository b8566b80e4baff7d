"""Statistics SQL does not do well, vectorized in numpy: bootstrap over trajectories, tests, corrections.

Everything works on a per-trajectory count matrix C (trajectories x tools, sparse) and the trajectory's
outcome. A bootstrap replicate resamples trajectories (never calls) with replacement, separately within
the successful and the failed trajectories, as a matrix of resampling weights W (replicates x
trajectories): the replicate's call counts are W @ C, its totals W @ C.sum(1), its users W @ (C > 0).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
from scipy import stats

from ..errors import ConfigError

CORRECTIONS = ("holm", "bh", "bonferroni", "none")
TESTS = ("fisher", "permutation")
_CHUNK_CELLS = 2_000_000  # replicates x trajectories per weight chunk: bounds memory (~16 MB)
_DENSE_CELLS = 4_000_000  # trajectories x tools up to which the count matrix is used dense


def _weight_chunks(rng: np.random.Generator, n: int, n_rep: int) -> Iterator[np.ndarray]:
    """Bootstrap weights in chunks: row r counts how often each of n trajectories was drawn."""
    step = max(1, min(n_rep, _CHUNK_CELLS // max(n, 1)))
    for start in range(0, n_rep, step):
        b = min(step, n_rep - start)
        idx = rng.integers(0, n, size=(b, n))
        idx += (np.arange(b) * n)[:, None]
        yield np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)


def _as_operand(counts: sp.spmatrix | np.ndarray) -> sp.csr_matrix | np.ndarray:
    """Tools x trajectories, dense when small enough for BLAS (much faster), else sparse."""
    if isinstance(counts, np.ndarray):
        return np.ascontiguousarray(counts.T, dtype=np.float64)
    n, k = counts.shape
    if n * k <= _DENSE_CELLS:
        return np.ascontiguousarray(counts.toarray().T, dtype=np.float64)
    return counts.astype(np.float64).T.tocsr()


def bootstrap_rates(
    counts: sp.spmatrix | np.ndarray, n_rep: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate and tool: (call share, usage rate) over trajectories resampled with replacement.

    `counts` is trajectories x tools. Returns two (n_rep x tools) arrays; a replicate whose resampled
    trajectories made no call at all has NaN shares.
    """
    n, k = counts.shape
    shares = np.empty((n_rep, k))
    usage = np.empty((n_rep, k))
    if n == 0:
        shares.fill(np.nan)
        usage.fill(np.nan)
        return shares, usage
    calls_t = _as_operand(counts)
    used_t = _as_operand(counts > 0)
    totals = np.asarray(calls_t.sum(axis=0)).ravel()
    row = 0
    for w in _weight_chunks(rng, n, n_rep):
        b = w.shape[0]
        calls = np.asarray(calls_t @ w.T).T  # b x k
        tot = w @ totals
        with np.errstate(invalid="ignore", divide="ignore"):
            shares[row : row + b] = calls / tot[:, None]
        usage[row : row + b] = np.asarray(used_t @ w.T).T / n
        row += b
    return shares, usage


def percentile_interval(samples: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval per column (NaN replicates ignored; all-NaN columns give NaN)."""
    lo = np.full(samples.shape[1], np.nan)
    hi = np.full(samples.shape[1], np.nan)
    ok = ~np.all(np.isnan(samples), axis=0)
    if ok.any():
        q = np.nanquantile(samples[:, ok], [alpha / 2, 1 - alpha / 2], axis=0)
        lo[ok], hi[ok] = q[0], q[1]
    return lo, hi


def fisher_pvalues(users_s: np.ndarray, n_s: int, users_f: np.ndarray, n_f: int) -> np.ndarray:
    """Two-sided Fisher exact test per tool on trajectories using it vs not, success vs failure."""
    out = np.full(len(users_s), np.nan)
    if n_s == 0 or n_f == 0:
        return out
    for i, (a, c) in enumerate(zip(users_s.tolist(), users_f.tolist())):
        out[i] = stats.fisher_exact([[a, n_s - a], [c, n_f - c]], alternative="two-sided").pvalue
    return out


def permutation_pvalues(
    counts: sp.spmatrix | np.ndarray, success: np.ndarray, n_perm: int, rng: np.random.Generator
) -> np.ndarray:
    """Two-sided permutation test of the call-share gap per tool: outcome labels shuffled over trajectories.

    p = (1 + #{|gap_perm| >= |gap_obs|}) / (1 + n_perm); the smallest reachable p is 1 / (1 + n_perm).
    """
    n, k = counts.shape
    n_s = int(success.sum())
    out = np.full(k, np.nan)
    if n_s == 0 or n_s == n:
        return out
    calls_t = _as_operand(counts)
    totals = np.asarray(calls_t.sum(axis=0)).ravel()

    def gap(mask: np.ndarray) -> np.ndarray:  # mask: b x n, 1 = success
        inv = 1.0 - mask
        with np.errstate(invalid="ignore", divide="ignore"):
            s = np.asarray(calls_t @ mask.T).T / (mask @ totals)[:, None]
            f = np.asarray(calls_t @ inv.T).T / (inv @ totals)[:, None]
        return s - f

    observed = np.abs(gap(success.astype(np.float64)[None, :]))[0] - 1e-12
    exceed = np.zeros(k)
    step = max(1, min(n_perm, _CHUNK_CELLS // max(n, 1)))
    for start in range(0, n_perm, step):
        b = min(step, n_perm - start)
        keys = rng.random((b, n))
        kth = np.partition(keys, n_s - 1, axis=1)[:, n_s - 1 : n_s]
        mask = (keys <= kth).astype(np.float64)  # a random n_s of the n trajectories
        g = np.abs(gap(mask))
        exceed += np.sum(np.nan_to_num(g, nan=-1.0) >= observed, axis=0)
    out[:] = (1.0 + exceed) / (1.0 + n_perm)
    out[np.isnan(observed)] = np.nan
    return out


def adjust_pvalues(p: np.ndarray, method: str = "holm") -> np.ndarray:
    """Multiple-comparison adjusted p-values (NaNs stay NaN and are not counted in the family).

    holm: Holm-Bonferroni step-down (family-wise error); bh: Benjamini-Hochberg (false discovery
    rate); bonferroni; none.
    """
    if method not in CORRECTIONS:
        raise ConfigError(f"correction must be one of {', '.join(CORRECTIONS)}, not {method!r}")
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    q = p[ok]
    if method == "none":
        adj = q
    elif method == "bonferroni":
        adj = np.minimum(q * m, 1.0)
    else:
        order = np.argsort(q, kind="mergesort")
        ranked = q[order]
        if method == "holm":
            steps = ranked * (m - np.arange(m))
            adj_sorted = np.minimum(np.maximum.accumulate(steps), 1.0)
        else:
            steps = ranked * m / np.arange(1, m + 1)
            adj_sorted = np.minimum(np.minimum.accumulate(steps[::-1])[::-1], 1.0)
        adj = np.empty(m)
        adj[order] = adj_sorted
    out[ok] = adj
    return out
