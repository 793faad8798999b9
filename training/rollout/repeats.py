"""Repeat detection: a response whose tail is one block of tokens repeated many times is degenerate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class RepeatLimits:
    """A tail is degenerate when a block of <= max_period tokens repeats >= min_repeats times over >= min_span."""

    max_period: int = 32
    min_repeats: int = 4
    min_span: int = 16

    def as_dict(self) -> dict[str, int]:
        return {"max_period": self.max_period, "min_repeats": self.min_repeats, "min_span": self.min_span}


def repeated_tail_start(token_ids: Sequence[int], max_period: int = 32, min_repeats: int = 4,
                        min_span: int = 16) -> int | None:
    """Index where a repeated tail begins (first block kept), or None.

    The tail is degenerate when some block of p <= max_period tokens repeats at least
    `min_repeats` times back to back, covering at least `min_span` tokens.
    """
    length = len(token_ids)
    for period in range(1, min(max_period, length // min_repeats) + 1):
        block = list(token_ids[length - period:])
        repeats, start = 1, length - period
        while start - period >= 0 and list(token_ids[start - period:start]) == block:
            repeats, start = repeats + 1, start - period
        if repeats >= min_repeats and repeats * period >= min_span:
            return start
    return None


def cut_repeats(token_ids: Sequence[int], **limits) -> tuple[int, ...] | None:
    """The response cut after `min_repeats` copies of its repeated block, or None when it is healthy."""
    start = repeated_tail_start(token_ids, **limits)
    if start is None:
        return None
    period = _period_at(token_ids, start)
    return tuple(token_ids[: start + period * limits.get("min_repeats", 4)])


def widest_repeat_window(max_period: int = 32, min_repeats: int = 4, min_span: int = 16) -> int:
    """The most tail tokens a degenerate-repeat check looks at (the span of the longest period's copies)."""
    return max(period * max(min_repeats, -(-min_span // period)) for period in range(1, max_period + 1))


def first_cut_across(token_ids: Sequence[int], boundary: int, **limits) -> tuple[int, ...] | None:
    """The response cut at the first degenerate tail whose check window straddles `boundary` (where a segment
    began), or None. A decoding call sees only its own tokens, so a repeat that began in the segment before
    escapes it; an uninterrupted call would have stopped at the first such end."""
    last_end = min(len(token_ids), boundary + widest_repeat_window(**limits) - 1)
    for end in range(boundary + 1, last_end + 1):
        cut = cut_repeats(token_ids[:end], **limits)
        if cut is not None:
            return cut
    return None


def _period_at(token_ids: Sequence[int], start: int) -> int:
    tail = list(token_ids[start:])
    for period in range(1, len(tail) + 1):
        if all(tail[index] == tail[index % period] for index in range(len(tail))):
            return period
    return len(tail)


def repeating_rows(token_ids, limits: RepeatLimits):
    """(rows, L) token ids -> (rows,) bool: which rows end in a degenerate repeat (as repeated_tail_start).

    Tensor form for decoding loops: the tail repeats a block of p tokens r >= min_repeats times over
    >= min_span tokens exactly when its last p * max(min_repeats, ceil(min_span / p)) tokens are p-periodic.
    """
    import torch

    rows, length = token_ids.shape
    found = torch.zeros(rows, dtype=torch.bool, device=token_ids.device)
    for period in range(1, limits.max_period + 1):
        span = period * max(limits.min_repeats, -(-limits.min_span // period))
        if span > length:
            continue
        window = token_ids[:, length - span:]
        found |= (window[:, period:] == window[:, :-period]).all(dim=1)
    return found
