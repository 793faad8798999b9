"""What the RL loop asks of a rollout engine beyond generating: no-ops for engines that share the trainer's memory."""

from __future__ import annotations


def release_for_training(engine) -> None:
    """Before an update: a hybrid engine frees its memory and brings the trainer back; others do nothing."""
    release = getattr(engine, "release_for_training", None)
    if release is not None:
        release()


def take_phase_seconds(engine) -> dict[str, float]:
    """The engine's phase timings since the last call (hybrid engines), as iteration metrics; {} for others."""
    take = getattr(engine, "take_phase_seconds", None)
    return take() if take is not None else {}
