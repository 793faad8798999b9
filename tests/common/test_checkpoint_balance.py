"""The best-balance rule that picks long2short RL's starting checkpoint."""

from __future__ import annotations

import pytest

from common.checkpoint_balance import EvaluatedCheckpoint, best_balance


def point(iteration: int, accuracy: float, tokens: float) -> EvaluatedCheckpoint:
    return EvaluatedCheckpoint(key=100 + iteration, iteration=iteration, accuracy=accuracy, mean_tokens=tokens)


def test_it_takes_the_shortest_checkpoint_within_the_tolerance_of_the_best():
    checkpoints = [point(0, 0.30, 12.0), point(10, 0.47, 18.0), point(20, 0.485, 24.0), point(30, 0.50, 30.0)]
    chosen, reason = best_balance(checkpoints, tolerance_points=2.0)
    assert chosen.iteration == 20  # 48.5% is 1.5 points below 50%; 47% is 3 below
    assert reason.startswith("iteration 20 (48.5% at 24.0 tokens): the fewest tokens among the 2 of 4")
    assert "iteration 30, 50.0% at 30.0 tokens" in reason


def test_a_zero_tolerance_takes_the_most_accurate_and_ties_go_to_the_later_iteration():
    checkpoints = [point(10, 0.5, 20.0), point(20, 0.4, 5.0), point(30, 0.5, 20.0)]
    assert best_balance(checkpoints, tolerance_points=0.0)[0].iteration == 30
    assert best_balance(checkpoints, tolerance_points=10.0)[0].iteration == 20


def test_it_refuses_nothing_to_choose_from_and_a_negative_tolerance():
    with pytest.raises(ValueError, match="no evaluated checkpoint"):
        best_balance([])
    with pytest.raises(ValueError, match="tolerance_points"):
        best_balance([point(1, 0.5, 3.0)], tolerance_points=-1)
