"""Problem samplers of METHOD.md section 5: probabilities by hand, pools, draws and resume."""

import json

import numpy as np
import pytest

from common.registry import UnknownEntry
from training.sampling import (CurriculumSampler, PrioritizedSampler, UniformSampler, difficulty_sort_key,
                               make_sampler, samplers)
from training.types import PromptRecord


def test_prioritized_probabilities_are_proportional_to_one_minus_success():
    sampler = PrioritizedSampler(4)
    sampler.update([0, 1, 2, 3], [0.0, 0.5, 1.0, 0.25])
    assert np.allclose(sampler.probabilities(1), np.array([1.0, 0.5, 0.0, 0.75]) / 2.25)


def test_prioritized_success_is_a_count_weighted_running_mean_with_the_prior_as_one_observation():
    sampler = PrioritizedSampler(3, initial_success=[0.5, None, 0.0])
    sampler.update([0, 1, 0], [1.0, 0.25, 0.0])
    sampler.update([0, 1], [1.0, 0.75])
    # problem 0: prior 0.5, then 1, 0, 1 -> 2.5 / 4; problem 1: no prior, 0.25, 0.75 -> 0.5; problem 2: prior 0
    assert np.allclose(sampler.success_rates(), [0.625, 0.5, 0.0])
    assert np.allclose(sampler.probabilities(5), np.array([0.375, 0.5, 1.0]) / 1.875)


def test_a_problem_without_prior_or_observation_has_top_priority():
    sampler = PrioritizedSampler(2, initial_success=[0.8, None])
    assert np.allclose(sampler.probabilities(1), np.array([0.2, 1.0]) / 1.2)


def test_when_every_problem_is_solved_prioritized_sampling_falls_back_to_uniform():
    sampler = PrioritizedSampler(3, initial_success=[1.0, 1.0, 1.0])
    assert np.allclose(sampler.probabilities(1), [1 / 3] * 3)
    assert sorted(sampler.sample(1, 3, np.random.default_rng(0))) == [0, 1, 2]


def test_prioritized_draws_skip_solved_problems_while_others_remain():
    sampler = PrioritizedSampler(4, initial_success=[1.0, 0.0, 1.0, 0.5])
    rng = np.random.default_rng(0)
    draws = np.concatenate([sampler.sample(1, 2, rng) for _ in range(200)])
    assert set(draws.tolist()) == {1, 3}
    # asking for more problems than remain unsolved draws with replacement among them
    assert set(sampler.sample(1, 6, rng).tolist()) <= {1, 3}


