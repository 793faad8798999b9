"""Which sampled responses long2short trains on (METHOD.md section 8); pure functions, no torch.

Lengths are response tokens as sampled (end-of-sequence included), so "shorter" means cheaper to generate.
"""

from __future__ import annotations

from typing import Sequence

from training.long2short.base import PreferencePair
from training.long2short.sampling import JudgedSample

WRONG_LONGER = "wrong_longer"
CORRECT_TOO_LONG = "correct_too_long"


def shortest_correct(samples: Sequence[JudgedSample]) -> JudgedSample | None:
    """The correct sample with the fewest response tokens (ties: the first drawn), or None if none is correct."""
    correct = [sample for sample in samples if sample.correct]
    return min(correct, key=lambda sample: sample.response_tokens) if correct else None  # min keeps the first tie


def preference_pairs(samples: Sequence[JudgedSample], long_correct_ratio: float = 1.5) -> list[PreferencePair]:
    """One problem's DPO pairs: chosen = the shortest correct sample; rejected, in drawn order, = every wrong
    sample strictly longer than it ("wrong_longer") and every correct one with tokens >= ratio * its tokens
    ("correct_too_long"). No correct sample: no pairs."""
    if long_correct_ratio <= 1.0:
        raise ValueError(f"long_correct_ratio must be greater than 1, got {long_correct_ratio}")
    chosen = shortest_correct(samples)
    if chosen is None:
        return []
    pairs = []
    for sample in samples:
        reason = _rejected_reason(sample, chosen, long_correct_ratio)
        if reason is not None:
            pairs.append(PreferencePair(
                prompt_id=chosen.prompt_id, chosen=chosen.response, rejected=sample.response,
                chosen_tokens=chosen.response_tokens, rejected_tokens=sample.response_tokens, rejected_reason=reason,
                chosen_ids=chosen.token_ids, rejected_ids=sample.token_ids,
            ))
    return pairs


def _rejected_reason(sample: JudgedSample, chosen: JudgedSample, long_correct_ratio: float) -> str | None:
    """Why `sample` is rejected against `chosen`, or None when it forms no pair."""
    if not sample.correct:
        return WRONG_LONGER if sample.response_tokens > chosen.response_tokens else None
    if sample.response_tokens >= long_correct_ratio * chosen.response_tokens:
        return CORRECT_TOO_LONG
    return None
