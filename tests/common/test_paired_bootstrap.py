"""The paired two-level bootstrap: the change by hand, its interval's behaviour, and its coverage in simulation."""

from __future__ import annotations

import numpy as np
import pytest

from common.paired_bootstrap import paired_change


def test_change_is_the_mean_of_problem_mean_differences():
    before = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0]]  # problem means 0.25, 0.5, 0
    after = [[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0]]  # 0.5, 1, 1/3
    result = paired_change(before, after, resamples=200)
    assert result.change == pytest.approx(((0.5 - 0.25) + (1 - 0.5) + (1 / 3 - 0)) / 3)
    assert result.problems == 3
    assert result.low <= result.change <= result.high


def test_identical_models_with_no_sample_noise_have_a_point_interval():
    same = [[1, 1], [0, 0], [1, 1], [0, 0]]  # every problem always right or always wrong
    result = paired_change(same, same, resamples=500)
    assert (result.change, result.low, result.high) == (0.0, 0.0, 0.0)
    assert not result.excludes_zero()


def test_a_constant_shift_is_exact_when_samples_agree():
    before = [[2.0, 2.0], [5.0, 5.0], [9.0, 9.0]]
    after = [[row[0] - 1.5] * 2 for row in before]  # tokens: every response 1.5 shorter
    result = paired_change(before, after, resamples=300)
    assert result.change == pytest.approx(-1.5)
    assert result.low == pytest.approx(-1.5) and result.high == pytest.approx(-1.5)
    assert result.excludes_zero()


def test_pairing_removes_the_spread_between_problems():
    rng = np.random.default_rng(3)
    levels = rng.uniform(0, 100, size=200)  # problems differ a lot; the change is the same 2 tokens everywhere
    before = [[level, level] for level in levels]
    after = [[level + 2, level + 2] for level in levels]
    result = paired_change(before, after, resamples=500)
    assert result.change == pytest.approx(2.0)
    assert result.high - result.low < 1e-9


def test_sample_noise_widens_the_interval():
    rng = np.random.default_rng(0)
    quiet = [[0.5] * 4 for _ in range(100)]
    noisy = [list(rng.integers(0, 2, size=4).astype(float)) for _ in range(100)]
    assert paired_change(quiet, quiet).high - paired_change(quiet, quiet).low == 0.0
    spread = paired_change(quiet, noisy)
    assert spread.high - spread.low > 0.05


def test_same_seed_same_interval_and_confidence_narrows_it():
    rng = np.random.default_rng(1)
    before = rng.integers(0, 2, size=(80, 4)).tolist()
    after = rng.integers(0, 2, size=(80, 4)).tolist()
    assert paired_change(before, after, seed=5) == paired_change(before, after, seed=5)
    wide, narrow = paired_change(before, after, confidence=0.99), paired_change(before, after, confidence=0.5)
    assert wide.low < narrow.low < narrow.high < wide.high


@pytest.mark.parametrize("before, after, message", [
    ([[1, 0]], [[1], [0]], "before holds 1 problems but after holds 2"),
    ([], [], "before holds no problems"),
    ([[1], []], [[1], [1]], r"before\[1\] holds no samples"),
    ([[1], [float("nan")]], [[1], [1]], r"before\[1\] holds a value that is not a finite number"),
])
def test_it_refuses_unpaired_or_empty_input(before, after, message):
    with pytest.raises(ValueError, match=message):
        paired_change(before, after)


def test_it_refuses_a_confidence_outside_zero_and_one():
    with pytest.raises(ValueError, match="confidence"):
        paired_change([[1]], [[0]], confidence=1.0)


def test_scaled_gives_points():
    result = paired_change([[0, 0], [1, 0]], [[1, 0], [1, 1]], resamples=100).scaled(100)
    assert result.change == pytest.approx(50.0)


def simulated_coverage(problems: int, samples: int, trials: int, seed: int) -> float:
    """Share of trials whose 95% interval holds the true mean change (0.075) of a population of problems."""
    rng = np.random.default_rng(seed)
    hits = 0
    for trial in range(trials):
        before_rates = rng.uniform(0.0, 0.85, size=problems)
        after_rates = before_rates + rng.uniform(0.0, 0.15, size=problems)  # mean change 0.075
        before = (rng.random((problems, samples)) < before_rates[:, None]).astype(float)
        after = (rng.random((problems, samples)) < after_rates[:, None]).astype(float)
        result = paired_change(before, after, resamples=600, seed=trial)
        hits += result.low <= 0.075 <= result.high
    return hits / trials


def test_coverage_is_near_the_confidence_in_simulation():
    # 400 trials: the standard error of a 95% coverage is about 1.1 points
    coverage = simulated_coverage(problems=64, samples=4, trials=400, seed=11)
    assert 0.92 <= coverage <= 0.98, coverage
