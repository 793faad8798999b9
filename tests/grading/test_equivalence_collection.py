"""is_equivalent against the project's answer-equivalence collection (tests/grading/equivalence_cases.py)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from grading.verifier import is_equivalent
from tests.grading.equivalence_cases import CASES


def test_the_collection_has_at_least_300_cases():
    assert len(CASES) >= 300


def test_every_category_has_both_verdicts():
    verdicts = defaultdict(set)
    for case in CASES:
        verdicts[case.category].add(case.equal)
    assert {category for category, seen in verdicts.items() if seen != {True, False}} == set()


def test_no_pair_appears_twice():
    pairs = [(case.reference, case.predicted) for case in CASES]
    assert len(pairs) == len(set(pairs))


@pytest.mark.parametrize("case", CASES, ids=[f"{case.category}-{index}" for index, case in enumerate(CASES)])
def test_it_gives_the_graders_verdict(case):
    assert is_equivalent(case.predicted, case.reference) == case.equal, (
        f"{case.predicted!r} against reference {case.reference!r} should be {'equal' if case.equal else 'unequal'}")
