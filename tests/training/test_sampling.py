"""Problem samplers of METHOD.md section 5: probabilities by hand, pools, draws and resume."""

import json

import numpy as np
import pytest

from common.registry import UnknownEntry
from common.knobs import ConfigError, parse_config
from training.config import RLConfig
from training.sampling import (CurriculumSampler, PrioritizedSampler, UniformSampler, WarmupThenHardSampler,
                               difficulty_sort_key, hard_by_difficulty, hard_by_pass_rate, make_sampler, samplers)
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
    draws = sampler.sample(1, 3000, np.random.default_rng(0))
    assert np.allclose(np.bincount(draws, minlength=3), 1000, atol=90)


def test_prioritized_draws_skip_solved_problems_while_others_remain():
    sampler = PrioritizedSampler(4, initial_success=[1.0, 0.0, 1.0, 0.5])
    rng = np.random.default_rng(0)
    draws = np.concatenate([sampler.sample(1, 2, rng) for _ in range(200)])
    assert set(draws.tolist()) == {1, 3}
    # asking for more problems than remain unsolved draws with replacement among them
    assert set(sampler.sample(1, 6, rng).tolist()) <= {1, 3}


def test_every_draw_of_a_prioritized_batch_has_the_documented_probabilities():
    success = np.linspace(0.0, 0.95, 20)  # 1 - s_i from 1 to 0.05: the hardest 20 times as likely as the easiest
    sampler = PrioritizedSampler(20, initial_success=success.tolist())
    rng = np.random.default_rng(0)
    counts = np.bincount(np.concatenate([sampler.sample(1, 16, rng) for _ in range(4000)]), minlength=20)
    expected = sampler.probabilities(1) * counts.sum()
    assert np.allclose(counts, expected, rtol=0.1, atol=40)  # drawing 16 distinct problems of 20 gave 5.2x
    assert 17 < counts[0] / counts[-1] < 23


def test_text_difficulty_labels_order_their_numbers_as_numbers():
    labels = ["Level 10", "Level 2", "hard", "3", "", "Level 1", "easy"]
    assert sorted(labels, key=difficulty_sort_key) == ["easy", "hard", "3", "Level 1", "Level 2", "Level 10", ""]


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
    assert samplers.names() == ["curriculum", "prioritized", "uniform", "warmup_then_hard"]
    assert isinstance(make_sampler("uniform", RECORDS, 5), UniformSampler)
    curriculum = make_sampler("curriculum", RECORDS, curriculum_iterations=3)
    assert pool_of(curriculum, 1) == {0} and pool_of(curriculum, 2) == {0, 2}
    prioritized = make_sampler("prioritized", RECORDS, 5)
    assert np.allclose(prioritized.probabilities(1), np.array([0.5, 1.0, 0.0]) / 1.5)
    with pytest.raises(UnknownEntry, match="sampling strategy 'random'"):
        make_sampler("random", RECORDS, 5)


# figure 9: labels ordered easy < medium < hard < expert -> the upper half (hard, expert) is hard
LABELLED = [PromptRecord(prompt_id=str(index), problem="p", difficulty=difficulty, pass_rate=rate)
            for index, (difficulty, rate) in enumerate([("easy", 0.9), ("hard", 0.2), ("medium", None),
                                                         ("expert", 0.5), ("", 0.0), ("Hard", 0.75)])]


def test_warmup_then_hard_switches_to_hard_problems_only_after_n_iterations():
    sampler = make_sampler("warmup_then_hard", LABELLED, curriculum_iterations=3)
    assert isinstance(sampler, WarmupThenHardSampler)
    for iteration in (1, 3):  # iterations 1..N: the whole set, unlabelled problem included
        assert np.allclose(sampler.probabilities(iteration), [1 / 6] * 6)
    for iteration in (4, 50):  # from N + 1: hard, expert and Hard (the same level as hard), 1/3 each
        assert np.allclose(sampler.probabilities(iteration), [0, 1 / 3, 0, 1 / 3, 0, 1 / 3])


def test_after_the_switch_draws_hit_only_hard_problems():
    sampler = make_sampler("warmup_then_hard", LABELLED, curriculum_iterations=2)
    rng = np.random.default_rng(0)
    before = np.concatenate([sampler.sample(2, 3, rng) for _ in range(200)])
    after = np.concatenate([sampler.sample(3, 3, rng) for _ in range(200)])
    assert set(before.tolist()) == set(range(6))
    assert set(after.tolist()) == {1, 3, 5}
    # without replacement while enough hard problems remain, with replacement among them beyond that
    assert sorted(sampler.sample(3, 3, rng).tolist()) == [1, 3, 5]
    assert set(sampler.sample(3, 7, rng).tolist()) <= {1, 3, 5}


def test_hard_by_pass_rate_takes_rates_at_or_below_the_threshold_and_never_an_unmeasured_problem():
    sampler = make_sampler("warmup_then_hard", LABELLED, curriculum_iterations=1, hard_problems_by="pass_rate",
                           hard_pass_rate_threshold=0.5)
    assert np.allclose(sampler.probabilities(1), [1 / 6] * 6)
    # pass rates 0.9, 0.2, None, 0.5, 0.0, 0.75: a high pass rate is easy; 0.5 is at the threshold
    assert np.allclose(sampler.probabilities(2), [0, 1 / 3, 0, 1 / 3, 1 / 3, 0])
    stricter = make_sampler("warmup_then_hard", LABELLED, 1, hard_problems_by="pass_rate",
                            hard_pass_rate_threshold=0.1)
    assert np.allclose(stricter.probabilities(2), [0, 0, 0, 0, 1, 0])
    assert hard_by_pass_rate([None, 1.0, 0.3], 1.0).tolist() == [False, True, True]


