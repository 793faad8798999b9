"""Long2short by DPO (METHOD.md section 8): prefer the shortest correct response over long or wrong ones.

Sample the parent n times per problem, build preference pairs (training.long2short.selection), then
train the policy with the DPO loss against a frozen copy of the parent.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Sequence

import torch

from training.config import DPOConfig
from training.long2short.base import (
    Long2ShortHooks, Long2ShortJob, Long2ShortOutcome, Long2ShortStopped, PreferencePair,
)
from training.long2short.dpo_loss import dpo_loss
from training.long2short.output import load_parent, save_variant_checkpoint
from training.long2short.sampling import JudgedSample, response_ids, sample_parent
from training.long2short.selection import preference_pairs
from training.prompting import prompt_ids
from training.trainer.logprobs import token_logprobs
from training.trainer.torch_trainer import default_device

MICRO_BATCH_PAIRS = 8  # pairs per forward pass (16 sequences); bounds memory, not the gradient step
SAMPLING_SHARE = 0.4  # of the progress bar


@dataclass(frozen=True)
class TokenizedPair:
    """A pair as token ids: the shared prompt, then each response ending in end-of-sequence."""

    prompt: tuple[int, ...]
    chosen: tuple[int, ...]
    rejected: tuple[int, ...]


def run(config: DPOConfig, job: Long2ShortJob, hooks: Long2ShortHooks) -> Long2ShortOutcome:
    """Sample, pair, train with DPO, save the policy as the variant's checkpoint."""
    torch.manual_seed(config.seed)
    model, tokenizer = load_parent(job)
    model.to(default_device())
    hooks.log(f"sampling {config.samples_per_problem} responses to each of {len(job.records)} problems")
    judged = sample_parent(model, tokenizer, job, config, hooks.within(0.0, SAMPLING_SHARE))
    pairs = build_pairs(judged, config.long_correct_ratio)
    hooks.log(f"built {len(pairs)} preference pairs")
    problems = {record.prompt_id: record.problem for record in job.records}
    tokenized = [tokenize_pair(pair, problems[pair.prompt_id], tokenizer) for pair in pairs]
    reference = frozen_copy(model)
    metrics = train_dpo(model, reference, tokenized, config, tokenizer.pad_token_id, hooks)
    path, size = save_variant_checkpoint(model, tokenizer, job, "dpo", config)
    hooks.progress(1.0)
    return Long2ShortOutcome(checkpoint_path=path, size_bytes=size, pairs=tuple(pairs),
                             metrics=metrics | pair_counts(pairs, judged))


def build_pairs(judged: Sequence[Sequence[JudgedSample]], long_correct_ratio: float) -> list[PreferencePair]:
    """Every problem's pairs, in problem order; refuses (ValueError) when no problem yields one."""
    pairs = [pair for samples in judged for pair in preference_pairs(samples, long_correct_ratio)]
    if not pairs:
        samples = [sample for group in judged for sample in group]
        correct = sum(sample.correct for sample in samples)
        raise ValueError(
            f"DPO built no preference pairs: {correct} of {len(samples)} sampled responses to {len(judged)} problems "
            f"were correct, and a pair needs a correct response plus a wrong longer one or a correct one at least "
            f"long_correct_ratio={long_correct_ratio} times as long; raise samples_per_problem or "
            f"max_response_tokens, or start from a parent that solves some of these problems")
    return pairs


def pair_counts(pairs: Sequence[PreferencePair], judged: Sequence[Sequence[JudgedSample]]) -> dict[str, float]:
    """How many pairs of each kind, and the sampled accuracy and length of the parent."""
    samples = [sample for group in judged for sample in group]
    return {"pairs": float(len(pairs)),
            "pairs_wrong_longer": float(sum(p.rejected_reason == "wrong_longer" for p in pairs)),
            "pairs_correct_too_long": float(sum(p.rejected_reason == "correct_too_long" for p in pairs)),
            "problems_with_pairs": float(len({p.prompt_id for p in pairs})),
            "sampled_accuracy": sum(s.correct for s in samples) / max(len(samples), 1),
            "sampled_mean_tokens": sum(s.response_tokens for s in samples) / max(len(samples), 1)}


def tokenize_pair(pair: PreferencePair, problem: str, tokenizer) -> TokenizedPair:
    """The responses' tokens as sampled; a pair built without them (from text) is encoded, then end-of-sequence."""
    return TokenizedPair(prompt=tuple(prompt_ids(problem, tokenizer)),
                         chosen=pair.chosen_ids or response_ids(pair.chosen, tokenizer),
                         rejected=pair.rejected_ids or response_ids(pair.rejected, tokenizer))


def frozen_copy(model):
    """The reference: a copy of the parent in eval mode that takes no gradient."""
    reference = copy.deepcopy(model).eval()
    reference.requires_grad_(False)
    return reference


