"""Section optimization: the objective (loss, tau, log Z), the reward's grading, and the optimizer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from common.knobs import knob
from grading.cot_judge.modes import GRADER_MODE_NAMES, RULE
from grading.verifier.extraction import EXTRACTION_POLICIES, FLEXIBLE
from training.config.limits import MAX_BATCH, MAX_GRAD_NORM, MAX_LEARNING_RATE, MAX_STEPS, MAX_TOKENS, MAX_WEIGHT
from training.registries import log_z_estimates, policy_losses

LOG_Z_ESTIMATES = tuple(log_z_estimates.entries)
POLICY_LOSSES = tuple(policy_losses.entries)


@dataclass(frozen=True)
class OptimizationSection:
    section_name: ClassVar[str] = "optimization"
    section_title: ClassVar[str] = "Optimization"

    iterations: int = knob(
        20,
        "RL iterations; each samples a batch of problems and updates the policy.",
        group="optimization",
        minimum=1,
        maximum=MAX_STEPS,
    )
    learning_rate: float = knob(
        1e-5,
        "Optimizer learning rate (the optimizer is reset every iteration).",
        group="optimization",
        exclusive_minimum=0.0,
        maximum=MAX_LEARNING_RATE,
    )
    gradient_steps_per_iteration: int = knob(
        1, "Gradient steps on each iteration's batch.", group="optimization", minimum=1, maximum=1_000
    )
    micro_batch_size: int = knob(
        16,
        "Responses per forward/backward pass (gradient accumulation above it).",
        group="optimization",
        minimum=1,
        maximum=MAX_BATCH,
    )
    pack_sequences: bool = knob(
        True,
        "Torch trainer: forward passes pack several responses into one row (position ids restart at each) "
        "instead of padding every response to the longest; off, or a model whose attention does not keep "
        "packed sequences apart (checked at start): right-padded rows.",
        group="optimization",
    )
    max_grad_norm: float = knob(
        1.0,
        "Gradient clipping norm (a huge value turns clipping off).",
        group="optimization",
        exclusive_minimum=0.0,
        maximum=MAX_GRAD_NORM,
    )
    tau: float = knob(
        0.1,
        "KL-regularisation strength tau of the mirror-descent loss (> 0).",
        group="optimization",
        exclusive_minimum=0.0,
        maximum=MAX_WEIGHT,
    )
    log_z_estimate: str = knob(
        "mean_reward",
        "Estimate of tau*log Z: the mean reward, or tau*log mean exp(r/tau).",
        group="optimization",
        choices=LOG_Z_ESTIMATES,
    )
    policy_loss: str = knob(
        "mirror_descent",
        "Loss: online mirror descent (the report's), or the ReST baseline (likelihood of the best response only).",
        group="optimization",
        choices=POLICY_LOSSES,
    )
    answer_extraction: str = knob(
        FLEXIBLE,
        "How the reward finds a response's final answer: 'flexible' (the last "
        "\\boxed{}, else an answer line such as 'The answer is 9', else a final line "
        "that is only an expression) or 'boxed' (the last \\boxed{} only).",
        group="optimization",
        choices=EXTRACTION_POLICIES,
    )
    grader_mode: str = knob(
        RULE,
        "Who grades math answers for the reward: 'rule' (the verifier), 'judge' (the "
        "chain-of-thought judge model of report 2.3.5), or 'rule_then_judge' (the judge only "
        "where the verifier cannot decide).",
        group="optimization",
        choices=GRADER_MODE_NAMES,
    )
    judge_model: str | None = knob(
        None,
        "The judge model when grader_mode asks for one: a preset, a local Hugging Face directory or a hub id.",
        group="optimization",
    )
    judge_max_tokens: int = knob(
        512, "Tokens the judge may write before its verdict.", group="optimization", minimum=1, maximum=MAX_TOKENS
    )

    def section_errors(self) -> dict[str, str]:
        errors = {}
        if self.grader_mode != RULE and not self.judge_model:
            errors["judge_model"] = f"is required with grader_mode {self.grader_mode}"
        if self.grader_mode == RULE and self.judge_model:
            errors["judge_model"] = "is used only when grader_mode asks the judge (judge or rule_then_judge)"
        return errors
