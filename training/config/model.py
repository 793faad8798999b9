"""Section model: the starting policy (which model, its seed) and its optional long-CoT warm-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from common.knobs import knob
from training.config.limits import MAX_BATCH, MAX_LEARNING_RATE, MAX_SEED, MAX_STEPS, MAX_TOKENS


@dataclass(frozen=True)
class ModelSection:
    section_name: ClassVar[str] = "model"
    section_title: ClassVar[str] = "Model"

    model: str = knob(
        "tiny",
        "Model: the built-in 'tiny' preset (created locally), a local Hugging Face directory, or a hub id.",
        group="model",
    )
    seed: int = knob(
        0, "Random seed for sampling problems, rollouts and initialisation.", group="model", minimum=0, maximum=MAX_SEED
    )
    warmup_sft_steps: int = knob(
        0,
        "Long-CoT warm-up: SFT steps on verified reasoning traces of the synthetic task before RL (0 = none).",
        group="model",
        minimum=0,
        maximum=MAX_STEPS,
    )
    warmup_sft_learning_rate: float = knob(
        1e-3, "Warm-up SFT learning rate.", group="model", exclusive_minimum=0.0, maximum=MAX_LEARNING_RATE
    )
    warmup_sft_batch_size: int = knob(
        16, "Warm-up SFT: packed sequences per step.", group="model", minimum=1, maximum=MAX_BATCH
    )
    warmup_sft_sequence_length: int = knob(
        256, "Warm-up SFT: tokens per packed sequence.", group="model", minimum=16, maximum=MAX_TOKENS
    )

    def section_errors(self) -> dict[str, str]:
        return {}
