"""Trainer backends, looked up by the `trainer_backend` knob."""

from common.registry import Registry

# Each entry: run(config, prompts, output_dir, hooks) -> TrainingOutcome.
trainer_backends = Registry("trainer backend", {
    "torch": "training.loop:run",
    "megatron": "training.backends.megatron:run",
    "noop-test": "training.backends.noop_test:run",
})

# The trainer a run session builds for each backend that runs the RL loop: Trainer(hf_model, config), with
# update(batch, rewards) -> metrics and `model` (a Hugging Face model holding the current weights).
trainer_classes = Registry("trainer", {
    "torch": "training.trainer.torch_trainer:TorchTrainer",
    "megatron": "training.megatron.trainer:MegatronTrainer",
})
