"""Which checkpoint balances accuracy and response length best: the start of long2short RL (report section 2.4).

Rule: among the checkpoints whose accuracy is within `tolerance_points` of the best one's, the one with the fewest
mean response tokens (ties: the later iteration). A long-CoT run's last checkpoint is often its most accurate
and its longest; a checkpoint a point less accurate but much shorter is the better start for shortening.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

TOLERANCE_POINTS = 2.0


@dataclass(frozen=True)
class EvaluatedCheckpoint:
    key: int  # the checkpoint's id
    iteration: int
    accuracy: float  # fraction correct
    mean_tokens: float


def best_balance(checkpoints: Sequence[EvaluatedCheckpoint],
                 tolerance_points: float = TOLERANCE_POINTS) -> tuple[EvaluatedCheckpoint, str]:
    """The chosen checkpoint and the reason, in a sentence for the variant's page."""
    if not checkpoints:
        raise ValueError("no evaluated checkpoint to choose from")
    if tolerance_points < 0:
        raise ValueError(f"tolerance_points must be at least 0, got {tolerance_points}")
    best = max(checkpoints, key=lambda c: (c.accuracy, c.iteration))
    close = [c for c in checkpoints if (best.accuracy - c.accuracy) * 100 <= tolerance_points + 1e-9]
    chosen = min(close, key=lambda c: (c.mean_tokens, -c.iteration))
    reason = (f"iteration {chosen.iteration} ({chosen.accuracy:.1%} at {chosen.mean_tokens:.1f} tokens): the fewest "
              f"tokens among the {len(close)} of {len(checkpoints)} evaluated checkpoints within "
              f"{tolerance_points:g} points of the best accuracy (iteration {best.iteration}, {best.accuracy:.1%} at "
              f"{best.mean_tokens:.1f} tokens)")
    return chosen, reason
