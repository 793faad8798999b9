"""Trainer backends, looked up by the `trainer_backend` knob."""

from common.registry import Registry

# Each entry: run(config, prompts, output_dir, hooks) -> TrainingOutcome.
# The torch and megatron backends are registered by the RL engine (issue 3) and the scale-out work (issue 7).
trainer_backends = Registry("trainer backend", {"noop-test": "training.engines.noop_test:run"})
