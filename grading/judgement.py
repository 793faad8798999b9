"""The verdict on one response."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Judgement:
    correct: bool
    extracted: str = ""  # the final answer, or the program that was run
    detail: str = ""  # why: a sandbox verdict, a verifier timeout...


def counted_wrong_for_truncation(truncated, truncated_counts_wrong: bool):
    """Whether a response is wrong whatever its answer: one cut off at the token limit gave no final answer,
    and under `truncated_counts_wrong` (evaluations, RL rewards, held-out checks, long2short) it never scores.
    Every place that scores a response applies this one rule; `truncated` is a bool, or a bool tensor of many
    responses (the result is then a tensor too)."""
    return truncated & bool(truncated_counts_wrong)
