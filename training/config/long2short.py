"""The long2short method configs (report 2.4): merging, shortest rejection sampling, DPO and long2short RL."""

from __future__ import annotations

from dataclasses import dataclass

from common.knobs import knob
from training.config.limits import (
    MAX_BATCH,
    MAX_LEARNING_RATE,
    MAX_SAMPLES_PER_PROBLEM,
    MAX_SEED,
    MAX_STEPS,
    MAX_TEMPERATURE,
    MAX_TOKENS,
    MAX_WEIGHT,
)

LONG2SHORT_METHODS = ("merge", "shortest_rejection", "dpo", "long2short_rl")


@dataclass(frozen=True)
class MergeConfig:
    """Model merging: a weighted average of the parent with other checkpoints."""

    parent_weight: float = knob(
        0.5,
        "Weight of the parent (long-CoT) model; the others share the rest.",
        group="merge",
        minimum=0.0,
        maximum=1.0,
    )
    other_checkpoint_ids: str | None = knob(
        None,
        "Comma-separated ids of the checkpoints merged with the parent (for example a short-CoT model).",
        group="merge",
    )
    other_run_iterations: str | None = knob(
        None,
        "Comma-separated iterations of the parent run whose checkpoints "
        "are also merged (0 = its warm-up checkpoint, a shorter-CoT model).",
        group="merge",
    )
    other_weights: str | None = knob(
        None,
        "Comma-separated weights of the other checkpoints, in the order "
        "listed (checkpoint ids first, then run iterations); with parent_weight they "
        "must sum to 1. Empty = the others share 1 - parent_weight equally.",
        group="merge",
    )

    def weights(self, others: int) -> tuple[float, ...]:
        """(parent weight, each other checkpoint's weight) for `others` further checkpoints."""
        if self.other_weights is None:
            return (self.parent_weight,) + ((1.0 - self.parent_weight) / others,) * others if others else (1.0,)
        listed = _number_list(self.other_weights)
        if len(listed) != others:
            raise ValueError(f"other_weights lists {len(listed)} weights for {others} other checkpoints")
        return (self.parent_weight, *listed)

    def cross_field_errors(self) -> dict[str, str]:
        """other_weights: non-negative numbers, one per listed checkpoint, summing to 1 with parent_weight."""
        if self.other_weights is None:
            return {}
        try:
            listed = _number_list(self.other_weights)
        except ValueError as error:
            return {"other_weights": str(error)}
        others = len(_text_list(self.other_checkpoint_ids)) + len(_text_list(self.other_run_iterations))
        if others and len(listed) != others:
            return {"other_weights": f"lists {len(listed)} weights but {others} other checkpoints are chosen"}
        total = self.parent_weight + sum(listed)
        if abs(total - 1.0) > 1e-6:
            return {"other_weights": f"with parent_weight the weights sum to {total:g}, not 1"}
        return {}


def _text_list(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def _number_list(text: str) -> list[float]:
    """'0.3, 0.2' -> [0.3, 0.2]; a ValueError names the item that is not a non-negative number."""
    numbers = []
    for item in _text_list(text):
        try:
            number = float(item)
        except ValueError:
            raise ValueError(f"{item!r} is not a number") from None
        if not number >= 0.0 or number == float("inf"):
            raise ValueError(f"{item!r} must be a non-negative finite number")
        numbers.append(number)
    return numbers


@dataclass(frozen=True)
class ShortestRejectionConfig:
    """Shortest rejection sampling: keep the shortest correct of n samples, then SFT on them."""

    samples_per_problem: int = knob(
        8,
        "n: samples drawn per problem from the long model.",
        group="sampling",
        minimum=1,
        maximum=MAX_SAMPLES_PER_PROBLEM,
    )
    max_response_tokens: int | None = knob(
        None, "Longest sampled response, in tokens; empty = the parent run's max_response_tokens (a shorter limit "
        "cuts long correct answers, which then count as wrong).", group="sampling", minimum=1, maximum=MAX_TOKENS
    )
    learning_rate: float = knob(
        1e-5, "SFT learning rate.", group="sft", exclusive_minimum=0.0, maximum=MAX_LEARNING_RATE
    )
    epochs: int = knob(1, "SFT epochs over the kept responses.", group="sft", minimum=1, maximum=MAX_STEPS)
    seed: int = knob(0, "Random seed.", group="sampling", minimum=0, maximum=MAX_SEED)
    temperature: float = knob(
        1.0, "Sampling temperature of the long model.", group="sampling", exclusive_minimum=0.0, maximum=MAX_TEMPERATURE
    )
    batch_size: int = knob(8, "SFT: kept responses per optimizer step.", group="sft", minimum=1, maximum=MAX_BATCH)


@dataclass(frozen=True)
class DPOConfig:
    """DPO with the shortest correct response as chosen and long or wrong ones as rejected."""

    samples_per_problem: int = knob(
        8,
        "Samples drawn per problem to build preference pairs.",
        group="sampling",
        minimum=1,
        maximum=MAX_SAMPLES_PER_PROBLEM,
    )
    max_response_tokens: int | None = knob(
        None, "Longest sampled response, in tokens; empty = the parent run's max_response_tokens (a shorter limit "
        "cuts long correct answers, which then count as wrong).", group="sampling", minimum=1, maximum=MAX_TOKENS
    )
    long_correct_ratio: float = knob(
        1.5,
        "Correct responses at least this many times longer than the shortest correct one become rejected.",
        group="pairs",
        exclusive_minimum=1.0,
        maximum=MAX_WEIGHT,
    )
    beta: float = knob(
        0.1,
        "DPO beta (strength of the implicit KL to the reference).",
        group="dpo",
        exclusive_minimum=0.0,
        maximum=MAX_WEIGHT,
    )
    learning_rate: float = knob(
        1e-6, "DPO learning rate.", group="dpo", exclusive_minimum=0.0, maximum=MAX_LEARNING_RATE
    )
    epochs: int = knob(1, "Epochs over the pairs.", group="dpo", minimum=1, maximum=MAX_STEPS)
    temperature: float = knob(
        1.0, "Sampling temperature of the long model.", group="sampling", exclusive_minimum=0.0, maximum=MAX_TEMPERATURE
    )
    pairs_per_step: int = knob(8, "Preference pairs per gradient step.", group="dpo", minimum=1, maximum=MAX_BATCH)
    seed: int = knob(0, "Random seed.", group="sampling", minimum=0, maximum=MAX_SEED)


@dataclass(frozen=True)
class Long2ShortRLConfig:
    """RL from a chosen checkpoint with the length penalty on from the start and a shorter limit."""

    iterations: int = knob(10, "RL iterations.", group="rl", minimum=1, maximum=MAX_STEPS)
    length_penalty_weight: float = knob(
        0.5,
        "Length reward weight, applied from the first iteration.",
        group="rl",
        exclusive_minimum=0.0,
        maximum=MAX_WEIGHT,
    )
    max_response_fraction: float = knob(
        0.5, "Maximum rollout length as a fraction of the parent run's.", group="rl", exclusive_minimum=0.0, maximum=1.0
    )
    learning_rate: float = knob(1e-5, "Learning rate.", group="rl", exclusive_minimum=0.0, maximum=MAX_LEARNING_RATE)
    seed: int = knob(0, "Random seed.", group="rl", minimum=0, maximum=MAX_SEED)


LONG2SHORT_CONFIGS: dict[str, type] = {
    "merge": MergeConfig,
    "shortest_rejection": ShortestRejectionConfig,
    "dpo": DPOConfig,
    "long2short_rl": Long2ShortRLConfig,
}
