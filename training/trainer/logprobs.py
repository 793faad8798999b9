"""Per-token log-probs of a Hugging Face causal LM, the quantity every trainer pass scores.

Full logits of a long-CoT batch do not fit anywhere (training/logprob_chunks.py). Where a model's logits are its
output layer applied to its decoder's last hidden states (checked once per model by a probe), the log-probs are
taken from those hidden states CHUNK_TOKENS positions at a time, with a hand-written backward. Other models
(logit soft-capping or scaling, vision-language heads) score through their full logits. Same values and
gradients either way, to float32 rounding.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

from training.logprob_chunks import logprobs_in_chunks, scaled_logits

CHUNK_TOKENS = 2048  # positions whose logits exist at once: 1.2 GB in float32 over a 152k vocabulary
PROBE_TOKENS = 7
PROBE_CHUNK = 3  # the probe splits its 2 x 6 predictions into chunks of 3, so chunking itself is checked
PROBE_TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-9}  # other dtypes: 2e-2
# Config fields of heads that change the logits after the output layer (Gemma 2's soft-capping, Cohere's scale,
# Granite's divisor): such a model scores through its full logits whatever the probe finds, since with small
# logits (a fresh model) soft-capping is close to the identity and the probe would pass.
LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "logits_scaling", "output_multiplier_scale")

_chunking_supported: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> bool, probed once


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                   temperature: float = 1.0, position_ids: torch.Tensor | None = None) -> torch.Tensor:
    """(N, T-1) log-prob of each next token under softmax(logits / temperature) of `model`, in float32.

    RL passes the sampling temperature, so the trainer scores responses under the distribution they were drawn from.
    Packed rows pass restarting `position_ids` and no attention mask (training.trainer.packing). `model` may be
    wrapped (DDP): its forward is what runs, so gradient synchronisation sees every pass.
    """
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids}
    if chunking_supported(model):
        return chunked_token_logprobs(model, inputs, temperature, CHUNK_TOKENS)
    return full_token_logprobs(model, inputs, temperature)


def masked_mean_nll(model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                    loss_mask: torch.Tensor) -> torch.Tensor:
    """SFT's loss: the mean next-token negative log-likelihood over the tokens where (N, T) `loss_mask` is 1,
    through token_logprobs (so never the full logits of a long-CoT batch)."""
    mask = loss_mask[:, 1:].float()
    return -(token_logprobs(model, input_ids, attention_mask) * mask).sum() / mask.sum().clamp(min=1.0)


def full_token_logprobs(model, inputs: dict, temperature: float) -> torch.Tensor:
    """Through the model's own logits of every position."""
    logits = scaled_logits(model(**inputs, use_cache=False).logits[:, :-1], temperature)
    return torch.gather(F.log_softmax(logits, dim=-1), 2, inputs["input_ids"][:, 1:].unsqueeze(-1)).squeeze(-1)


def chunked_token_logprobs(model, inputs: dict, temperature: float, chunk_tokens: int) -> torch.Tensor:
    """From the decoder's last hidden states, `chunk_tokens` predictions at a time (the model's own forward runs,
    keeping the logits of one position only)."""
    hidden = decoder_hidden_states(model, inputs)[:, :-1]
    head = unwrapped(model).get_output_embeddings()
    return logprobs_in_chunks(hidden, head.weight, head.bias, inputs["input_ids"][:, 1:], temperature, chunk_tokens)


def decoder_hidden_states(model, inputs: dict) -> torch.Tensor:
    """(N, T, hidden) output of the model's decoder, from a forward pass of the (possibly wrapped) model that
    computes the logits of the last position only."""
    captured = []
    hook = unwrapped(model).get_decoder().register_forward_hook(
        lambda module, arguments, output: captured.append(output[0] if isinstance(output, tuple) else
                                                           output.last_hidden_state))
    try:
        model(**inputs, use_cache=False, logits_to_keep=1)
    finally:
        hook.remove()
    return captured[-1]


def unwrapped(model):
    """The Hugging Face model inside a DDP (or similar) wrapper."""
    return getattr(model, "module", model)


def chunking_supported(model) -> bool:
    """Whether the model's logits are its output layer over its decoder's last hidden states, probed once: a
    short batch scored both ways, in chunks and whole, must agree."""
    inner = unwrapped(model)
    known = _chunking_supported.get(inner)
    if known is None:
        known = _chunking_supported[inner] = _probe(model)
    return known


@torch.no_grad()
def _probe(model) -> bool:
    inner = unwrapped(model)
    head = getattr(inner, "get_output_embeddings", lambda: None)()
    if not isinstance(head, torch.nn.Linear) or not callable(getattr(inner, "get_decoder", None)):
        return False
    config = getattr(inner, "config", None)
    if any(getattr(config, field, None) not in (None, 1, 1.0) for field in LOGIT_TRANSFORMS):
        return False
    parameter = head.weight
    ids = (torch.arange(2 * PROBE_TOKENS, device=parameter.device) * 7 + 3) % head.weight.shape[0]
    inputs = {"input_ids": ids.view(2, PROBE_TOKENS), "attention_mask": None, "position_ids": None}
    was_training = inner.training
    inner.eval()
    try:  # in the weights' own dtype: under autocast two matmul shapes may round differently
        with torch.autocast(parameter.device.type, enabled=False):
            whole = full_token_logprobs(inner, inputs, 1.0)
            chunked = chunked_token_logprobs(inner, inputs, 1.0, PROBE_CHUNK)
    except torch.OutOfMemoryError:
        raise
    except (TypeError, ValueError, RuntimeError, AttributeError, IndexError):  # no logits_to_keep, other outputs
        return False
    finally:
        inner.train(was_training)
    return chunked.shape == whole.shape and bool(
        (chunked - whole).abs().max() <= PROBE_TOLERANCE.get(parameter.dtype, 2e-2))
