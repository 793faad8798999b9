"""Repeat detection: a response whose tail is one block of tokens repeated many times is degenerate."""

from __future__ import annotations

from typing import Sequence


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


def _period_at(token_ids: Sequence[int], start: int) -> int:
    tail = list(token_ids[start:])
    for period in range(1, len(tail) + 1):
        if all(tail[index] == tail[index % period] for index in range(len(tail))):
            return period
    return len(tail)
