"""Rollout engines behind one interface (training.rollout.base.RolloutEngine)."""

from common.registry import Registry

# Each entry: build(model, tokenizer, model_path, config) -> RolloutEngine.
rollout_engines = Registry(
    "rollout engine",
    {"torch": "training.rollout.torch_engine:build", "vllm": "training.rollout.vllm_engine:build",
     "vllm-hybrid": "training.hybrid.engine:build"},
)
