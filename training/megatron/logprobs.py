"""Per-token log-probs from a Megatron GPTModel whose output layer is split over the tensor-parallel ranks.

The model's own output layer would build this rank's (N, T, V/tp) logits at once; instead the GPTModel returns
its decoder's last hidden states (`decoder_output`) and the output layer is applied a chunk of positions at a
time (training/logprob_chunks.py), with the softmax's max and sum all-reduced over the tensor-parallel group.
Entries past `vocab_size` (the padding that makes the vocabulary split evenly) are out of the softmax.
"""

from __future__ import annotations

import contextlib

import torch

from training.logprob_chunks import VocabShard, logprobs_in_chunks
from training.megatron.model import causal_inputs

CHUNK_TOKENS = 2048  # positions whose logits exist at once on a rank: 1.2 GB in float32 over a 152k vocabulary / tp


@contextlib.contextmanager
def decoder_output(gpt):
    """Within, the GPTModel's forward returns its decoder's last hidden states (N, T, hidden), final norm applied,
    in place of logits; a stage without the output layer (not the last pipeline stage) is unchanged."""
    layer = getattr(gpt, "output_layer", None) if getattr(gpt, "post_process", False) else None
    if layer is None:
        yield
        return
    if getattr(layer, "sequence_parallel", False):
        raise ValueError("chunked log-probs need the output layer's whole sequence: sequence parallelism is off here")
    layer.forward = _hidden_states_through
    try:
        yield
    finally:
        del layer.forward


def _hidden_states_through(hidden_states, weight=None, runtime_gather_output=None):
    return hidden_states, None


def token_logprobs_from_hidden(gpt, hidden: torch.Tensor, input_ids: torch.Tensor, vocab_size: int,
                               temperature: float = 1.0) -> torch.Tensor:
    """(N, T, hidden) last hidden states of the last stage and (N, T) tokens -> (N, T-1) float32 log-prob of each
    next token under softmax(logits / temperature), the output layer applied CHUNK_TOKENS positions at a time."""
    from megatron.core import parallel_state

    tied = getattr(gpt, "share_embeddings_and_output_weights", False)
    weight = gpt.shared_embedding_or_output_weight() if tied else gpt.output_layer.weight
    rows = weight.shape[0]
    first = parallel_state.get_tensor_model_parallel_rank() * rows
    several = parallel_state.get_tensor_model_parallel_world_size() > 1
    shard = VocabShard(first=first, real_rows=max(0, min(rows, vocab_size - first)),
                       group=parallel_state.get_tensor_model_parallel_group() if several else None)
    return logprobs_in_chunks(hidden[:, :-1], weight, getattr(gpt.output_layer, "bias", None), input_ids[:, 1:],
                              temperature, CHUNK_TOKENS, shard)


def token_logprobs(gpt, input_ids: torch.Tensor, vocab_size: int, temperature: float = 1.0) -> torch.Tensor:
    """(N, T) right-padded tokens -> (N, T-1) next-token log-probs; one pipeline stage (the whole model) only."""
    positions, mask = causal_inputs(input_ids)
    with decoder_output(gpt):
        hidden = gpt(input_ids, positions, mask)
    return token_logprobs_from_hidden(gpt, hidden, input_ids, vocab_size, temperature)
