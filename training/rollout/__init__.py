"""Rollout engines behind one interface (training.rollout.base.RolloutEngine)."""

from common.registry import Registry

# Each entry: build(model, tokenizer, model_path, config, trainer=None) -> RolloutEngine. `trainer` matters to
# engines that take turns with it for the devices (vllm-hybrid offloads its memory); the others share them.
rollout_engines = Registry(
    "rollout engine",
    {"torch": "training.rollout.torch_engine:build", "vllm": "training.rollout.vllm_engine:build",
     "vllm-hybrid": "training.hybrid.engine:build"},
)
