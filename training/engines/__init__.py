"""Trainer backends, looked up by the `trainer_backend` knob."""

from common.registry import Registry

# Each entry: run(config, prompts, output_dir, hooks) -> TrainingOutcome.
# The megatron backend arrives with the scale-out work.
trainer_backends = Registry("trainer backend", {
    "torch": "training.loop:run",
    "noop-test": "training.engines.noop_test:run",
})
