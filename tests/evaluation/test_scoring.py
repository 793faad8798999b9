"""Scoring functions checked against hand computations."""

import dataclasses
import math

import numpy as np
import pytest

from evaluation.scoring import (
    BenchmarkScore,
    accuracy_by_length_bins,
    bootstrap_ci,
    majority_vote_accuracy,
    vote_key,
    mean_pass_at_k,
    pass_at_1_averaged,
    pass_at_k,
    score_benchmark,
)

T, F = True, False


# pass@k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (8, 1, 4, 0.5),  # 1 - C(7,4)/C(8,4) = 1 - 35/70
        (4, 0, 2, 0.0),  # no correct sample: never passes
        (4, 4, 1, 1.0),  # every sample correct
        (5, 3, 3, 1.0),  # n - c = 2 < k: any 3 samples include a correct one
        (10, 3, 1, 0.3),  # pass@1 is c / n
    ],
)
def test_pass_at_k_matches_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_equals_the_binomial_formula_over_a_grid():
    for n in range(1, 31):
        for c in range(n + 1):
            for k in range(1, n + 1):
                expected = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12), (n, c, k)


def test_pass_at_k_stays_finite_where_binomials_overflow_floats():
    # C(2000, 1000) is far beyond float range; Python's exact integers give the reference.
    expected = 1 - math.comb(1990, 1000) / math.comb(2000, 1000)
    assert pass_at_k(2000, 10, 1000) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (-1, 0, 1, "^n must be non-negative"),
        (3, -1, 1, "^c must be non-negative"),
        (3, 1, 0, "^k must be at least 1"),
        (3, 1, -2, "^k must be at least 1"),
        (3, 4, 1, "^c=4"),
        (3, 1, 4, "^k=4"),
    ],
)
def test_pass_at_k_errors_name_the_argument(n, c, k, message):
    with pytest.raises(ValueError, match=message):
        pass_at_k(n, c, k)


# Pass@1 averaged and mean pass@k over problems

# Problem 0: 1 of 4 correct; problem 1: 2 of 2; problem 2: 0 of 3. Each problem has its own n.
UNEVEN = [[T, F, F, F], [T, T], [F, F, F]]


def test_pass_at_1_averaged_is_the_mean_of_per_problem_means():
    # (0.25 + 1.0 + 0.0) / 3, not the pooled 3 / 9.
    assert pass_at_1_averaged(UNEVEN) == pytest.approx(1.25 / 3)


def test_mean_pass_at_1_equals_pass_at_1_averaged():
    assert mean_pass_at_k(UNEVEN, 1) == pytest.approx(pass_at_1_averaged(UNEVEN))


def test_mean_pass_at_k_uses_each_problems_own_sample_count():
    # Problem 0: 1 - C(3,2)/C(4,2) = 0.5; problem 1: 1; problem 2: 0.
    assert mean_pass_at_k(UNEVEN, 2) == pytest.approx(0.5)


def test_mean_pass_at_k_refuses_k_above_a_problems_samples():
    with pytest.raises(ValueError, match="k=3"):
        mean_pass_at_k(UNEVEN, 3)


def test_scores_refuse_an_empty_benchmark_or_an_empty_problem():
    with pytest.raises(ValueError, match="no problems"):
        pass_at_1_averaged([])
    with pytest.raises(ValueError, match=r"correct\[1\] holds no samples"):
        mean_pass_at_k([[T], []], 1)


# maj@k

VOTE_ANSWERS = [
    ["5", "7", "7", "5"],  # 2-2 tie: "7" reaches 2 first (sample 2) and is wrong
    [None, None, None, None],  # nothing extracted: wrong
    ["3", None, "4", "3"],  # None ignored, "3" wins and is right
    ["2", "1", "1", "9"],  # maj@4 picks wrong "1"; maj@2 ties 1-1 and keeps the first, right "2"
]
VOTE_CORRECT = [[T, F, F, T], [F, F, F, F], [T, F, F, T], [T, F, F, F]]


def test_majority_vote_over_all_samples_breaks_ties_by_who_reached_the_top_count_first():
    assert majority_vote_accuracy(VOTE_ANSWERS, VOTE_CORRECT) == pytest.approx(1 / 4)
    assert majority_vote_accuracy(VOTE_ANSWERS, VOTE_CORRECT, k=4) == pytest.approx(1 / 4)


def test_majority_vote_at_k_only_looks_at_the_first_k_samples():
    # Problem 0: "5" vs "7" tie at one each, "5" first -> right; 1: wrong; 2: "3" -> right; 3: "2" -> right.
    assert majority_vote_accuracy(VOTE_ANSWERS, VOTE_CORRECT, k=2) == pytest.approx(3 / 4)


def test_correct_answers_vote_together_however_they_are_written():
    # AIME: "025", "25" and "25.0" all equal 25 for the grader; two wrong "26" must not outvote them
    assert majority_vote_accuracy([["025", "25", "25.0", "26", "26"]], [[T, T, T, F, F]]) == 1.0
    assert majority_vote_accuracy([["\\frac12", "0.5", "3", "3"], ["(B)", "140°", "A", "A"]],
                                  [[T, T, F, F], [T, T, F, F]]) == 1.0  # 2-2: the reference reached 2 first


