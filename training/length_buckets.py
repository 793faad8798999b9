"""Rows grouped by length, longest first, so that each group can run at its own width (the rollout engine's
bucketed prefill, the trainer's packed passes): pure list arithmetic, no torch."""

from __future__ import annotations


def length_buckets(lengths: list[int], ratio: float, floor: int = 0) -> list[list[int]]:
    """Row indices grouped longest first: a row joins the current bucket while it is at least `ratio` times the
    bucket's first row's length, or that first row is at most `floor` long (short rows then share one bucket)."""
    buckets: list[list[int]] = []
    for row in sorted(range(len(lengths)), key=lambda index: (-lengths[index], index)):
        first = lengths[buckets[-1][0]] if buckets else 0
        if buckets and (lengths[row] >= ratio * first or first <= floor):
            buckets[-1].append(row)
        else:
            buckets.append([row])
    return buckets
