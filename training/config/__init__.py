"""The RL run config (training.config.run.RLConfig, in sections) and the long2short method configs.

Frozen dataclasses; YAML, forms and the REST API are only inputs, parsed by
`common.knobs.parse_config`. The resolved config is stored on the run row and
inside every checkpoint. Choices that name an implementation come from its
registry (training/registries.py), in registration order.
"""

from training.config.data import HARD_PROBLEMS_BY, SAMPLING_STRATEGIES, DataSection
from training.config.evaluation import EvaluationSection
from training.config.execution import MEGATRON_PRECISIONS, TRAINER_BACKENDS, ExecutionSection
from training.config.length_penalty import LengthPenaltySection
from training.config.long2short import (
    LONG2SHORT_CONFIGS,
    LONG2SHORT_METHODS,
    DPOConfig,
    Long2ShortRLConfig,
    MergeConfig,
    ShortestRejectionConfig,
)
from training.config.model import ModelSection
from training.config.optimization import LOG_Z_ESTIMATES, POLICY_LOSSES, OptimizationSection
from training.config.rollouts import (
    HYBRID_RELEASE_MODES, ROLLOUT_COMPILE_MODES, ROLLOUT_DTYPES, ROLLOUT_ENGINES, ROLLOUT_LOOPS, RolloutSection,
)
from training.config.run import SECTIONS, RLConfig

__all__ = [
    "DPOConfig",
    "DataSection",
    "EvaluationSection",
    "ExecutionSection",
    "HARD_PROBLEMS_BY",
    "HYBRID_RELEASE_MODES",
    "LOG_Z_ESTIMATES",
    "LONG2SHORT_CONFIGS",
    "LONG2SHORT_METHODS",
    "LengthPenaltySection",
    "Long2ShortRLConfig",
    "MEGATRON_PRECISIONS",
    "MergeConfig",
    "ModelSection",
    "OptimizationSection",
    "POLICY_LOSSES",
    "RLConfig",
    "ROLLOUT_COMPILE_MODES",
    "ROLLOUT_DTYPES",
    "ROLLOUT_ENGINES",
    "ROLLOUT_LOOPS",
    "RolloutSection",
    "SAMPLING_STRATEGIES",
    "SECTIONS",
    "ShortestRejectionConfig",
    "TRAINER_BACKENDS",
]
