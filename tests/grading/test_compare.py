"""Stdout comparison: LiveCodeBench's rules, with the judge's work bounded by the expected output."""

from __future__ import annotations

import tracemalloc

import pytest

from grading.sandbox.compare import first_mismatch, lines_match

MIB = 1 << 20


@pytest.mark.parametrize("produced, expected, same", [
    ("1.0 2", "1 2.00", True), ("1 2", "1 2 3", False), ("1 2 3", "1 2", False), ("NaN", "NaN", True),
    ("nan", "NaN", False), ("sNaN", "1", False), ("yes", "YES", False), ("", "", True), ("x", "", False),
    ("3", "3.0000000001", False), ("1e1", "10", True),
])
def test_lines_match_as_text_or_as_numbers(produced, expected, same):
    assert lines_match(produced, expected) is same


def test_outputs_differ_at_the_first_line_that_differs_or_by_their_line_count():
    assert first_mismatch("1\n2\n", "1\n2") is None
    assert first_mismatch("1\n3", "1\n2") == "line 2: expected '2', got '3'"
    assert first_mismatch("1\n2\n3", "1\n2") == "expected 2 lines, got 3"


@pytest.mark.parametrize("produced", ["1 " * (8 * MIB), "12\n" * (5 * MIB)])
def test_a_flood_of_numbers_or_lines_costs_the_judge_no_more_than_a_copy_of_it(produced):
    """16 MB of output (the default cap) against one expected number: once 8 million Decimals (about 1 GiB in
    the judge, which in RL is the trainer's process) or 5 million line strings; now a copy or two."""
    tracemalloc.start()
    try:
        assert first_mismatch(produced, "42") is not None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(produced)
