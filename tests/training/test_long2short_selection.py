"""Which samples shortest rejection sampling keeps, and which DPO pairs form (hand-built samples)."""

from __future__ import annotations

import pytest

from training.long2short.sampling import JudgedSample
from training.long2short.selection import preference_pairs, shortest_correct


def sample(name: str, tokens: int, correct: bool) -> JudgedSample:
    return JudgedSample(prompt_id="p1", response=name, response_tokens=tokens, correct=correct, truncated=False)


def test_it_keeps_the_shortest_correct_response_not_a_shorter_wrong_one():
    samples = [sample("long-right", 40, True), sample("short-wrong", 5, False), sample("mid-right", 20, True),
               sample("longer-right", 60, True)]
    assert shortest_correct(samples).response == "mid-right"


def test_it_keeps_the_first_drawn_of_equally_short_correct_responses():
    samples = [sample("a", 30, True), sample("b", 12, True), sample("c", 12, True)]
    assert shortest_correct(samples).response == "b"


def test_it_keeps_nothing_when_no_response_is_correct():
    assert shortest_correct([sample("a", 3, False), sample("b", 9, False)]) is None
    assert shortest_correct([]) is None


def test_it_pairs_the_shortest_correct_with_longer_wrong_and_too_long_correct_responses():
    samples = [
        sample("wrong-40", 40, False),   # wrong and longer than chosen: rejected
        sample("chosen-20", 20, True),   # the shortest correct
        sample("right-29", 29, True),    # 1.45x: not long enough to reject
        sample("right-30", 30, True),    # exactly 1.5x: rejected as too long
        sample("wrong-20", 20, False),   # wrong but as short as chosen: not rejected
        sample("wrong-8", 8, False),     # wrong and shorter: not rejected
        sample("right-50", 50, True),    # 2.5x: rejected
    ]
    pairs = preference_pairs(samples)
    assert [(p.rejected, p.rejected_reason, p.rejected_tokens) for p in pairs] == [
        ("wrong-40", "wrong_longer", 40), ("right-30", "correct_too_long", 30), ("right-50", "correct_too_long", 50),
    ]
    assert {(p.prompt_id, p.chosen, p.chosen_tokens) for p in pairs} == {("p1", "chosen-20", 20)}


def test_it_rejects_exactly_ratio_times_longer_but_not_149_percent():
    chosen = sample("chosen", 100, True)
    pairs = preference_pairs([chosen, sample("149", 149, True), sample("150", 150, True)])
    assert [p.rejected for p in pairs] == ["150"]


def test_it_applies_a_configured_ratio():
    samples = [sample("chosen", 10, True), sample("right-15", 15, True), sample("right-20", 20, True)]
    assert [p.rejected for p in preference_pairs(samples, long_correct_ratio=2.0)] == ["right-20"]


def test_it_forms_no_pairs_without_a_correct_response():
    assert preference_pairs([sample("a", 50, False), sample("b", 80, False)]) == []


def test_it_forms_no_pairs_when_every_other_response_is_short_enough():
    assert preference_pairs([sample("chosen", 10, True), sample("right-14", 14, True), sample("w", 9, False)]) == []


def test_it_refuses_a_ratio_not_above_one():
    with pytest.raises(ValueError, match="long_correct_ratio"):
        preference_pairs([sample("a", 10, True)], long_correct_ratio=1.0)
