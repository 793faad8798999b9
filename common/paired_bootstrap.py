"""The change between two models scored on the same problems, with a paired two-level bootstrap interval.

Evaluations draw problems, then several samples of each problem, so a difference has two sources of noise:
which problems were drawn and which samples each model happened to produce. The bootstrap resamples both
levels: problems with replacement (the same draw for both models: paired), then each model's samples within a
drawn problem. Resampling both levels naively counts the samples' noise twice (a problem's observed mean already
carries it), so the problem-level differences are shrunk towards their mean until their spread is the
between-problem part alone (Davison & Hinkley 1997, section 3.8, "two-stage bootstrap"), and the within-problem
residuals are rescaled to unbiased spread. The interval then covers the true difference about as often as its
confidence says (tests/common/test_paired_bootstrap.py simulates it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

RESAMPLES = 2000
_BLOCK_ELEMENTS = 4_000_000  # values drawn per block of resamples (bounded memory)


@dataclass(frozen=True)
class PairedChange:
    """mean(B) - mean(A) over problems (each problem's mean over its samples), with its interval."""

    change: float
    low: float
    high: float
    problems: int

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def scaled(self, factor: float) -> "PairedChange":
        """The same change in other units (x100: fractions to points)."""
        return PairedChange(self.change * factor, self.low * factor, self.high * factor, self.problems)


def paired_change(before: Sequence[Sequence[float]], after: Sequence[Sequence[float]], confidence: float = 0.95,
                  resamples: int = RESAMPLES, seed: int = 0) -> PairedChange:
    """The change from `before` to `after` and its paired two-level bootstrap interval (percentile).

    before[i], after[i]: the per-sample values (1/0 for correct, or response tokens) of problem i under each
    model; the two may hold different numbers of samples, and problems may differ in theirs.
    """
    a, a_counts = _padded(before, "before")
    b, b_counts = _padded(after, "after")
    if len(a_counts) != len(b_counts):
        raise ValueError(f"before holds {len(a_counts)} problems but after holds {len(b_counts)}: a paired change "
                         "needs the same problems, in the same order")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    a_means, b_means = _row_means(a, a_counts), _row_means(b, b_counts)
    differences = b_means - a_means  # (problems,)
    change = float(differences.mean())
    problems = len(differences)
    if problems == 1:
        return PairedChange(change, change, change, 1)
    within = _within_variance_of_mean(a, a_counts, a_means) + _within_variance_of_mean(b, b_counts, b_means)
    shrunk = _shrunk_differences(differences, within)
    a_residuals, b_residuals = _scaled_residuals(a, a_counts, a_means), _scaled_residuals(b, b_counts, b_means)
    rng = np.random.default_rng(seed)
    draws = np.empty(resamples)
    per_resample = problems * (a.shape[1] + b.shape[1])
    block = max(1, _BLOCK_ELEMENTS // max(1, per_resample))
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        picked = rng.integers(0, problems, size=(rows, problems))  # (rows, problems): the paired problem draw
        noise = (_resampled_means(b_residuals, b_counts, picked, rng)
                 - _resampled_means(a_residuals, a_counts, picked, rng))
        draws[start:start + rows] = (shrunk[picked] + noise).mean(axis=1)
    low, high = np.quantile(draws, [(1.0 - confidence) / 2, (1.0 + confidence) / 2])
    return PairedChange(change, float(low), float(high), problems)


def _padded(values: Sequence[Sequence[float]], name: str) -> tuple[np.ndarray, np.ndarray]:
    """(problems, most samples) array padded with zeros, and each problem's sample count."""
    rows = [np.asarray(row, dtype=float).ravel() for row in values]
    if not rows:
        raise ValueError(f"{name} holds no problems")
    counts = np.array([row.size for row in rows])
    if (counts == 0).any():
        raise ValueError(f"{name}[{int(np.argmin(counts))}] holds no samples")
    padded = np.zeros((len(rows), int(counts.max())))
    for index, row in enumerate(rows):
        if not np.isfinite(row).all():
            raise ValueError(f"{name}[{index}] holds a value that is not a finite number")
        padded[index, :row.size] = row
    return padded, counts


def _row_means(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return values.sum(axis=1) / counts


def _within_variance_of_mean(values: np.ndarray, counts: np.ndarray, means: np.ndarray) -> float:
    """Mean over problems of the unbiased within-problem variance of a problem's mean (s_i^2 / k_i); problems
    with one sample contribute nothing (their noise cannot be told from the problem's own level)."""
    mask = np.arange(values.shape[1])[None, :] < counts[:, None]
    squares = (((values - means[:, None]) * mask) ** 2).sum(axis=1)
    several = counts > 1
    variances = np.where(several, squares / np.maximum(counts - 1, 1), 0.0)
    return float((variances / counts).mean())


def _shrunk_differences(differences: np.ndarray, within: float) -> np.ndarray:
    """Problem differences pulled towards their mean so their spread is the between-problem part only
    (`within`: the two models' sample noise in a problem's difference)."""
    spread = float(differences.var(ddof=1))
    if spread <= 0.0:
        return differences
    factor = np.sqrt(max(0.0, spread - within) / spread)
    mean = differences.mean()
    return mean + factor * (differences - mean)


def _scaled_residuals(values: np.ndarray, counts: np.ndarray, means: np.ndarray) -> np.ndarray:
    """Each sample minus its problem's mean, scaled by sqrt(k / (k - 1)) so resampling them has unbiased spread
    (zero where a problem has one sample)."""
    scale = np.where(counts > 1, np.sqrt(counts / np.maximum(counts - 1, 1)), 0.0)
    return (values - means[:, None]) * scale[:, None]


def _resampled_means(residuals: np.ndarray, counts: np.ndarray, picked: np.ndarray,
                     rng: np.random.Generator) -> np.ndarray:
    """(rows, problems) means of each picked problem's residuals, resampled with replacement within it."""
    picked_counts = counts[picked]  # (rows, problems)
    width = residuals.shape[1]
    slots = rng.random(size=(*picked.shape, width))  # (rows, problems, samples)
    sample_index = np.minimum((slots * picked_counts[..., None]).astype(np.int64), picked_counts[..., None] - 1)
    drawn = residuals[picked[..., None], sample_index]
    used = np.arange(width)[None, None, :] < picked_counts[..., None]
    return (drawn * used).sum(axis=2) / picked_counts