def test_hard_levels_are_the_upper_half_of_the_ordered_labels_and_at_least_the_top_one():
    assert hard_by_difficulty(["easy", "medium", "hard"]).tolist() == [False, False, True]
    assert hard_by_difficulty(["1", "10", "2", "3", "2"]).tolist() == [False, True, False, True, False]
    assert hard_by_difficulty(["easy", "", "easy"]).tolist() == [True, False, True]  # one level: it is the top
    # the ladder, then numbers, then other labels A-Z: of easy, 5, beta, alpha the top two are alpha and beta
    assert hard_by_difficulty(["easy", "5", "beta", "alpha"]).tolist() == [False, False, True, True]


def test_warmup_then_hard_refuses_a_set_without_hard_problems_naming_the_knob():
    unlabelled = [PromptRecord(prompt_id=str(index), problem="p", pass_rate=0.9) for index in range(3)]
    with pytest.raises(ValueError, match="hard_problems_by=difficulty: no problem has a difficulty label"):
        make_sampler("warmup_then_hard", unlabelled, 5)
    with pytest.raises(ValueError, match=r"hard_pass_rate_threshold \(0.5"):
        make_sampler("warmup_then_hard", unlabelled, 5, hard_problems_by="pass_rate")
    with pytest.raises(ValueError, match="unknown hard_problems_by 'label'"):
        make_sampler("warmup_then_hard", unlabelled, 5, hard_problems_by="label")
    with pytest.raises(ValueError, match="at least one hard problem"):
        WarmupThenHardSampler([False, False], curriculum_iterations=1)


def test_the_other_strategies_ignore_the_hardness_knobs():
    for strategy in ("uniform", "curriculum", "prioritized"):
        plain = make_sampler(strategy, LABELLED, 3)
        tuned = make_sampler(strategy, LABELLED, 3, hard_problems_by="pass_rate", hard_pass_rate_threshold=0.0)
        for iteration in (1, 2, 4):
            assert np.array_equal(plain.probabilities(iteration), tuned.probabilities(iteration)), strategy


def test_a_warmup_then_hard_state_round_trip_gives_identical_later_samples():
    original = make_sampler("warmup_then_hard", LABELLED, 2, hard_problems_by="pass_rate")
    original.update([0, 1], [1.0, 0.5])
    state = json.loads(json.dumps(original.state_dict()))
    assert state["hard"] == [1, 3, 4]
    restored = make_sampler("warmup_then_hard", LABELLED, 2, hard_problems_by="pass_rate")
    restored.load_state_dict(state)
    assert np.array_equal(restored.success_rates(), original.success_rates())
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for iteration in range(1, 6):
        assert np.array_equal(original.sample(iteration, 2, rng_a), restored.sample(iteration, 2, rng_b))
    by_label = make_sampler("warmup_then_hard", LABELLED, 2)  # other hard problems: refused
    with pytest.raises(ValueError, match="hard problems differ"):
        by_label.load_state_dict(state)


def test_the_config_refuses_warmup_then_hard_without_iterations_after_the_warm_up():
    with pytest.raises(ConfigError) as refused:
        parse_config(RLConfig, {"sampling_strategy": "warmup_then_hard", "iterations": 10,
                                "curriculum_iterations": 10})
    assert "curriculum_iterations" in str(refused.value.errors)
    config = parse_config(RLConfig, {"sampling_strategy": "warmup_then_hard", "iterations": 11,
                                     "curriculum_iterations": 10, "hard_problems_by": "pass_rate",
                                     "hard_pass_rate_threshold": 0.25})
    assert (config.hard_problems_by, config.hard_pass_rate_threshold) == ("pass_rate", 0.25)
    with pytest.raises(ConfigError):
        parse_config(RLConfig, {"hard_pass_rate_threshold": 1.5})


def test_other_datasets_names_for_the_ladder_and_unknown_labels_are_understood():
    """APPS (introductory < interview < competition) and TACO (EASY ... VERY_HARD, UNKNOWN_DIFFICULTY): sorted A-Z
    they would make the easiest level the hardest; a label saying the difficulty is unknown is unlabelled."""
    apps = ["introductory", "interview", "competition", "interview"]
    assert hard_by_difficulty(apps).tolist() == [False, False, True, False]
    assert CurriculumSampler(apps, curriculum_iterations=3).levels == ["introductory", "interview", "competition"]
    taco = ["EASY", "MEDIUM", "MEDIUM_HARD", "HARD", "VERY_HARD", "UNKNOWN_DIFFICULTY"]
    assert hard_by_difficulty(taco).tolist() == [False, False, False, True, True, False]
    mixed = CurriculumSampler(["easy", "Introductory", "hard", "unknown", ""], curriculum_iterations=3)
    assert mixed.levels == ["easy", "hard", "unknown"]  # easy and introductory one level; unknown with unlabelled
    assert pool_of(mixed, 1) == {0, 1}
