"""The length reward of METHOD.md section 4, checked against hand computations."""

import pytest
import torch

from training.length_reward import grouped_length_rewards, length_penalty_weight_at, length_rewards


def test_correct_responses_get_lambda_and_a_wrong_one_is_capped_at_zero():
    rewards = length_rewards(torch.tensor([10, 20, 30]), torch.tensor([True, False, True]))
    # lambda = 0.5 - (len - 10) / 20 = [0.5, 0.0, -0.5]
    assert torch.allclose(rewards, torch.tensor([0.5, 0.0, -0.5]))


def test_wrong_responses_only_keep_the_negative_part_of_lambda():
    rewards = length_rewards(torch.tensor([10, 20, 30]), torch.tensor([False, False, False]))
    assert torch.allclose(rewards, torch.tensor([0.0, 0.0, -0.5]))


def test_uneven_lengths_follow_the_formula():
    rewards = length_rewards(torch.tensor([100.0, 140.0, 500.0]), torch.tensor([True, True, False]))
    # span 400: lambda = [0.5, 0.5 - 40/400, 0.5 - 1] = [0.5, 0.4, -0.5]
    assert torch.allclose(rewards, torch.tensor([0.5, 0.4, -0.5]))


@pytest.mark.parametrize("correct", [[True, True, True], [False, True, False]])
def test_equal_lengths_give_zero_length_reward(correct):
    rewards = length_rewards(torch.tensor([7, 7, 7]), torch.tensor(correct))
    assert torch.equal(rewards, torch.zeros(3))


def test_a_single_response_gets_zero():
    assert torch.equal(length_rewards(torch.tensor([42]), torch.tensor([True])), torch.zeros(1))


def test_the_grouped_version_equals_the_row_by_row_one():
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 50, (6, 5), generator=generator)
    lengths[2] = 9  # one group of equal lengths
    correct = torch.rand(6, 5, generator=generator) > 0.5
    grouped = grouped_length_rewards(lengths, correct)
    expected = torch.stack([length_rewards(lengths[row], correct[row]) for row in range(6)])
    assert grouped.shape == (6, 5)
    assert torch.allclose(grouped, expected)
    assert torch.equal(grouped[2], torch.zeros(5))


def test_length_rewards_stay_between_minus_and_plus_one_half():
    lengths = torch.randint(1, 1000, (20, 8), generator=torch.Generator().manual_seed(1))
    rewards = grouped_length_rewards(lengths, torch.ones(20, 8, dtype=torch.bool))
    assert rewards.min() >= -0.5 and rewards.max() <= 0.5


def test_mismatched_shapes_are_refused():
    with pytest.raises(ValueError, match="lengths and correct"):
        length_rewards(torch.tensor([1, 2]), torch.tensor([True]))


def test_the_weight_is_zero_during_the_warm_up_then_constant():
    schedule = [length_penalty_weight_at(iteration, 0.3, warmup_iterations=2) for iteration in range(1, 6)]
    assert schedule == [0.0, 0.0, 0.3, 0.3, 0.3]


def test_without_warm_up_the_weight_applies_from_the_first_iteration():
    assert length_penalty_weight_at(1, 0.5, warmup_iterations=0) == 0.5
