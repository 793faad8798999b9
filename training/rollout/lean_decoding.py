"""Decoding one torch engine call in a loop of our own: one step function holds the forward pass and the sampler.

Hugging Face `generate` spends every step on work outside the model: its logits processors and stopping
criteria, growing the attention mask and position ids, bookkeeping of finished rows. Each of those is a few
kernel launches, which on a GPU cost more than a small model's arithmetic. Here the call decodes into a
static KV cache (prefilled by training.rollout.bucketed_prefill) with a step function of fixed shapes: the
forward pass of every row's last token, then the seeded inverse-CDF draw (token_sampler.choose_tokens), so
that `torch.compile` can take the whole step as one graph (on a GPU, with CUDA graphs, one launch).
The attention mask never changes during the call: every cache position past the prompts is open from the
start, and causality hides those not yet written.

Rows that ended (end of sequence, their own token limit, a repeat stop) are padded from then on. The loop
asks whether every row has ended only every `check_every` steps, so the host waits on the device that often.
Uncompiled, the rows that ended leave the batch every `segment_steps` steps (as in segmented decoding); a
compiled step keeps every row to the end, since each new row count would be a new graph.

Tokens and log-probs are those of segmented decoding over a static cache: the same draws from the same
per-row streams (tests/training/test_lean_decoding.py).
"""

from __future__ import annotations

import torch
from transformers import StaticCache
from transformers.cache_utils import StaticLayer

from training.rollout.repeats import repeating_rows
from training.rollout.segmented_decoding import SEGMENT_STEPS, DecodeCall, Decoded
from training.rollout.token_sampler import choose_tokens, processed_logprobs

CHECK_EVERY = 8  # steps between two looks at whether every row has ended


def lean_cache_supported(cache) -> bool:
    """A static cache of full-attention layers that count their own positions (transformers 5's StaticLayer):
    the step then needs no cache positions from the caller, and its shapes stay fixed."""
    return isinstance(cache, StaticCache) and bool(cache.layers) and all(
        type(layer) is StaticLayer and isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)
        for layer in cache.layers)


def sample_step(model, last_tokens: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor, cache,
                uniforms: torch.Tensor | None, temperature: float, top_p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """One decoding step: (rows, 1) last tokens at (rows, 1) positions -> (rows,) chosen tokens and their
    log-probs under the processed distribution (temperature, top-p); uniforms (rows,) float64, None = greedy."""
    logits = model(input_ids=last_tokens, attention_mask=mask, position_ids=positions, past_key_values=cache,
                   use_cache=True, logits_to_keep=1).logits[:, -1]
    logprobs = processed_logprobs(logits.float(), temperature, top_p)
    chosen = choose_tokens(logprobs, uniforms)
    return chosen.squeeze(1), logprobs.gather(1, chosen).squeeze(1)


def compiled_step(device: torch.device):
    """sample_step compiled: CUDA graphs on a GPU (reduce-overhead), inductor's code on a CPU."""
    mode = "reduce-overhead" if device.type == "cuda" else None
    return torch.compile(sample_step, mode=mode, dynamic=False)


@torch.no_grad()
def lean_decode(model, call: DecodeCall, cache: StaticCache, step=sample_step, check_every: int = CHECK_EVERY,
                segment_steps: int | None = SEGMENT_STEPS) -> Decoded:
    """Every row's tokens, decoded from `cache` (a static cache holding every prompt but its last token).

    step: sample_step or its compiled form (then give segment_steps None: the rows stay to the end).
    """
    rows, width = call.input_ids.shape
    device = call.input_ids.device
    longest = max(call.row_limits)
    settings = call.settings
    tokens = torch.full((rows, longest), call.pad_id, dtype=torch.long, device=device)
    logprobs = torch.zeros((rows, longest), dtype=torch.float32, device=device)
    repeat_stops = torch.full((rows,), -1, dtype=torch.long, device=device)
    live = torch.arange(rows, device=device)
    limits = torch.tensor(call.row_limits, device=device)
    mask = call.attention.new_ones((rows, cache.layers[0].max_cache_len))
    mask[:, :width] = call.attention  # positions past the prompts: open, hidden by causality until written
    positions = (call.attention.sum(dim=1, keepdim=True) - 1).clamp(min=0)  # as generate numbers left-padded rows
    last, ended = call.input_ids[:, -1:], torch.zeros(rows, dtype=torch.bool, device=device)
    graphs = step is not sample_step and device.type == "cuda"  # CUDA graphs: a new replay every step
    for done in range(longest):
        uniforms = None if call.uniforms is None else call.uniforms[live, done]
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        chosen, chosen_logprobs = step(model, last, positions + done, mask, cache, uniforms,
                                       settings.temperature, settings.top_p)
        chosen = chosen.masked_fill(ended, call.pad_id)
        tokens[live, done], logprobs[live, done] = chosen, chosen_logprobs.float()
        ended = ended | (chosen == call.eos_id) | (limits <= done + 1)
        if settings.stop_repeats is not None:
            found = repeating_rows(tokens[live, :done + 1], settings.stop_repeats) & ~ended
            repeat_stops[live[found]] = done + 1
            ended = ended | found
        last = chosen.unsqueeze(1)
        if (done + 1) % check_every == 0 or done + 1 == longest:
            if bool(ended.all()):
                break
        if segment_steps and (done + 1) % segment_steps == 0 and bool(ended.any()):
            keep = (~ended).nonzero().squeeze(1)
            if not len(keep):
                break
            live, last, positions, mask, ended, limits = (live[keep], last[keep], positions[keep], mask[keep],
                                                          ended[keep], limits[keep])
            _select_rows(cache, keep)
    return Decoded(tokens.tolist(), logprobs.tolist(), repeat_stops.tolist())


def _select_rows(cache: StaticCache, keep: torch.Tensor) -> None:
    """Keep only the `keep` rows of every layer's keys and values (an uncompiled step only: new shapes)."""
    for layer in cache.layers:
        layer.keys, layer.values = layer.keys.index_select(0, keep), layer.values.index_select(0, keep)
        layer.batch_size = len(keep)
