"""Pure functions of the compare and long2short pages, checked against hand computations."""

from __future__ import annotations

import pytest

from common.id_lists import parse_id_list
from webapp.pages.compare_data import bucket_width, ema
from webapp.pages.long2short_data import accuracy_per_1k_tokens, token_efficiency


def test_ema_weights_the_past_by_the_smoothing():
    # s0 = 1; s1 = 0.5*1 + 0.5*3 = 2; s2 = 0.5*2 + 0.5*0 = 1; s3 = 0.5*1 + 0.5*5 = 3
    assert ema([1.0, 3.0, 0.0, 5.0], 0.5) == [1.0, 2.0, 1.0, 3.0]


def test_ema_with_smoothing_0_9_matches_hand_values():
    # s1 = 0.9*0 + 0.1*1 = 0.1; s2 = 0.9*0.1 + 0.1*1 = 0.19
    assert ema([0.0, 1.0, 1.0], 0.9) == pytest.approx([0.0, 0.1, 0.19])


def test_ema_without_smoothing_returns_the_values():
    assert ema([0.2, 0.9, 0.4], 0.0) == [0.2, 0.9, 0.4]


def test_ema_skips_missing_values_and_keeps_them_missing():
    # the None neither resets nor moves the average: s2 = 0.5*2 + 0.5*4 = 3
    assert ema([None, 2.0, None, 4.0], 0.5) == [None, 2.0, None, 3.0]


@pytest.mark.parametrize("smoothing", [-0.1, 1.0, 1.5])
def test_ema_rejects_smoothing_outside_0_to_1(smoothing):
    with pytest.raises(ValueError, match="smoothing must be in"):
        ema([1.0], smoothing)


@pytest.mark.parametrize("last_iteration, width, buckets", [
    (0, 1, 1), (499, 1, 500), (500, 2, 251), (999, 2, 500), (1000, 3, 334), (100_000, 201, 498),
])
def test_bucket_width_keeps_at_most_500_buckets(last_iteration, width, buckets):
    assert bucket_width(last_iteration) == width
    assert last_iteration // width + 1 == buckets <= 500


def test_parse_id_list_keeps_order_and_drops_repeats():
    assert parse_id_list("3, 1,3,, 2") == [3, 1, 2]


def test_parse_id_list_takes_its_range_and_names_the_part_outside_it():
    from common.id_lists import MAX_ID, NotAnId

    assert parse_id_list("0, 4", minimum=0) == [0, 4] and parse_id_list(None) == []
    with pytest.raises(NotAnId) as refused:
        parse_id_list(f"1, {MAX_ID + 1}")
    assert refused.value.part == str(MAX_ID + 1)


@pytest.mark.parametrize("text", ["x", "1,-2", "0", "1.5"])
def test_parse_id_list_names_the_part_that_is_not_an_id(text):
    with pytest.raises(ValueError, match="is not an id"):
        parse_id_list(text)


def test_accuracy_per_1k_tokens_divides_points_by_thousands_of_tokens():
    assert accuracy_per_1k_tokens(0.6, 2000.0) == pytest.approx(30.0)  # 60 points / 2k tokens
    assert accuracy_per_1k_tokens(0.55, 1500.0) == pytest.approx(36.6667, abs=1e-4)
    assert accuracy_per_1k_tokens(0.5, None) is None
    assert accuracy_per_1k_tokens(0.5, 0.0) is None


def test_token_efficiency_compares_with_the_parent():
    # variant 55% at 1500 tokens, parent 60% at 3000 tokens: -5 points, -50% tokens
    efficiency = token_efficiency(0.55, 1500.0, 0.6, 3000.0)
    assert efficiency.accuracy_change_points == pytest.approx(-5.0)
    assert efficiency.token_change_percent == pytest.approx(-50.0)
    assert efficiency.accuracy_per_1k_tokens == pytest.approx(36.6667, abs=1e-4)


def test_token_efficiency_without_a_parent_score_leaves_the_changes_empty():
    efficiency = token_efficiency(0.4, 800.0, None, None)
    assert (efficiency.accuracy_change_points, efficiency.token_change_percent) == (None, None)
    assert efficiency.accuracy_per_1k_tokens == pytest.approx(50.0)


def test_a_benchmark_scored_by_several_suites_gets_one_series_per_suite():
    from webapp.evals.benchmark_labels import suite_labels

    labels = suite_labels([("math500", 1, "short"), ("aime24", 1, "short"), ("math500", 2, "long"),
                           ("math500", 1, "short")])
    assert labels == {("math500", 1): "math500 (short)", ("math500", 2): "math500 (long)",
                      ("aime24", 1): "aime24"}


def test_two_suites_sharing_a_name_still_get_a_series_each():
    """Suite names are unique within a project only: two projects' "long" suites (32k and 1k tokens) once made
    one column, ranked against each other."""
    from webapp.evals.benchmark_labels import suite_labels

    labels = suite_labels([("math500", 1, "long"), ("math500", 2, "long"), ("math500", 3, "short"),
                           ("aime24", 1, "long")])
    assert labels == {("math500", 1): "math500 (long #1)", ("math500", 2): "math500 (long #2)",
                      ("math500", 3): "math500 (short)", ("aime24", 1): "aime24"}
    tricky = suite_labels([("math500", 2, "long"), ("math500", 3, "long"), ("math500", 5, "long #2")])
    assert len(set(tricky.values())) == 3, tricky  # a suite named like another's label still gets its own


def test_the_paired_changes_bootstrap_problems_then_samples_for_accuracy_and_tokens():
    from common.paired_bootstrap import paired_change
    from webapp.pages.long2short_data import paired_changes

    same = {"a": ([1.0, 0.0], [10.0, 12.0]), "b": ([1.0, 1.0], [8.0, 8.0]), "c": ([0.0, 0.0], [20.0, 20.0])}
    accuracy, tokens = paired_changes(same, same)
    assert (accuracy.change, tokens.change) == (0.0, 0.0)
    shorter = {problem: (correct, [value - 4.0 for value in lengths]) for problem, (correct, lengths) in same.items()}
    accuracy, tokens = paired_changes(shorter, same)
    assert tokens.change == pytest.approx(-4.0) and tokens.excludes_zero()
    variant = {"a": ([1.0, 1.0], [5.0, 5.0]), "b": ([0.0, 1.0], [6.0, 6.0]), "c": ([1.0, 0.0], [7.0, 9.0])}
    accuracy, tokens = paired_changes(variant, same, resamples=500)
    expected = paired_change([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 1.0], [1.0, 0.0]], resamples=500)
    assert (accuracy.change, accuracy.low, accuracy.high) == pytest.approx(
        (expected.change * 100, expected.low * 100, expected.high * 100))
    assert accuracy.change == pytest.approx(100 * ((1 - 0.5) + (0.5 - 1) + (0.5 - 0)) / 3)
    assert paired_changes({"a": ([1.0], [3.0])}, {"a": ([0.0], [3.0])}) is None  # one problem: no interval
    assert paired_changes(same, {**same, "d": ([1.0], [1.0])}) is None  # other problems