def sequence_logprobs(model, sequences: Sequence[tuple[tuple[int, ...], tuple[int, ...]]],
                      pad_id: int) -> torch.Tensor:
    """(N,) summed log-probs of each (prompt, response)'s response tokens; right-padded, prompt masked out."""
    device = next(model.parameters()).device
    width = max(len(prompt) + len(response) for prompt, response in sequences)
    input_ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    loss_mask = torch.zeros((len(sequences), width - 1))  # position t predicts token t + 1
    for row, (prompt, response) in enumerate(sequences):
        tokens = list(prompt) + list(response)
        input_ids[row, :len(tokens)] = torch.tensor(tokens)
        attention[row, :len(tokens)] = 1
        loss_mask[row, len(prompt) - 1:len(tokens) - 1] = 1.0
    tokens = token_logprobs(model, input_ids.to(device), attention.to(device))  # (N, T-1)
    return (tokens * loss_mask.to(device)).sum(dim=1)


def pair_logprobs(model, pairs: Sequence[TokenizedPair], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(P,) chosen and (P,) rejected sequence log-probs, in one forward pass."""
    sequences = [(pair.prompt, pair.chosen) for pair in pairs] + [(pair.prompt, pair.rejected) for pair in pairs]
    logp = sequence_logprobs(model, sequences, pad_id)
    return logp[:len(pairs)], logp[len(pairs):]


@torch.no_grad()
def reference_logprobs(reference, pairs: Sequence[TokenizedPair], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(P,) chosen and rejected log-probs under the frozen reference, micro-batch by micro-batch."""
    parts = [pair_logprobs(reference, pairs[start:start + MICRO_BATCH_PAIRS], pad_id)
             for start in range(0, len(pairs), MICRO_BATCH_PAIRS)]
    return torch.cat([part[0] for part in parts]), torch.cat([part[1] for part in parts])


def train_dpo(policy, reference, pairs: Sequence[TokenizedPair], config: DPOConfig, pad_id: int,
              hooks: Long2ShortHooks = Long2ShortHooks()) -> dict[str, float]:
    """`config.epochs` passes over the shuffled pairs, `pairs_per_step` pairs per AdamW step.

    Returns the first and last step's loss and the last epoch's mean reward accuracy and margin.
    """
    reference_chosen, reference_rejected = reference_logprobs(reference, pairs, pad_id)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=config.learning_rate, weight_decay=0.0)
    order_rng = random.Random(config.seed)
    steps_per_epoch = -(-len(pairs) // config.pairs_per_step)
    total_steps, losses, epoch_metrics = steps_per_epoch * config.epochs, [], []
    policy.train()
    for epoch in range(config.epochs):
        order = list(range(len(pairs)))
        order_rng.shuffle(order)
        epoch_metrics = []
        for start in range(0, len(order), config.pairs_per_step):
            if hooks.should_stop():
                raise Long2ShortStopped(f"stopped during DPO epoch {epoch + 1}")
            step_indices = order[start:start + config.pairs_per_step]
            loss, metrics = dpo_step(policy, optimizer, [pairs[i] for i in step_indices],
                                     reference_chosen[step_indices], reference_rejected[step_indices],
                                     config.beta, pad_id)
            losses.append(loss)
            epoch_metrics.append((metrics, len(step_indices)))
            hooks.progress(SAMPLING_SHARE + (1 - SAMPLING_SHARE) * 0.95 * len(losses) / total_steps)
        hooks.log(f"DPO epoch {epoch + 1}/{config.epochs}: loss {losses[-1]:.4f}")
    weight = sum(count for _, count in epoch_metrics)
    return {"loss_first": losses[0], "loss_last": losses[-1],
            "reward_accuracy": sum(m["reward_accuracy"] * n for m, n in epoch_metrics) / weight,
            "margin": sum(m["margin"] * n for m, n in epoch_metrics) / weight}


def dpo_step(policy, optimizer, pairs: Sequence[TokenizedPair], reference_chosen: torch.Tensor,
             reference_rejected: torch.Tensor, beta: float, pad_id: int) -> tuple[float, dict[str, float]]:
    """One gradient step on the mean DPO loss of `pairs`, accumulated over micro-batches; clips at norm 1."""
    optimizer.zero_grad(set_to_none=True)
    device = next(policy.parameters()).device
    total, margins = 0.0, []
    for start in range(0, len(pairs), MICRO_BATCH_PAIRS):
        micro = slice(start, start + MICRO_BATCH_PAIRS)
        chosen, rejected = pair_logprobs(policy, pairs[micro], pad_id)
        loss, _ = dpo_loss(chosen, rejected, reference_chosen[micro].to(device),
                           reference_rejected[micro].to(device), beta)
        share = loss * (chosen.numel() / len(pairs))  # the step's loss is the mean over all its pairs
        share.backward()
        total += float(share.detach())
        margins.append(beta * ((chosen.detach() - reference_chosen[micro].to(device))
                               - (rejected.detach() - reference_rejected[micro].to(device))))
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    optimizer.step()
    margin = torch.cat(margins)  # measured before this step's update
    return total, {"reward_accuracy": float((margin > 0).float().mean()), "margin": float(margin.mean())}
