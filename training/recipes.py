"""Named run recipes: knob settings that are known to work, shared by the demo, tests and benchmarks."""

from __future__ import annotations

# The README's demo (docs/demo-design.md has the experiments behind it): warm-up SFT of the tiny model on
# synthetic traces, half written step by step and half direct answers (about 6-7 minutes on 2 cores), then RL on
# the synthetic arithmetic task (about 3 minutes). A written chain of thought is right far more often than a
# direct answer on three or more operands, so RL shifts the policy towards writing one: held-out accuracy and
# mean response length rise together (the report's figure 5) with no length reward.
TINY_DEMO = {
    "model": "tiny",
    "warmup_sft_steps": 1500,
    "warmup_sft_learning_rate": 3e-3,
    "warmup_sft_batch_size": 8,
    "warmup_sft_sequence_length": 256,
    "iterations": 60,
    "batch_size": 32,
    "samples_per_problem": 8,
    "max_response_tokens": 64,
    "temperature": 1.0,
    "learning_rate": 5e-5,
    "tau": 0.1,
    "gradient_steps_per_iteration": 2,
    "micro_batch_size": 64,
    "checkpoint_every_iterations": 10,
}
