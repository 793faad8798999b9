"""RLConfig: every knob of one RL run (METHOD.md sections 2 to 7), composed of its sections.

The sections are frozen dataclasses of their own (model, data and sampling, optimization and rewards,
length penalty, rollouts, checkpoints and evaluation, execution), each checking its own constraints.
RLConfig inherits their fields, so YAML, forms, the REST API and stored configs stay one flat mapping
(`batch_size: 8`, not `data: {batch_size: 8}`), and `section(RolloutSection)` gives one section back as
its own typed object.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeVar

from training.config.data import DataSection
from training.config.evaluation import EvaluationSection
from training.config.execution import ExecutionSection
from training.config.length_penalty import LengthPenaltySection
from training.config.model import ModelSection
from training.config.optimization import OptimizationSection
from training.config.rollouts import RolloutSection

OVERLAP_ENGINES = ("torch", "vllm")  # engines that can sample in a thread while the trainer updates
OVERLAP_NEEDS_ONE_PROCESS = ("needs a single training process: under torchrun the rollout rounds and the trainer "
                             "would share one process group from two threads")

# In the order of the launch form and of the knob listings.
SECTIONS = (
    ModelSection,
    DataSection,
    OptimizationSection,
    LengthPenaltySection,
    RolloutSection,
    EvaluationSection,
    ExecutionSection,
)

Section = TypeVar("Section")


# Dataclass fields come from the bases in reverse order, so the sections are listed last to first.
@dataclass(frozen=True)
class RLConfig(*reversed(SECTIONS)):
    """Every knob of one RL run; the prompt set and evaluation suite are chosen beside it."""

    @property
    def parked_group_limit(self) -> int:
        """max_parked_groups, or its default of 4 x batch_size."""
        return self.max_parked_groups if self.max_parked_groups is not None else 4 * self.batch_size

    def section(self, section: type[Section]) -> Section:
        """One section's knobs as that section's own frozen object."""
        return section(**{field.name: getattr(self, field.name) for field in dataclasses.fields(section)})

    def cross_field_errors(self) -> dict[str, str]:
        """Each section's own constraints, then those that join knobs of several sections."""
        errors: dict[str, str] = {}
        for section in SECTIONS:
            errors.update(section.section_errors(self))
        if self.sampling_strategy == "warmup_then_hard" and self.curriculum_iterations >= self.iterations:
            errors["curriculum_iterations"] = (
                "with warmup_then_hard must be below iterations: the hard problems "
                "are drawn from iteration curriculum_iterations + 1 on"
            )
        if self.length_penalty_warmup_iterations > self.iterations:
            errors["length_penalty_warmup_iterations"] = "must not exceed iterations"
        if self.rollout_engine == "vllm" and self.nnodes * self.nproc_per_node > 1:
            errors["rollout_engine"] = (
                "vllm runs inside the training process and takes the first GPU of every "
                "rank; with several training processes use vllm-hybrid (one vLLM server "
                "per rank, on its own GPU)"
            )
        if self.overlap_rollouts:
            errors.update(overlap_errors(self))
        return errors


def overlap_errors(config: RLConfig) -> dict[str, str]:
    """Rollouts overlap training in a background thread of the one training process, beside the torch trainer."""
    errors = {}
    if config.rollout_engine not in OVERLAP_ENGINES:
        errors["overlap_rollouts"] = (
            f"needs the torch or vllm rollout engine, not {config.rollout_engine}: vllm-hybrid takes turns "
            "with the trainer on the same devices, so there is nothing to overlap"
        )
    elif config.trainer_backend != "torch":
        errors["overlap_rollouts"] = f"needs the torch trainer, not {config.trainer_backend}"
    elif config.nnodes * config.nproc_per_node > 1:
        errors["overlap_rollouts"] = f"{OVERLAP_NEEDS_ONE_PROCESS} (nnodes x nproc_per_node must be 1)"
    return errors
