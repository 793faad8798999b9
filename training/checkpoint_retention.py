"""Which of a run's checkpoints to remove under `keep_last_checkpoints` (pure: no files, no torch).

Always kept, whatever N: the warm-up checkpoint (iteration 0: long2short merging uses it as the shorter-CoT
model), the newest checkpoint (a resume starts from it) and every pinned iteration (one an evaluation or a
long2short variant still needs), besides the N newest.
"""

from __future__ import annotations

from typing import Collection, Iterable

WARMUP_ITERATION = 0


def checkpoints_to_remove(saved_iterations: Iterable[int], keep_last: int, pinned: Collection[int]) -> list[int]:
    """The saved iterations to remove, oldest first: all but the newest `keep_last`, the warm-up, the pinned ones
    (keep_last 0 = keep every checkpoint: none)."""
    saved = sorted(set(saved_iterations))
    if keep_last <= 0 or not saved:
        return []
    kept = set(saved[-keep_last:]) | {WARMUP_ITERATION, saved[-1]} | set(pinned)
    return [iteration for iteration in saved if iteration not in kept]
