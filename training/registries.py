"""Every name a run config may choose, registered once: sampling strategies, log Z estimates, policy losses,
rollout engines and trainer backends. The config's choices come from here (training/config.py), and each
name leads to its implementation, imported on first lookup; this module itself imports nothing heavy.
"""

from common.registry import Registry

samplers = Registry("sampling strategy", {
    "uniform": "training.sampling:UniformSampler",
    "curriculum": "training.sampling:CurriculumSampler",
    "prioritized": "training.sampling:PrioritizedSampler",
    "warmup_then_hard": "training.sampling:WarmupThenHardSampler",
})

# Each entry: baseline(rewards, valid, tau) -> the (G, 1) estimate of tau * log Z.
log_z_estimates = Registry("log Z estimate", {
    "mean_reward": "training.losses:mean_reward_baseline",
    "log_mean_exp": "training.losses:log_mean_exp_baseline",
})

policy_losses = Registry("policy loss", {
    "mirror_descent": "training.losses:mirror_descent_loss",
    "rest": "training.losses:rest_loss",
})

# Each entry: build(model, tokenizer, model_path, EngineSettings, trainer=None) -> RolloutEngine. `trainer` matters to
# engines that take turns with it for the devices (vllm-hybrid offloads its memory); the others share them.
rollout_engines = Registry("rollout engine", {
    "torch": "training.rollout.torch_engine:build",
    "vllm": "training.rollout.vllm_engine:build",
    "vllm-hybrid": "training.hybrid.engine:build",
})

# Each entry: run(config, prompts, output_dir, hooks) -> TrainingOutcome. "noop-test" writes synthetic
# iterations and trains nothing: for tests of the job plumbing only (training/backends/noop_test.py).
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
