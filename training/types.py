"""Plain data passed between the workers and the engine (no torch here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class PromptRecord:
    """One training problem, as the engine sees it."""

    prompt_id: str
    problem: str
    answer: str = ""
    test_cases: Any = None
    domain: str = ""
    difficulty: str = ""
    pass_rate: float | None = None
    image: str = ""


def images_refusal(with_images: int, first: str) -> str:
    """Why an RL run refuses a prompt set with images (`with_images` of them; `first` names one)."""
    return (f"{with_images} prompt(s) have an image (first: {first}): RL trains on text prompts only and would "
            "leave the images out; use a prompt set without images (images are scored in evaluation suites, e.g. "
            "MathVista)")


@dataclass(frozen=True)
class SampleReport:
    """One trained response, stored for the run page's sample browser."""

    prompt_id: str
    problem: str
    sample_index: int  # position within its problem's group of k
    response: str
    reward: float  # the total reward trained on (correctness + length reward - repeat penalty)
    correct: bool
    response_tokens: int
    truncated: bool  # hit max_response_tokens
    repeated: bool  # ended early by repeat detection


@dataclass(frozen=True)
class IterationReport:
    """What one RL iteration measured."""

    iteration: int
    train_accuracy: float | None  # None when no group finished this iteration (partial rollouts)
    mean_response_length: float | None
    p95_response_length: float | None
    loss: float | None
    kl: float | None
    tokens_generated: int
    tokens_reused: int
    seconds: float
    extra: dict[str, float] = field(default_factory=dict)
    samples: tuple[SampleReport, ...] = ()  # up to `stored_samples_per_iteration` of the responses trained on


@dataclass(frozen=True)
class RunPaths:
    """Where a run writes (checkpoints under output_dir) and where model presets are cached."""

    output_dir: Path
    models_dir: Path


@dataclass(frozen=True)
class CheckpointReport:
    iteration: int
    path: Path
    size_bytes: int


def _never() -> bool:
    return False


def _ignore(*_args: Any) -> None:
    return None


def _approve_all(iterations: list[int]) -> list[int]:
    return list(iterations)


@dataclass(frozen=True)
class TrainingHooks:
    """How an engine reports progress and learns that it should stop (checked between iterations)."""

    on_iteration: Callable[[IterationReport], None] = _ignore
    on_checkpoint: Callable[[CheckpointReport], None] = _ignore
    log: Callable[[str], None] = _ignore
    # warm-up SFT: (step done, steps in all, that step's loss) after every step; throttle what it writes
    on_warmup_step: Callable[[int, int, float], None] = _ignore
    should_stop: Callable[[], bool] = _never
    # keep_last_checkpoints: given the iterations whose checkpoints the loop wants to remove (oldest first), returns
    # those it may remove, having durably recorded them as removed before it returns (so a crash between the
    # answer and the deletion leaves nothing unrecorded, and a job can no longer choose them); the loop deletes
    # only those. Raises PinnedCheckpointsUnknown to keep every checkpoint this time. Default: approve all.
    approve_checkpoint_removals: Callable[[list[int]], list[int]] = _approve_all


class PinnedCheckpointsUnknown(RuntimeError):
    """`approve_checkpoint_removals` could not tell which checkpoints may go: the run keeps them all this time."""


@dataclass(frozen=True)
class TrainingOutcome:
    iterations_done: int
    stopped_early: bool
