"""Section rollouts: the engine that samples responses, their length, temperature and partial rollouts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from common.knobs import knob
from training.config.limits import MAX_BATCH, MAX_STEPS, MAX_TEMPERATURE, MAX_TOKENS, MAX_WEIGHT
from training.registries import rollout_engines

ROLLOUT_ENGINES = tuple(rollout_engines.entries)
# vllm-hybrid between rollouts: put vLLM to sleep (GPU) or stop its process and start it again.
HYBRID_RELEASE_MODES = ("restart", "sleep")
ROLLOUT_DTYPES = ("auto", "float32", "bfloat16", "float16")
ROLLOUT_COMPILE_MODES = ("auto", "on", "off")
ROLLOUT_LOOPS = ("auto", "generate", "lean")


@dataclass(frozen=True)
class RolloutSection:
    section_name: ClassVar[str] = "rollouts"
    section_title: ClassVar[str] = "Rollouts"

    rollout_engine: str = knob(
        "torch",
        "Rollout engine: torch (Hugging Face generate), vllm (in this "
        "process) or vllm-hybrid (vLLM in its own process, taking turns with the trainer on "
        "the same devices).",
        group="rollouts",
        choices=ROLLOUT_ENGINES,
    )
    max_response_tokens: int = knob(
        256, "Longest response, in tokens.", group="rollouts", minimum=1, maximum=MAX_TOKENS
    )
    max_model_len: int | None = knob(
        None,
        "Context window used for rollouts and training (prompt + response tokens); empty = the model's own "
        "(max_position_embeddings); may only lower it.",
        group="rollouts",
        minimum=1,
        maximum=MAX_TOKENS,
    )
    temperature: float = knob(
        1.0,
        "Sampling temperature of rollouts; the trainer, the reference and the KL score "
        "responses at the same temperature.",
        group="rollouts",
        exclusive_minimum=0.0,
        maximum=MAX_TEMPERATURE,
    )
    partial_rollout_token_budget: int | None = knob(
        None,
        "Partial rollouts: output tokens a response may grow per iteration; a longer one is parked in the "
        "replay buffer and continued next iteration while fresh problems fill the batch (empty = off).",
        group="rollouts",
        minimum=1,
        maximum=MAX_TOKENS,
    )
    max_parked_groups: int | None = knob(
        None,
        "Partial rollouts: most groups the replay buffer holds; when it is full, the oldest parked groups are "
        "completed in the iteration without the token budget (empty = 4 x batch_size).",
        group="rollouts",
        minimum=1,
        maximum=MAX_BATCH,
    )
    exclude_segments_older_than: int | None = knob(
        None,
        "Partial rollouts: leave out of the loss segments generated more than this many iterations ago "
        "(empty = keep all).",
        group="rollouts",
        minimum=0,
        maximum=MAX_STEPS,
    )
    overlap_rollouts: bool = knob(
        False,
        "Roll out the next iteration's batch while the trainer updates on this one (one step off-policy: "
        "those responses come from the policy one update older, and the loss's reference stays the "
        "current policy). Torch trainer, torch or vllm engine, one training process.",
        group="rollouts",
    )
    repeat_penalty: float = knob(
        0.0,
        "Above 0: repeat detection stops a degenerate response while it is decoded, "
        "and this reward is subtracted from it.",
        group="rollouts",
        minimum=0.0,
        maximum=MAX_WEIGHT,
    )
    truncated_counts_wrong: bool = knob(
        True,
        "A response cut off at max_response_tokens earns no correctness reward, whatever answer its text holds "
        "(it never finished; rewarding it teaches the policy not to stop). False grades the text as it is. "
        "Long2short RL always counts them wrong (report 2.4: the shorter limit penalises answers that run over).",
        group="rollouts",
    )
    rollout_dtype: str = knob(
        "auto",
        "The dtype rollouts sample in (torch, vllm and vllm-hybrid engines); auto = the "
        "trainer's on a CPU; on a GPU bfloat16 for the torch engine and vLLM's 16-bit choice "
        "for a float32 trainer (float32 makes sampler and trainer log-probs agree closely on a "
        "CPU, at a speed cost; on a GPU the torch trainer scores under bfloat16 autocast, so "
        "float32 rollouts bring the two no closer there).",
        group="rollouts",
        choices=ROLLOUT_DTYPES,
    )
    rollout_compile: str = knob(
        "auto",
        "torch engine: decode into a static KV cache whose decoding step transformers compiles "
        "(torch.compile with CUDA graphs; the first call of each shape pays the compilation, rows stay "
        "until the call's longest ends); auto = on a GPU unless rollouts overlap training, on = always "
        "(a CPU too), off = a dynamic cache from which finished rows leave every 16 steps.",
        group="rollouts",
        choices=ROLLOUT_COMPILE_MODES,
    )
    rollout_loop: str = knob(
        "auto",
        "torch engine: the decoding loop; generate = Hugging Face generate; lean = the engine's own "
        "loop over a static KV cache, whose step (forward pass, sampler and bookkeeping) rollout_compile "
        "compiles as one graph; auto = lean where decoding is compiled (a GPU by default), else generate. "
        "Both sample the same tokens from the same streams.",
        group="rollouts",
        choices=ROLLOUT_LOOPS,
    )
    hybrid_release: str = knob(
        "restart",
        "vllm-hybrid only: how vLLM frees the devices for training between "
        "rollouts: restart (stop its process, start it again; works everywhere) or sleep "
        "(vLLM's sleep mode, GPU only, much faster).",
        group="rollouts",
        choices=HYBRID_RELEASE_MODES,
    )
    vllm_sidecar_socket: str | None = knob(
        None,
        "vllm-hybrid only: Unix socket of a vLLM sidecar that starts the vLLM "
        "servers (empty = the worker's MIRRORLAB_VLLM_SIDECAR_SOCKET, or, without "
        "one, the trainer starts them itself).",
        group="rollouts",
        deployment=True,
    )

    def section_errors(self) -> dict[str, str]:
        errors = {}
        budget = self.partial_rollout_token_budget
        if budget is not None and budget > self.max_response_tokens:
            errors["partial_rollout_token_budget"] = "must not exceed max_response_tokens"
        if self.max_model_len is not None and self.max_response_tokens >= self.max_model_len:
            errors["max_response_tokens"] = (
                f"must be below max_model_len ({self.max_model_len}): the prompt needs room in the context window too"
            )
        if self.overlap_rollouts and self.exclude_segments_older_than == 0:
            errors["exclude_segments_older_than"] = (
                "must be at least 1 with overlap_rollouts: every response is then one policy update old, "
                "so 0 would leave nothing to train on"
            )
        return errors
