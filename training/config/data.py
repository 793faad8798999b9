"""Section data: how many problems an iteration draws, how many responses each, and which problems."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from common.knobs import knob
from training.config.limits import MAX_BATCH, MAX_SAMPLES_PER_PROBLEM, MAX_STEPS
from training.registries import samplers

SAMPLING_STRATEGIES = tuple(samplers.entries)
HARD_PROBLEMS_BY = ("difficulty", "pass_rate")


@dataclass(frozen=True)
class DataSection:
    section_name: ClassVar[str] = "data"
    section_title: ClassVar[str] = "Data and sampling"

    batch_size: int = knob(8, "Problems sampled per iteration.", group="data", minimum=1, maximum=MAX_BATCH)
    samples_per_problem: int = knob(
        8,
        "k: responses sampled per problem (the group for the baseline).",
        group="data",
        minimum=1,
        maximum=MAX_SAMPLES_PER_PROBLEM,
    )
    sampling_strategy: str = knob(
        "uniform",
        "How problems are drawn: uniform, curriculum (easy to hard by "
        "difficulty label), prioritized (probability proportional to 1 - success rate) or "
        "warmup_then_hard (the report's figure 9: uniform over the whole set, then hard "
        "problems only).",
        group="data",
        choices=SAMPLING_STRATEGIES,
    )
    curriculum_iterations: int = knob(
        10,
        "N for the curriculum strategies: curriculum widens the pool from the "
        "easiest difficulty to all difficulties over iterations 1 to N; "
        "warmup_then_hard draws uniformly from the whole set for iterations 1 to N and "
        "only hard problems from N + 1 on.",
        group="data",
        minimum=1,
        maximum=MAX_STEPS,
    )
    hard_problems_by: str = knob(
        "difficulty",
        "warmup_then_hard only: what makes a problem hard. difficulty: its "
        "label is in the upper half of the set's difficulty levels (easy < medium < hard < "
        "expert, APPS' introductory < interview < competition and TACO's labels on that "
        "ladder, then numbers, then other labels A-Z; at least the top level); pass_rate: "
        "its measured pass rate is at most hard_pass_rate_threshold (a high pass rate is "
        "easy). Problems without a label, or without a pass rate, are never hard.",
        group="data",
        choices=HARD_PROBLEMS_BY,
    )
    hard_pass_rate_threshold: float = knob(
        0.5,
        "warmup_then_hard with hard_problems_by pass_rate: problems whose "
        "measured pass rate is at most this are hard (a high pass rate is easy).",
        group="data",
        minimum=0.0,
        maximum=1.0,
    )

    def section_errors(self) -> dict[str, str]:
        return {}