def test_wrong_answers_written_differently_vote_together():
    # "7", "7.0" and "$7$" are one wrong answer with three votes against two right ones
    assert majority_vote_accuracy([["5", "5", "7", "7.0", " $7$ "]], [[T, T, F, F, F]]) == 0.0
    assert majority_vote_accuracy([["C", "(b)", "B.", "B"]], [[T, F, F, F]]) == 0.0  # one option letter, 3 votes
    assert vote_key("1,000", False) == vote_key("1000.0", False) == "1000"
    assert vote_key("x + 1", False) == "x+1" and vote_key(None, False) is None


def test_a_list_is_not_a_number_with_thousands_separators():
    assert vote_key("1,2", False) != vote_key("12", False)
    assert vote_key("1, 2", False) == vote_key("1,2", False) == "1,2"
    assert vote_key("-12,345.5", False) == vote_key("-12345.5", False)
    assert majority_vote_accuracy([["5", "5", "1,2", "12", "1, 2"]], [[T, T, F, F, F]]) == 1.0  # 2 against 2


def test_a_sample_the_judge_found_correct_votes_for_the_reference_without_an_extracted_answer():
    # rule_then_judge: the judge decides exactly the samples the rule extracted nothing from
    assert majority_vote_accuracy([[None, None, "7"]], [[T, T, F]]) == 1.0
    assert vote_key(None, True) == vote_key("25", True)


def test_majority_vote_counts_problems_without_votes_as_wrong():
    assert majority_vote_accuracy([[None, None]], [[F, F]]) == 0.0


def test_majority_vote_refuses_mismatched_shapes_and_bad_k():
    with pytest.raises(ValueError, match="answers holds 1 problems"):
        majority_vote_accuracy([["1"]], [[T], [F]])
    with pytest.raises(ValueError, match=r"answers\[0\] holds 1 samples"):
        majority_vote_accuracy([["1"]], [[T, F]])
    with pytest.raises(ValueError, match="k=3"):
        majority_vote_accuracy([["1", "2"]], [[T, F]], k=3)
    with pytest.raises(ValueError, match="^k must be at least 1"):
        majority_vote_accuracy([["1", "2"]], [[T, F]], k=0)


# Bootstrap confidence interval


def test_bootstrap_of_a_constant_score_has_zero_width():
    assert bootstrap_ci([0.5] * 50) == (0.5, 0.5)


def test_bootstrap_of_a_single_problem_is_its_score():
    assert bootstrap_ci([0.25]) == (0.25, 0.25)


def test_bootstrap_interval_contains_the_mean():
    scores = np.random.default_rng(1).random(200)
    low, high = bootstrap_ci(scores)
    assert low < scores.mean() < high


def test_bootstrap_is_reproducible_with_the_seed():
    scores = np.random.default_rng(2).integers(0, 2, 60).astype(float)
    assert bootstrap_ci(scores, seed=7) == bootstrap_ci(scores, seed=7)
    assert bootstrap_ci(scores, seed=7) != bootstrap_ci(scores, seed=8)


def test_bootstrap_width_shrinks_like_one_over_root_problems():
    rng = np.random.default_rng(3)
    few, many = rng.integers(0, 2, 100).astype(float), rng.integers(0, 2, 1600).astype(float)
    width_few = np.subtract(*bootstrap_ci(few)[::-1])
    width_many = np.subtract(*bootstrap_ci(many)[::-1])
    # Normal approximation: 2 * 1.96 * 0.5 / sqrt(100) ~ 0.196; 16x the problems should narrow it ~4x.
    assert 0.15 < width_few < 0.25
    assert 2.5 < width_few / width_many < 6.5


