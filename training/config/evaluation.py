"""Section evaluation: checkpoints, evaluations of them, and the samples kept for the run page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from common.knobs import knob
from training.config.limits import MAX_STEPS, MAX_STORED_SAMPLES


@dataclass(frozen=True)
class EvaluationSection:
    section_name: ClassVar[str] = "evaluation"
    section_title: ClassVar[str] = "Evaluation"

    checkpoint_every_iterations: int = knob(
        10, "Save a checkpoint every N iterations (and at the end).", group="evaluation", minimum=1, maximum=MAX_STEPS
    )
    keep_last_checkpoints: int = knob(
        0,
        "Keep only the newest N checkpoints of the run, removing older ones as new ones are saved (0 = keep every "
        "one). Always kept: the warm-up checkpoint (iteration 0), the newest, and those a queued or running "
        "evaluation or long2short variant uses.",
        group="evaluation",
        minimum=0,
        maximum=MAX_STEPS,
    )
    evaluate_every_iterations: int = knob(
        0,
        "Evaluate checkpoints on the run's suite every N iterations (0 = only at the end, when a suite is chosen).",
        group="evaluation",
        minimum=0,
        maximum=MAX_STEPS,
    )
    stored_samples_per_iteration: int = knob(
        64,
        "Trained responses stored per iteration for the run page's sample browser (0 = none).",
        group="evaluation",
        minimum=0,
        maximum=MAX_STORED_SAMPLES,
    )

    def section_errors(self) -> dict[str, str]:
        return {}
