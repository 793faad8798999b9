"""The RL run config (METHOD.md sections 2 to 7) and the long2short method configs.

Frozen dataclasses; YAML, forms and the REST API are only inputs, parsed by
`common.knobs.parse_config`. The resolved config is stored on the run row and
inside every checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.knobs import knob
from grading.cot_judge.modes import GRADER_MODE_NAMES, RULE
from grading.verifier.extraction import EXTRACTION_POLICIES, FLEXIBLE
from training.registries import log_z_estimates, policy_losses, rollout_engines, samplers, trainer_backends

# Choices that name an implementation come from its registry (training/registries.py), in registration order.
SAMPLING_STRATEGIES = tuple(samplers.entries)
HARD_PROBLEMS_BY = ("difficulty", "pass_rate")
LOG_Z_ESTIMATES = tuple(log_z_estimates.entries)
POLICY_LOSSES = tuple(policy_losses.entries)
ROLLOUT_ENGINES = tuple(rollout_engines.entries)
# vllm-hybrid between rollouts: put vLLM to sleep (GPU) or stop its process and start it again.
HYBRID_RELEASE_MODES = ("restart", "sleep")
ROLLOUT_DTYPES = ("auto", "float32", "bfloat16", "float16")
# "noop-test" writes synthetic iterations and trains nothing: for tests of the job plumbing only, never a default.
TRAINER_BACKENDS = tuple(trainer_backends.entries)
MEGATRON_PRECISIONS = ("auto", "bf16", "fp32")


@dataclass(frozen=True)
class RLConfig:
    """Every knob of one RL run; the prompt set and evaluation suite are chosen beside it."""

    model: str = knob(
        "tiny",
        "Model: the built-in 'tiny' preset (created locally), a local Hugging Face directory, or a hub id.",
        group="model",
    )
    seed: int = knob(0, "Random seed for sampling problems, rollouts and initialisation.", group="model", minimum=0)
    warmup_sft_steps: int = knob(0, "Long-CoT warm-up: SFT steps on verified reasoning traces of the synthetic "
                                 "task before RL (0 = none).", group="warmup", minimum=0)
    warmup_sft_learning_rate: float = knob(1e-3, "Warm-up SFT learning rate.", group="warmup", exclusive_minimum=0.0)
    warmup_sft_batch_size: int = knob(16, "Warm-up SFT: packed sequences per step.", group="warmup", minimum=1)
    warmup_sft_sequence_length: int = knob(256, "Warm-up SFT: tokens per packed sequence.", group="warmup",
                                           minimum=16)
    iterations: int = knob(20, "RL iterations; each samples a batch of problems and updates the policy.",
                           group="optimization", minimum=1)
    batch_size: int = knob(8, "Problems sampled per iteration.", group="data", minimum=1)
    samples_per_problem: int = knob(8, "k: responses sampled per problem (the group for the baseline).",
                                    group="data", minimum=1)
    sampling_strategy: str = knob("uniform", "How problems are drawn: uniform, curriculum (easy to hard by "
                                  "difficulty label), prioritized (probability proportional to 1 - success rate) or "
                                  "warmup_then_hard (the report's figure 9: uniform over the whole set, then hard "
                                  "problems only).", group="data", choices=SAMPLING_STRATEGIES)
    curriculum_iterations: int = knob(10, "N for the curriculum strategies: curriculum widens the pool from the "
                                      "easiest difficulty to all difficulties over iterations 1 to N; "
                                      "warmup_then_hard draws uniformly from the whole set for iterations 1 to N and "
                                      "only hard problems from N + 1 on.", group="data", minimum=1)
    hard_problems_by: str = knob("difficulty", "warmup_then_hard only: what makes a problem hard. difficulty: its "
                                 "label is in the upper half of the set's difficulty levels (easy < medium < hard < "
                                 "expert, then numbers, then other labels A-Z; at least the top level); pass_rate: "
                                 "its measured pass rate is at most hard_pass_rate_threshold (a high pass rate is "
                                 "easy). Problems without a label, or without a pass rate, are never hard.",
                                 group="data", choices=HARD_PROBLEMS_BY)
    hard_pass_rate_threshold: float = knob(0.5, "warmup_then_hard with hard_problems_by pass_rate: problems whose "
                                           "measured pass rate is at most this are hard (a high pass rate is easy).",
                                           group="data", minimum=0.0, maximum=1.0)
    learning_rate: float = knob(1e-5, "Optimizer learning rate (the optimizer is reset every iteration).",
                                group="optimization", exclusive_minimum=0.0)
    gradient_steps_per_iteration: int = knob(1, "Gradient steps on each iteration's batch.",
                                             group="optimization", minimum=1)
    micro_batch_size: int = knob(16, "Responses per forward/backward pass (gradient accumulation above it).",
                                 group="optimization", minimum=1)
    max_grad_norm: float = knob(1.0, "Gradient clipping norm.", group="optimization", exclusive_minimum=0.0)
    tau: float = knob(0.1, "KL-regularisation strength tau of the mirror-descent loss (> 0).",
                      group="optimization", exclusive_minimum=0.0)
    log_z_estimate: str = knob("mean_reward", "Estimate of tau*log Z: the mean reward, or tau*log mean exp(r/tau).",
                               group="optimization", choices=LOG_Z_ESTIMATES)
    policy_loss: str = knob("mirror_descent", "Loss: online mirror descent (the report's), or the ReST baseline "
                            "(likelihood of the best response only).", group="optimization", choices=POLICY_LOSSES)
    answer_extraction: str = knob(FLEXIBLE, "How the reward finds a response's final answer: 'flexible' (the last "
                                  "\\boxed{}, else an answer line such as 'The answer is 9', else a final line "
                                  "that is only an expression) or 'boxed' (the last \\boxed{} only).",
                                  group="optimization", choices=EXTRACTION_POLICIES)
    grader_mode: str = knob(RULE, "Who grades math answers for the reward: 'rule' (the verifier), 'judge' (the "
                            "chain-of-thought judge model of report 2.3.5), or 'rule_then_judge' (the judge only "
                            "where the verifier cannot decide).", group="optimization", choices=GRADER_MODE_NAMES)
    judge_model: str | None = knob(None, "The judge model when grader_mode asks for one: a preset, a local Hugging "
                                   "Face directory or a hub id.", group="optimization")
    judge_max_tokens: int = knob(512, "Tokens the judge may write before its verdict.", group="optimization",
                                 minimum=1)
    length_penalty_weight: float = knob(0.0, "Weight of the length reward added to the correctness reward "
                                        "(0 turns it off).", group="length_penalty", minimum=0.0)
    length_penalty_warmup_iterations: int = knob(0, "Iterations trained without the length reward before its "
                                                 "weight applies.", group="length_penalty", minimum=0)
    rollout_engine: str = knob("torch", "Rollout engine: torch (Hugging Face generate), vllm (in this "
                               "process) or vllm-hybrid (vLLM in its own process, taking turns with the trainer on "
                               "the same devices).",
                               group="rollouts", choices=ROLLOUT_ENGINES)
    max_response_tokens: int = knob(256, "Longest response, in tokens.", group="rollouts", minimum=1)
    max_model_len: int | None = knob(
        None, "Context window used for rollouts and training (prompt + response tokens); empty = the model's own "
        "(max_position_embeddings); may only lower it.", group="rollouts", minimum=1)
    temperature: float = knob(1.0, "Sampling temperature of rollouts; the trainer, the reference and the KL score "
                              "responses at the same temperature.", group="rollouts", exclusive_minimum=0.0)
    partial_rollout_token_budget: int | None = knob(
        None, "Partial rollouts: output tokens a response may grow per iteration; a longer one is parked in the "
        "replay buffer and continued next iteration while fresh problems fill the batch (empty = off).",
        group="rollouts", minimum=1)
    max_parked_groups: int | None = knob(
        None, "Partial rollouts: most groups the replay buffer holds; when it is full, the oldest parked groups are "
        "completed in the iteration without the token budget (empty = 4 x batch_size).", group="rollouts",
        minimum=1)
    exclude_segments_older_than: int | None = knob(
        None, "Partial rollouts: leave out of the loss segments generated more than this many iterations ago "
        "(empty = keep all).", group="rollouts", minimum=0)
    repeat_penalty: float = knob(0.0, "Above 0: repeat detection stops a degenerate response while it is decoded, "
                                 "and this reward is subtracted from it.", group="rollouts", minimum=0.0)
    rollout_dtype: str = knob("auto", "The dtype rollouts sample in (torch, vllm and vllm-hybrid engines); auto = the "
                              "trainer's on a CPU; on a GPU bfloat16 for the torch engine and vLLM's 16-bit choice "
                              "for a float32 trainer (float32 makes sampler and trainer log-probs agree closely, at a "
                              "speed cost).", group="rollouts", choices=ROLLOUT_DTYPES)
    hybrid_release: str = knob("restart", "vllm-hybrid only: how vLLM frees the devices for training between "
                               "rollouts: restart (stop its process, start it again; works everywhere) or sleep "
                               "(vLLM's sleep mode, GPU only, much faster).", group="rollouts",
                               choices=HYBRID_RELEASE_MODES)
    vllm_sidecar_socket: str | None = knob(None, "vllm-hybrid only: Unix socket of a vLLM sidecar that starts the vLLM "
                                           "servers (empty = the worker's MIRRORLAB_VLLM_SIDECAR_SOCKET, or, without "
                                           "one, the trainer starts them itself).", group="rollouts", deployment=True)
    trainer_backend: str = knob("torch", "Trainer: torch (one process, torchrun for several GPUs) or megatron. "
                                "'noop-test' trains nothing and exists for plumbing tests.",
                                group="optimization", choices=TRAINER_BACKENDS, test_only_choices=("noop-test",))
    tensor_parallel_size: int = knob(1, "megatron only: GPUs each layer's weights are split over (must divide the "
                                     "heads, key-value heads and ffn size).", group="optimization", minimum=1)
    pipeline_parallel_size: int = knob(1, "megatron only: pipeline stages the layers are split into (must divide "
                                       "the layer count).", group="optimization", minimum=1)
    megatron_precision: str = knob("auto", "megatron only: weights in bf16 (fp32 main copies in the optimizer) or "
                                   "fp32; auto = bf16 on a GPU that supports it, else fp32.", group="optimization",
                                   choices=MEGATRON_PRECISIONS)
    nnodes: int = knob(1, "Machines the run trains on (torchrun --nnodes; above 1 needs rdzv_endpoint).",
                       group="distributed", minimum=1)
    nproc_per_node: int = knob(1, "Training processes per machine, usually one per GPU (torchrun "
                               "--nproc_per_node; 1 with nnodes 1 = no torchrun).", group="distributed", minimum=1)
    node_rank: int | None = knob(None, "This machine's rank among nnodes for a static rendezvous (empty = "
                                 "assigned by the c10d rendezvous).", group="distributed", minimum=0)
    rdzv_endpoint: str | None = knob(None, "host:port of the c10d rendezvous every node joins (empty = this "
                                     "machine alone, a free local port).", group="distributed")
    rdzv_id: str | None = knob(None, "Rendezvous id shared by the run's nodes (empty = derived from the run).",
                               group="distributed")
    checkpoint_every_iterations: int = knob(10, "Save a checkpoint every N iterations (and at the end).",
                                            group="evaluation", minimum=1)
    evaluate_every_iterations: int = knob(0, "Evaluate checkpoints on the run's suite every N iterations "
                                          "(0 = only at the end, when a suite is chosen).",
                                          group="evaluation", minimum=0)
    stored_samples_per_iteration: int = knob(64, "Trained responses stored per iteration for the run page's "
                                             "sample browser (0 = none).", group="evaluation", minimum=0)

    @property
    def parked_group_limit(self) -> int:
        """max_parked_groups, or its default of 4 x batch_size."""
        return self.max_parked_groups if self.max_parked_groups is not None else 4 * self.batch_size

    def cross_field_errors(self) -> dict[str, str]:
        """Constraints that involve several knobs."""
        errors = {}
        budget = self.partial_rollout_token_budget
        if budget is not None and budget > self.max_response_tokens:
            errors["partial_rollout_token_budget"] = "must not exceed max_response_tokens"
        if self.sampling_strategy == "warmup_then_hard" and self.curriculum_iterations >= self.iterations:
            errors["curriculum_iterations"] = ("with warmup_then_hard must be below iterations: the hard problems "
                                               "are drawn from iteration curriculum_iterations + 1 on")
        if self.max_model_len is not None and self.max_response_tokens >= self.max_model_len:
            errors["max_response_tokens"] = (f"must be below max_model_len ({self.max_model_len}): the prompt needs "
                                             "room in the context window too")
        if self.grader_mode != RULE and not self.judge_model:
            errors["judge_model"] = f"is required with grader_mode {self.grader_mode}"
        if self.grader_mode == RULE and self.judge_model:
            errors["judge_model"] = "is used only when grader_mode asks the judge (judge or rule_then_judge)"
        if self.length_penalty_warmup_iterations > self.iterations:
            errors["length_penalty_warmup_iterations"] = "must not exceed iterations"
        for name in ("tensor_parallel_size", "pipeline_parallel_size"):
            if getattr(self, name) > 1 and self.trainer_backend != "megatron":
                errors[name] = "above 1 needs trainer_backend megatron"
        if self.rollout_engine == "vllm" and self.nnodes * self.nproc_per_node > 1:
            errors["rollout_engine"] = ("vllm runs inside the training process and takes the first GPU of every "
                                        "rank; with several training processes use vllm-hybrid (one vLLM server "
                                        "per rank, on its own GPU)")
        if self.node_rank is not None and self.node_rank >= self.nnodes:
            errors["node_rank"] = f"must be below nnodes ({self.nnodes})"
        if self.nnodes > 1 and not self.rdzv_endpoint:
            errors["rdzv_endpoint"] = "needed when nnodes > 1: host:port of the rendezvous every node joins"
        return errors


LONG2SHORT_METHODS = ("merge", "shortest_rejection", "dpo", "long2short_rl")


@dataclass(frozen=True)
class MergeConfig:
    """Model merging: a weighted average of the parent with other checkpoints."""

    parent_weight: float = knob(0.5, "Weight of the parent (long-CoT) model; the others share the rest.",
                                group="merge", minimum=0.0, maximum=1.0)
    other_checkpoint_ids: str | None = knob(None, "Comma-separated ids of the checkpoints merged with the parent "
                                            "(for example a short-CoT model).", group="merge")
    other_run_iterations: str | None = knob(None, "Comma-separated iterations of the parent run whose checkpoints "
                                            "are also merged (0 = its warm-up checkpoint, a shorter-CoT model).",
                                            group="merge")
    other_weights: str | None = knob(None, "Comma-separated weights of the other checkpoints, in the order "
                                     "listed (checkpoint ids first, then run iterations); with parent_weight they "
                                     "must sum to 1. Empty = the others share 1 - parent_weight equally.",
                                     group="merge")

    def weights(self, others: int) -> tuple[float, ...]:
        """(parent weight, each other checkpoint's weight) for `others` further checkpoints."""
        if self.other_weights is None:
            return (self.parent_weight,) + ((1.0 - self.parent_weight) / others,) * others if others else (1.0,)
        listed = _number_list(self.other_weights)
        if len(listed) != others:
            raise ValueError(f"other_weights lists {len(listed)} weights for {others} other checkpoints")
        return (self.parent_weight, *listed)

    def cross_field_errors(self) -> dict[str, str]:
        """other_weights: non-negative numbers, one per listed checkpoint, summing to 1 with parent_weight."""
        if self.other_weights is None:
            return {}
        try:
            listed = _number_list(self.other_weights)
        except ValueError as error:
            return {"other_weights": str(error)}
        others = len(_text_list(self.other_checkpoint_ids)) + len(_text_list(self.other_run_iterations))
        if others and len(listed) != others:
            return {"other_weights": f"lists {len(listed)} weights but {others} other checkpoints are chosen"}
        total = self.parent_weight + sum(listed)
        if abs(total - 1.0) > 1e-6:
            return {"other_weights": f"with parent_weight the weights sum to {total:g}, not 1"}
        return {}


def _text_list(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def _number_list(text: str) -> list[float]:
    """'0.3, 0.2' -> [0.3, 0.2]; a ValueError names the item that is not a non-negative number."""
    numbers = []
    for item in _text_list(text):
        try:
            number = float(item)
        except ValueError:
            raise ValueError(f"{item!r} is not a number") from None
        if not number >= 0.0 or number == float("inf"):
            raise ValueError(f"{item!r} must be a non-negative finite number")
        numbers.append(number)
    return numbers


@dataclass(frozen=True)
class ShortestRejectionConfig:
    """Shortest rejection sampling: keep the shortest correct of n samples, then SFT on them."""

    samples_per_problem: int = knob(8, "n: samples drawn per problem from the long model.", group="sampling", minimum=1)
    max_response_tokens: int = knob(256, "Longest sampled response, in tokens.", group="sampling", minimum=1)
    learning_rate: float = knob(1e-5, "SFT learning rate.", group="sft", exclusive_minimum=0.0)
    epochs: int = knob(1, "SFT epochs over the kept responses.", group="sft", minimum=1)
    seed: int = knob(0, "Random seed.", group="sampling", minimum=0)
    temperature: float = knob(1.0, "Sampling temperature of the long model.", group="sampling",
                              exclusive_minimum=0.0)
    batch_size: int = knob(8, "SFT: kept responses per optimizer step.", group="sft", minimum=1)


@dataclass(frozen=True)
class DPOConfig:
    """DPO with the shortest correct response as chosen and long or wrong ones as rejected."""

    samples_per_problem: int = knob(8, "Samples drawn per problem to build preference pairs.", group="sampling",
                                    minimum=1)
    max_response_tokens: int = knob(256, "Longest sampled response, in tokens.", group="sampling", minimum=1)
    long_correct_ratio: float = knob(1.5, "Correct responses at least this many times longer than the shortest "
                                     "correct one become rejected.", group="pairs", exclusive_minimum=1.0)
    beta: float = knob(0.1, "DPO beta (strength of the implicit KL to the reference).", group="dpo",
                       exclusive_minimum=0.0)
    learning_rate: float = knob(1e-6, "DPO learning rate.", group="dpo", exclusive_minimum=0.0)
    epochs: int = knob(1, "Epochs over the pairs.", group="dpo", minimum=1)
    temperature: float = knob(1.0, "Sampling temperature of the long model.", group="sampling",
                              exclusive_minimum=0.0)
    pairs_per_step: int = knob(8, "Preference pairs per gradient step.", group="dpo", minimum=1)
    seed: int = knob(0, "Random seed.", group="sampling", minimum=0)


@dataclass(frozen=True)
class Long2ShortRLConfig:
    """RL from a chosen checkpoint with the length penalty on from the start and a shorter limit."""

    iterations: int = knob(10, "RL iterations.", group="rl", minimum=1)
    length_penalty_weight: float = knob(0.5, "Length reward weight, applied from the first iteration.",
                                        group="rl", exclusive_minimum=0.0)
    max_response_fraction: float = knob(0.5, "Maximum rollout length as a fraction of the parent run's.",
                                        group="rl", exclusive_minimum=0.0, maximum=1.0)
    learning_rate: float = knob(1e-5, "Learning rate.", group="rl", exclusive_minimum=0.0)
    seed: int = knob(0, "Random seed.", group="rl", minimum=0)


LONG2SHORT_CONFIGS: dict[str, type] = {
    "merge": MergeConfig,
    "shortest_rejection": ShortestRejectionConfig,
    "dpo": DPOConfig,
    "long2short_rl": Long2ShortRLConfig,
}
