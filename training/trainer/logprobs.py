"""Per-token log-probs of a Hugging Face causal LM, the quantity every trainer pass scores.

Full logits of a long-CoT batch do not fit anywhere: 64 rows of 8,192 tokens over Qwen2's 151,936-token
vocabulary are 318 GB in float32, before log_softmax and the backward pass copy them again. Where a model's
logits are its output layer applied to its decoder's last hidden states (checked once per model by a probe),
the log-probs are taken from those hidden states CHUNK_TOKENS positions at a time: a chunk's logits exist only
while its log-sum-exp is taken, and the backward pass recomputes them and turns them into their gradient in
place (ChunkLogprobs: softmax less the one-hot target), keeping only the hidden states and each position's
log-sum-exp in between. Other models (logit soft-capping or scaling, vision-language heads) score through their
full logits as before. Same values and gradients either way, to float32 rounding.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

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


def full_token_logprobs(model, inputs: dict, temperature: float) -> torch.Tensor:
    """Through the model's own logits of every position."""
    logits = scaled_logits(model(**inputs, use_cache=False).logits[:, :-1], temperature)
    return torch.gather(F.log_softmax(logits, dim=-1), 2, inputs["input_ids"][:, 1:].unsqueeze(-1)).squeeze(-1)


def chunked_token_logprobs(model, inputs: dict, temperature: float, chunk_tokens: int) -> torch.Tensor:
    """From the decoder's last hidden states, `chunk_tokens` predictions at a time (the model's own forward runs,
    keeping the logits of one position only)."""
    hidden = decoder_hidden_states(model, inputs)[:, :-1]
    targets = inputs["input_ids"][:, 1:]
    head = unwrapped(model).get_output_embeddings()
    flat_hidden, flat_targets = hidden.reshape(-1, hidden.shape[-1]), targets.reshape(-1)
    parts = [ChunkLogprobs.apply(flat_hidden[start:start + chunk_tokens], head.weight, head.bias,
                                 flat_targets[start:start + chunk_tokens], temperature)
             for start in range(0, flat_targets.shape[0], chunk_tokens)]
    return torch.cat(parts).view(targets.shape)


class ChunkLogprobs(torch.autograd.Function):
    """(n,) log-probs of `targets` under softmax((hidden @ weight.T + bias) / temperature), in float32, keeping
    no (n, vocabulary) tensor for the backward pass.

    The output layer runs in the dtype it would in the model (bfloat16 under autocast); the backward pass
    recomputes the logits in that dtype and, with g the incoming gradient, turns them in place into
    d/dlogits = g (onehot(target) - softmax) / temperature, then into the gradients of the hidden states, the
    weight and the bias (each in its own dtype)."""

    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor,
                temperature: float) -> torch.Tensor:
        logits = F.linear(hidden, weight, bias)
        ctx.compute_dtype = logits.dtype
        logits = scaled_logits(logits, temperature)
        log_normalizer = torch.logsumexp(logits, dim=-1)
        ctx.save_for_backward(hidden, weight, bias, targets, log_normalizer)
        ctx.temperature = temperature
        return logits.gather(1, targets.unsqueeze(1)).squeeze(1) - log_normalizer

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        hidden, weight, bias, targets, log_normalizer = ctx.saved_tensors
        dtype = ctx.compute_dtype
        hidden_c, weight_c = hidden.to(dtype), weight.to(dtype)
        logits = scaled_logits(F.linear(hidden_c, weight_c, None if bias is None else bias.to(dtype)),
                               ctx.temperature)
        grad = logits.sub_(log_normalizer.unsqueeze(1)).exp_().neg_()  # -softmax, in place
        grad.scatter_add_(1, targets.unsqueeze(1), torch.ones_like(grad[:, :1]))
        grad.mul_((grad_output / ctx.temperature).unsqueeze(1))
        grad = grad.to(dtype)
        grad_hidden = (grad @ weight_c).to(hidden.dtype) if ctx.needs_input_grad[0] else None
        grad_weight = (grad.T @ hidden_c).to(weight.dtype) if ctx.needs_input_grad[1] else None
        grad_bias = grad.sum(0).to(bias.dtype) if bias is not None and ctx.needs_input_grad[2] else None
        return grad_hidden, grad_weight, grad_bias, None, None


def scaled_logits(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Logits / temperature in float32 (float64 stays), a new tensor unless already so at temperature 1."""
    logits = logits if logits.dtype == torch.float64 else logits.float()
    return logits / temperature if temperature != 1.0 else logits


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
