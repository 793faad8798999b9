"""Next-token log-probs from the last hidden states, a chunk of positions at a time, never holding full logits.

An output layer over a long-CoT batch is the largest tensor of a training step: 64 rows of 8,192 tokens over
Qwen2's 151,936-token vocabulary are 318 GB in float32. `logprobs_in_chunks` applies the output layer to
`chunk_tokens` positions at a time; a chunk's logits exist only while their log-sum-exp is taken, and the
backward pass recomputes them and turns them into their own gradient in place (ChunkLogprobs: softmax less
the one-hot target), keeping only the hidden states and each position's log-sum-exp in between.

With tensor parallelism (Megatron's vocab-parallel output layer) each rank holds rows [first, first + rows) of
the vocabulary: a VocabShard names them, its padding rows (past the real vocabulary) are left out of the softmax,
and the max, the softmax sum and the target's logit are all-reduced over the shard's group, as Megatron's
vocab_parallel_cross_entropy does, so no rank ever gathers the whole vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F


@dataclass(frozen=True)
class VocabShard:
    """This rank's slice of a vocabulary split over a process group: output rows `first` to `first + rows`, of
    which the first `real_rows` are tokens and the rest padding; `group` None means a group of one."""

    first: int
    real_rows: int
    group: object = None


def logprobs_in_chunks(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor,
                       temperature: float, chunk_tokens: int, shard: VocabShard | None = None) -> torch.Tensor:
    """(..., hidden) states and (...) target ids -> (...) float32 log-probs of the targets under
    softmax((hidden @ weight.T + bias) / temperature), `chunk_tokens` positions at a time."""
    flat_hidden, flat_targets = hidden.reshape(-1, hidden.shape[-1]), targets.reshape(-1)
    parts = [ChunkLogprobs.apply(flat_hidden[start:start + chunk_tokens], weight, bias,
                                 flat_targets[start:start + chunk_tokens], temperature, shard)
             for start in range(0, flat_targets.shape[0], chunk_tokens)]
    return torch.cat(parts).view(targets.shape)


class ChunkLogprobs(torch.autograd.Function):
    """(n,) log-probs of `targets` under softmax((hidden @ weight.T + bias) / temperature), in float32, keeping
    no (n, vocabulary) tensor for the backward pass.

    The output layer runs in the dtype it would in the model (bfloat16 under autocast); the backward pass
    recomputes the logits in that dtype and, with g the incoming gradient, turns them in place into
    d/dlogits = g (onehot(target) - softmax) / temperature, then into the gradients of the hidden states (summed
    over the shard's group, whose ranks all saw the same hidden states), the weight and the bias."""

    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor,
                temperature: float, shard: VocabShard | None = None) -> torch.Tensor:
        logits = F.linear(hidden, weight, bias)
        ctx.compute_dtype, ctx.temperature, ctx.shard = logits.dtype, temperature, shard
        logits = _without_padding(scaled_logits(logits, temperature), shard)
        picked = _target_logits(logits, targets, shard)
        log_normalizer = _log_normalizer(logits, shard)
        ctx.save_for_backward(hidden, weight, bias, targets, log_normalizer)
        return picked - log_normalizer

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        hidden, weight, bias, targets, log_normalizer = ctx.saved_tensors
        dtype, shard = ctx.compute_dtype, ctx.shard
        hidden_c, weight_c = hidden.to(dtype), weight.to(dtype)
        logits = scaled_logits(F.linear(hidden_c, weight_c, None if bias is None else bias.to(dtype)),
                               ctx.temperature)
        grad = _without_padding(logits, shard).sub_(log_normalizer.unsqueeze(1)).exp_().neg_()  # -softmax, in place
        index, inside = _local_targets(targets, shard, grad.shape[1])
        grad.scatter_add_(1, index.unsqueeze(1), inside.to(grad.dtype).unsqueeze(1))
        grad.mul_((grad_output / ctx.temperature).unsqueeze(1))
        grad = grad.to(dtype)
        grad_hidden = None
        if ctx.needs_input_grad[0]:
            grad_hidden = _summed_over(grad @ weight_c, shard).to(hidden.dtype)
        grad_weight = (grad.T @ hidden_c).to(weight.dtype) if ctx.needs_input_grad[1] else None
        grad_bias = grad.sum(0).to(bias.dtype) if bias is not None and ctx.needs_input_grad[2] else None
        return grad_hidden, grad_weight, grad_bias, None, None, None


def scaled_logits(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Logits / temperature in float32 (float64 stays), a new tensor unless already so at temperature 1."""
    logits = logits if logits.dtype == torch.float64 else logits.float()
    return logits / temperature if temperature != 1.0 else logits


def _without_padding(logits: torch.Tensor, shard: VocabShard | None) -> torch.Tensor:
    """(n, rows) logits with the shard's padding rows set to -inf (out of the softmax), in place."""
    if shard is not None and shard.real_rows < logits.shape[1]:
        logits[:, shard.real_rows:] = float("-inf")
    return logits


def _local_targets(targets: torch.Tensor, shard: VocabShard | None, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(n,) targets -> their column in this shard's logits (clamped) and whether the shard holds them."""
    if shard is None:
        return targets, torch.ones_like(targets, dtype=torch.bool)
    local = targets - shard.first
    inside = (local >= 0) & (local < rows)
    return local.clamp(0, rows - 1), inside


def _target_logits(logits: torch.Tensor, targets: torch.Tensor, shard: VocabShard | None) -> torch.Tensor:
    """(n,) logit of each target, from the one rank of the group that holds it."""
    index, inside = _local_targets(targets, shard, logits.shape[1])
    picked = logits.gather(1, index.unsqueeze(1)).squeeze(1)
    if shard is None:
        return picked
    return _all_reduced(torch.where(inside, picked, torch.zeros_like(picked)), shard, dist.ReduceOp.SUM)


def _log_normalizer(logits: torch.Tensor, shard: VocabShard | None) -> torch.Tensor:
    """(n,) log-sum-exp over the whole vocabulary; overwrites `logits` when sharded."""
    if shard is None or shard.group is None:
        return torch.logsumexp(logits, dim=-1)
    peak = _all_reduced(logits.max(dim=-1).values, shard, dist.ReduceOp.MAX)
    total = _all_reduced(logits.sub_(peak.unsqueeze(1)).exp_().sum(dim=-1), shard, dist.ReduceOp.SUM)
    return peak + total.log()


def _summed_over(tensor: torch.Tensor, shard: VocabShard | None) -> torch.Tensor:
    return tensor if shard is None else _all_reduced(tensor, shard, dist.ReduceOp.SUM)


def _all_reduced(tensor: torch.Tensor, shard: VocabShard, op) -> torch.Tensor:
    if shard.group is not None:
        dist.all_reduce(tensor, op=op, group=shard.group)
    return tensor
