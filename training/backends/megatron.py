"""The megatron trainer backend: the ordinary RL loop with MegatronTrainer as the session's trainer.

Launch with torchrun for tensor/pipeline/data parallelism (training/distributed.py); every rank runs the
loop, and `tensor_parallel_size * pipeline_parallel_size` must divide the number of processes.
"""

from __future__ import annotations

import importlib.util
from typing import Sequence

from training.config import RLConfig
from training.types import PromptRecord, RunPaths, TrainingHooks, TrainingOutcome


def run(config: RLConfig, prompts: Sequence[PromptRecord], paths: RunPaths, hooks: TrainingHooks) -> TrainingOutcome:
    """Train with Megatron-core; refuses clearly when megatron-core is not installed."""
    if importlib.util.find_spec("megatron.core") is None:
        raise RuntimeError("trainer_backend megatron needs megatron-core: pip install megatron-core==0.16.1")
    import training.loop

    return training.loop.run(config, prompts, paths, hooks)
