"""Decoding one torch engine call in segments, with the rows that ended dropped between segments.

One Hugging Face `generate` call computes every row until its longest row ends: a row that stopped early
(end of sequence, its own token limit, a repeat stop) keeps costing a row of every later step. Here the call
runs as generate calls of at most SEGMENT_STEPS decoding steps each; between them, the rows that ended leave
the batch and their rows of the KV cache are dropped, and the others continue from their cache. A row's
tokens are those of one uninterrupted call: its random stream is indexed by its own step, and the stopping
criteria read its whole generated history.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import torch
from transformers import DynamicCache, GenerationConfig, LogitsProcessorList, StoppingCriteriaList
from transformers.cache_utils import DynamicLayer

from training.rollout.base import SamplingSettings
from training.rollout.token_sampler import RepeatStop, RowLimits, SeededTokenSampler

SEGMENT_STEPS = 16  # decoding steps between two drops of the rows that ended (8 to 32 measured alike)


@dataclass
class Decoded:
    """Per row: its new tokens up to the call's longest limit (padding after its end), the sampler's log-prob of
    each, and the tokens it had when a repeat stopped it (-1: never)."""

    tokens: list[list[int]]
    logprobs: list[list[float]]
    repeat_stops: list[int]


@dataclass(frozen=True)
class DecodeCall:
    """What a call decodes: left-padded prompts (rows, width) with their mask, each row's new-token limit and
    random stream (uniforms (rows, steps), None when greedy), and generate's other arguments."""

    input_ids: torch.Tensor
    attention: torch.Tensor
    row_limits: list[int]
    uniforms: torch.Tensor | None
    settings: SamplingSettings
    pad_id: int
    eos_id: int


@contextmanager
def only_our_sampling(model):
    """Hide the model's own generation config from `generate` for the call. generate fills every option a call
    leaves unset from it, even when given a config of its own, so a checkpoint's generation_config.json asking for a
    repetition penalty, banned n-grams or suppressed tokens (Qwen2.5 Instruct's repetition_penalty 1.05, say)
    would change the scores before our sampler draws: rollouts off the policy the trainer scores, and other than
    the lean loop's and vLLM's. A bare config leaves generate's own no-op defaults."""
    own = model.generation_config
    model.generation_config = GenerationConfig(bos_token_id=own.bos_token_id)
    try:
        yield
    finally:
        model.generation_config = own


def droppable(cache) -> bool:
    """Rows can leave a cache made of dynamic full-attention layers (None: generate makes one)."""
    return cache is None or (isinstance(cache, DynamicCache) and
                             all(type(layer) is DynamicLayer for layer in cache.layers))


@torch.no_grad()
def decode(model, call: DecodeCall, cache=None, segment_steps: int | None = SEGMENT_STEPS,
           extra_inputs: dict | None = None) -> Decoded:
    """Every row's tokens; segment_steps None (or a cache rows cannot leave) decodes in one generate call."""
    rows, width = call.input_ids.shape
    longest = max(call.row_limits)
    if segment_steps is None or not droppable(cache):
        segment_steps = longest
    tokens = torch.full((rows, longest), call.pad_id, dtype=torch.long, device=call.input_ids.device)
    logprobs = torch.zeros((rows, longest), dtype=torch.float32, device=call.input_ids.device)
    repeat_stops = torch.full((rows,), -1, dtype=torch.long)
    live = torch.arange(rows, device=call.input_ids.device)
    sequences, mask, done = call.input_ids, call.attention, 0
    while live.numel() and done < longest:
        limits = [call.row_limits[row] for row in live.tolist()]
        steps = min(segment_steps, max(limits) - done)
        sampler, repeat_stop, stops = _hooks(call, live, limits, width, done + steps)
        with only_our_sampling(model):
            output = model.generate(
                input_ids=sequences, attention_mask=mask, max_new_tokens=steps, do_sample=False, temperature=None,
                top_p=None, top_k=None, pad_token_id=call.pad_id, eos_token_id=call.eos_id, use_cache=True,
                logits_processor=LogitsProcessorList([sampler]), stopping_criteria=StoppingCriteriaList(stops),
                return_dict_in_generate=True, past_key_values=cache, **(extra_inputs or {}),
            )
        new = output.sequences[:, sequences.shape[1]:]
        made = new.shape[1]
        tokens[live, done:done + made] = new
        logprobs[live, done:done + made] = sampler.logprobs().float()
        ended = (new == call.eos_id).any(dim=1) | (torch.tensor(limits, device=new.device) <= done + made)
        if repeat_stop is not None:
            stopped = repeat_stop.stopped_at.to(new.device)
            repeat_stops[live.cpu()] = stopped.cpu()
            ended |= stopped >= 0
        done += made
        sequences, mask, cache = output.sequences, torch.cat([mask, mask.new_ones((len(live), made))], dim=1), \
            output.past_key_values
        if ended.any():
            keep = (~ended).nonzero().squeeze(1)
            live, sequences, mask = live[keep], sequences[keep], mask[keep]
            if live.numel():
                cache.batch_select_indices(keep)
    return Decoded(tokens.tolist(), logprobs.tolist(), repeat_stops.tolist())


def _hooks(call: DecodeCall, live: torch.Tensor, limits: list[int], width: int, segment_end: int):
    """The live rows' token sampler, repeat stop and stopping criteria for one segment."""
    settings = call.settings
    sampler = SeededTokenSampler(None if call.uniforms is None else call.uniforms[live], width,
                                 settings.temperature, settings.top_p)
    repeat_stop = None if settings.stop_repeats is None else \
        RepeatStop(settings.stop_repeats, width, len(limits), call.input_ids.device)
    row_limits = RowLimits(limits, width, call.input_ids.device) if min(limits) < segment_end else None
    return sampler, repeat_stop, [criterion for criterion in (repeat_stop, row_limits) if criterion is not None]