def test_update_refuses_rates_outside_zero_one_and_unknown_problems():
    sampler = PrioritizedSampler(2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        sampler.update([0], [1.5])
    with pytest.raises(ValueError, match="indices"):
        sampler.update([2], [0.5])


DIFFICULTIES = ["hard", "easy", "expert", "medium", "easy", "medium", "hard", "expert"]


def pool_of(sampler, iteration):
    return set(np.flatnonzero(sampler.probabilities(iteration)).tolist())


def drawn_difficulties(sampler, iteration, rng, draws=300):
    indices = np.concatenate([sampler.sample(iteration, 2, rng) for _ in range(draws)])
    return {DIFFICULTIES[index] for index in indices}


def test_the_curriculum_starts_on_the_easiest_level():
    sampler = CurriculumSampler(DIFFICULTIES, curriculum_iterations=10)
    assert sampler.levels == ["easy", "medium", "hard", "expert"]
    assert pool_of(sampler, 1) == {1, 4}
    assert np.allclose(sampler.probabilities(1)[[1, 4]], 0.5)
    assert drawn_difficulties(sampler, 1, np.random.default_rng(0)) == {"easy"}


def test_halfway_through_the_curriculum_two_of_four_levels_are_open():
    sampler = CurriculumSampler(DIFFICULTIES, curriculum_iterations=10)
    assert pool_of(sampler, 5) == {1, 3, 4, 5}
    assert np.allclose(sampler.probabilities(5)[[1, 3, 4, 5]], 0.25)
    assert drawn_difficulties(sampler, 5, np.random.default_rng(1)) == {"easy", "medium"}


def test_from_the_last_curriculum_iteration_every_level_is_drawn():
    sampler = CurriculumSampler(DIFFICULTIES, curriculum_iterations=10)
    rng = np.random.default_rng(2)
    for iteration in (10, 25):
        assert np.allclose(sampler.probabilities(iteration), 1 / 8)
        assert drawn_difficulties(sampler, iteration, rng) == set(DIFFICULTIES)


def test_the_curriculum_pool_widens_one_level_at_a_time():
    sampler = CurriculumSampler(DIFFICULTIES, curriculum_iterations=8)
    # ceil(4 * t / 8): t=1,2 -> 1; 3,4 -> 2; 5,6 -> 3; 7,8 -> 4
    assert [sampler.levels_open_at(t) for t in range(1, 10)] == [1, 1, 2, 2, 3, 3, 4, 4, 4]


def test_numeric_labels_are_ordered_numerically_and_unknown_ones_after_the_ladder():
    assert sorted(["10", "2", "1"], key=difficulty_sort_key) == ["1", "2", "10"]
    labels = ["zeta", "Hard", "", "alpha", "easy", "3"]
    assert sorted(labels, key=difficulty_sort_key) == ["easy", "Hard", "3", "alpha", "zeta", ""]
    sampler = CurriculumSampler(["10", "2", "1", "2"], curriculum_iterations=3)
    assert pool_of(sampler, 1) == {2}
    assert pool_of(sampler, 2) == {1, 2, 3}


def test_a_curriculum_with_one_level_uses_every_problem_from_the_start():
    sampler = CurriculumSampler(["", "", ""], curriculum_iterations=10)
    assert np.allclose(sampler.probabilities(1), 1 / 3)


def test_uniform_sampling_draws_without_replacement():
    sampler = UniformSampler(5)
    assert np.allclose(sampler.probabilities(3), 0.2)
    rng = np.random.default_rng(0)
    for _ in range(50):
        indices = sampler.sample(1, 5, rng)
        assert sorted(indices.tolist()) == [0, 1, 2, 3, 4]
    more = sampler.sample(1, 12, rng)
    assert len(more) == 12 and set(more.tolist()) <= set(range(5))


def test_a_state_dict_round_trip_gives_identical_later_samples():
    original = PrioritizedSampler(6, initial_success=[0.1, None, 0.9, 0.5, None, 0.0])
    original.update([0, 1, 2], [1.0, 0.5, 0.0])
    state = json.loads(json.dumps(original.state_dict()))  # stored as plain data in a checkpoint
    restored = PrioritizedSampler(6)
    restored.load_state_dict(state)
    assert np.array_equal(restored.probabilities(4), original.probabilities(4))
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    for iteration in range(4, 8):
        a, b = original.sample(iteration, 3, rng_a), restored.sample(iteration, 3, rng_b)
        assert np.array_equal(a, b)
        original.update(a, [0.5, 1.0, 0.0])
        restored.update(b, [0.5, 1.0, 0.0])
    assert np.array_equal(original.success_rates(), restored.success_rates())


def test_loading_a_state_for_another_number_of_problems_is_refused():
    with pytest.raises(ValueError, match="covers 3 problems"):
        UniformSampler(4).load_state_dict(UniformSampler(3).state_dict())


RECORDS = [PromptRecord(prompt_id=str(index), problem="p", difficulty=difficulty, pass_rate=rate)
           for index, (difficulty, rate) in enumerate([("easy", 0.5), ("hard", None), ("medium", 1.0)])]


def test_make_sampler_builds_each_registered_strategy_from_records():
    assert samplers.names() == ["curriculum", "prioritized", "uniform"]
    assert isinstance(make_sampler("uniform", RECORDS, 5), UniformSampler)
    curriculum = make_sampler("curriculum", RECORDS, curriculum_iterations=3)
    assert pool_of(curriculum, 1) == {0} and pool_of(curriculum, 2) == {0, 2}
    prioritized = make_sampler("prioritized", RECORDS, 5)
    assert np.allclose(prioritized.probabilities(1), np.array([0.5, 1.0, 0.0]) / 1.5)
    with pytest.raises(UnknownEntry, match="sampling strategy 'random'"):
        make_sampler("random", RECORDS, 5)