def test_bootstrap_refuses_bad_arguments():
    with pytest.raises(ValueError, match="per_problem_scores"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([0.1, 0.2], confidence=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci([0.1, 0.2], resamples=0)


# Accuracy by length


def test_length_bins_match_the_database_query_example():
    # Same samples as tests/webapp/test_accuracy_by_length.py.
    samples = [(10, T), (50, T), (99, F), (150, F), (300, T), (399, F)]
    curve = accuracy_by_length_bins([tokens for tokens, _ in samples], [hit for _, hit in samples], bin_tokens=100)
    assert [(row["bin_start"], row["samples"]) for row in curve] == [(0, 3), (100, 1), (300, 2)]
    assert [row["accuracy"] for row in curve] == pytest.approx([2 / 3, 0.0, 0.5])
    assert curve[0]["mean_tokens"] == pytest.approx(53.0)
    assert all(set(row) == {"bin_start", "samples", "accuracy", "mean_tokens", "truncated"} for row in curve)
    cut = accuracy_by_length_bins([10, 399, 399], [T, F, T], bin_tokens=100, truncated=[F, T, T])
    assert [(row["bin_start"], row["truncated"]) for row in cut] == [(0, 0), (300, 2)]
    assert all(isinstance(row["mean_tokens"], float) for row in curve)


def test_length_bins_are_ordered_by_length_whatever_the_input_order():
    curve = accuracy_by_length_bins([250, 5, 120], [T, F, T], bin_tokens=100)
    assert [row["bin_start"] for row in curve] == [0, 100, 200]


def test_length_bins_refuse_a_width_below_one_and_mismatched_inputs():
    with pytest.raises(ValueError, match="bin_tokens"):
        accuracy_by_length_bins([10], [T], 0)
    with pytest.raises(ValueError, match="lengths holds 2 samples but correct holds 1"):
        accuracy_by_length_bins([10, 20], [T], 100)


# score_benchmark

BENCH_CORRECT = [[T, T, F, F], [T, T, T, T], [F, F, F, F]]
BENCH_LENGTHS = [[100, 200, 300, 400], [50, 50, 50, 50], [1000, 1000, 1000, 1000]]
BENCH_ANSWERS = [["a", "a", "b", "c"], ["x", "x", "x", "x"], [None, None, None, None]]


def test_score_benchmark_on_a_hand_built_set():
    result = score_benchmark(BENCH_CORRECT, BENCH_LENGTHS, answers=BENCH_ANSWERS)
    assert result.score == pytest.approx(0.5)  # (0.5 + 1 + 0) / 3
    assert (result.ci_low, result.ci_high) == bootstrap_ci([0.5, 1.0, 0.0])
    assert result.ci_low <= result.score <= result.ci_high
    assert result.mean_response_tokens == pytest.approx(5200 / 12)
    assert (result.num_problems, result.samples_per_problem) == (3, 4)
    # pass@4: problem 0 has n - c = 2 < 4 so 1, problem 1 gives 1, problem 2 gives 0; pass@8 exceeds n = 4.
    # maj@4: "a" (right), "x" (right), all None (wrong).
    assert result.metrics == pytest.approx({"pass@1": 0.5, "pass@4": 2 / 3, "maj@4": 2 / 3})


def test_score_benchmark_leaves_out_maj_without_answers_and_is_frozen():
    result = score_benchmark(BENCH_CORRECT, BENCH_LENGTHS, ks=(2,))
    assert isinstance(result, BenchmarkScore)
    assert result.metrics == pytest.approx({"pass@2": (1 - 1 / 6 + 1 + 0) / 3})  # problem 0: 1 - C(2,2)/C(4,2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.score = 1.0


def test_score_benchmark_refuses_lengths_shaped_unlike_correct():
    with pytest.raises(ValueError, match=r"lengths\[1\] holds 3 samples"):
        score_benchmark(BENCH_CORRECT, [[1, 2, 3, 4], [1, 2, 3], [1, 2, 3, 4]])


def test_wrong_answers_of_one_value_vote_together_when_a_comparison_is_given():
    """Three ways of writing 1/2 outvote two correct 7s: without the comparison they split and 7 wins."""
    from grading.verifier.equivalence import same_value

    answers, correct = [["7", "7", "\\frac{1}{2}", "0.5", "1/2"]], [[T, T, F, F, F]]
    assert majority_vote_accuracy(answers, correct) == 1.0
    assert majority_vote_accuracy(answers, correct, same_answer=same_value) == 0.0
    assert majority_vote_accuracy([["7", "7", "3", "0.5", "1/2"]], correct, same_answer=same_value) == 1.0
    score = score_benchmark(correct, [[5] * 5], answers, same_answer=same_value)
    assert score.metrics["maj@5"] == 0.0


def test_numbers_group_by_their_exact_value_without_comparing_pairs_and_join_other_forms():
    """Value keys group "0.5", "1/2" and "\\frac12" at once; an equation of that value still joins them."""
    from grading.verifier.equivalence import same_value
    from grading.verifier.fast_compare import value_key
    from evaluation.scoring import merged_vote_keys, vote_key

    compared = []

    def counting(first, second):
        compared.append((first, second))
        return same_value(first, second)

    answers = ["0.5", "3", "1/2", "\\frac12", "3.0", "x = 1/2"]
    keys = merged_vote_keys([vote_key(answer, False) for answer in answers], answers, counting, value_key)
    assert keys[0] == keys[2] == keys[3] == keys[5] and keys[1] == keys[4] and keys[0] != keys[1]
    assert all("x = 1/2" in pair for pair in compared)  # only the answer without a value was compared
    assert majority_vote_accuracy([answers + ["7"] * 3], [[F] * 6 + [T] * 3], same_answer=same_value,
                                  value_key=value_key) == 0.0  # four votes for 1/2 beat three correct


def test_the_progress_line_of_a_score_without_an_interval_says_so():
    """A corpus metric (lm-eval's BLEU) has no interval: the worker's log line once formatted None and failed the
    evaluation after its result was stored."""
    score = BenchmarkScore(score=0.31, ci_low=None, ci_high=None, mean_response_tokens=42.0, num_problems=2,
                           samples_per_problem=1, metrics={})
    assert score.summary() == "score 0.310 (no interval), mean 42.0 tokens"
    bounded = dataclasses.replace(score, ci_low=0.25, ci_high=0.375)
    assert bounded.summary() == "score 0.310 [0.250, 0.375], mean 42.0 tokens"
