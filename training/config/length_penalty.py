"""Section length_penalty: the length reward of report 2.3.3 and when it starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from common.knobs import knob
from training.config.limits import MAX_STEPS, MAX_WEIGHT


@dataclass(frozen=True)
class LengthPenaltySection:
    section_name: ClassVar[str] = "length_penalty"
    section_title: ClassVar[str] = "Length penalty"

    length_penalty_weight: float = knob(
        0.0,
        "Weight of the length reward added to the correctness reward (0 turns it off).",
        group="length_penalty",
        minimum=0.0,
        maximum=MAX_WEIGHT,
    )
    length_penalty_warmup_iterations: int = knob(
        0,
        "Iterations trained without the length reward before its weight applies.",
        group="length_penalty",
        minimum=0,
        maximum=MAX_STEPS,
    )

    def section_errors(self) -> dict[str, str]:
        return {}
