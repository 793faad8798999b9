"""Named run recipes: knob settings that are known to work, shared by the demo, tests and benchmarks."""

from __future__ import annotations

# The README's demo: warm-up SFT of the tiny model on synthetic traces (about 4-5 minutes on 2 cores),
# then RL on the synthetic arithmetic task (about 5 minutes). Accuracy rises as the policy learns that
# a written chain of thought pays off, so the mean response length grows (the report's figure 5).
TINY_DEMO = {
    "model": "tiny",
    "warmup_sft_steps": 400,
    "warmup_sft_learning_rate": 3e-3,
    "warmup_sft_batch_size": 16,
    "warmup_sft_sequence_length": 256,
    "iterations": 40,
    "batch_size": 16,
    "samples_per_problem": 8,
    "max_response_tokens": 64,
    "temperature": 1.0,
    "learning_rate": 5e-5,
    "tau": 0.1,
    "gradient_steps_per_iteration": 2,
    "micro_batch_size": 64,
    "checkpoint_every_iterations": 10,
}
