"""Per-token log-probs from a Megatron GPTModel whose logits stay split over the tensor-parallel ranks."""

from __future__ import annotations

import torch

from training.megatron.model import causal_inputs


def logprobs_from_sharded_logits(logits: torch.Tensor, input_ids: torch.Tensor, vocab_size: int,
                                 temperature: float = 1.0) -> torch.Tensor:
    """(N, T, V/tp) this rank's logits and (N, T) tokens -> (N, T-1) log-prob of each next token, float32.

    The distribution is softmax(logits / temperature): RL passes its sampling temperature.

    vocab_parallel_cross_entropy all-reduces the max, the target logit and the softmax sum over the
    tensor-parallel group, so the full vocabulary is never gathered. Entries past `vocab_size` (the
    padding that makes the vocabulary split evenly) are set to -inf, out of the softmax. The function
    works in place on its input, hence the copy of the shifted slice.
    """
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel import vocab_parallel_cross_entropy

    shifted = logits[:, :-1].float().contiguous()
    if temperature != 1.0:
        shifted = shifted / temperature
    partition = shifted.shape[-1]
    first = parallel_state.get_tensor_model_parallel_rank() * partition
    padding_from = max(0, min(partition, vocab_size - first))  # local index of the first padding entry
    if padding_from < partition:
        shifted = torch.cat([shifted[..., :padding_from],
                             torch.full_like(shifted[..., padding_from:], float("-inf"))], dim=-1)
    return -vocab_parallel_cross_entropy(shifted, input_ids[:, 1:].contiguous())


def token_logprobs(model, input_ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """(N, T) right-padded tokens -> (N, T-1) next-token log-probs; one pipeline stage (the whole model) only."""
    positions, mask = causal_inputs(input_ids)
    return logprobs_from_sharded_logits(model(input_ids, positions, mask), input_ids, vocab_size)
