"""Prefill a left-padded batch in buckets of similar prompt length, then let `generate` decode it whole.

A generate call pads every prompt to the longest: continuing parked partial rollouts (contexts of
hundreds of tokens) beside fresh prompts of twenty made most of a prefill padding. Here each bucket
(rows within BUCKET_RATIO of its longest prompt) runs its own forward pass at its own width; the keys and
values land, left-padded, in one cache of the batch's width, and `generate` starts from it with only each
row's last prompt token left to process. Padded cache positions stay masked by the attention mask.

With `static_room` the cache is a StaticCache with that many positions left past the prompts: decoding
writes each step's keys and values in place instead of growing the cache by a copy of all of it, which
pays when the new tokens are few beside the prompt (continuing long parked responses for one budget).
"""

from __future__ import annotations

import torch
from transformers import DynamicCache, StaticCache
from transformers.cache_utils import Cache, DynamicLayer, StaticLayer

from training.length_buckets import length_buckets

BUCKET_RATIO = 0.75  # a row joins the current bucket while its prompt is at least this share of the longest


@torch.no_grad()
def bucketed_prefill(model, input_ids: torch.Tensor, attention: torch.Tensor, lengths: list[int],
                     static_room: int | None = None, reuse: StaticCache | None = None) -> Cache | None:
    """The cache of every row's prompt but its last token, (rows, width - 1) positions, prefilled by bucket.

    input_ids, attention: (rows, width) left-padded prompts; lengths: each row's prompt length; static_room:
    new tokens a static cache must hold past the prompts (None: a dynamic cache); reuse: a static cache of
    that shape to fill again instead of a new one (its tensors keep their addresses). None when the model's
    cache is not plain full attention, or when one bucket holds every row and no static cache is asked for:
    then generate's own prefill wastes nothing worth a second pass.
    """
    buckets = length_buckets(lengths, BUCKET_RATIO)
    if len(buckets) == 1 and static_room is None:
        return None
    rows, width = input_ids.shape
    if reuse is not None and static_room is not None:
        reuse.reset()
        cache = reuse
    else:
        cache = DynamicCache(config=model.config) if static_room is None else \
            StaticCache(config=model.config, max_cache_len=width + static_room)
    if not _plain_cache(model, cache):
        return None
    keys: list[torch.Tensor | None] = []
    values: list[torch.Tensor | None] = []
    decoder = model.get_decoder()  # keys and values only: no output head over every prompt position
    for bucket in buckets:
        bucket_width = lengths[bucket[0]]
        if bucket_width < 2:  # nothing before the last token
            continue
        index = torch.tensor(bucket, device=input_ids.device)
        columns = slice(width - bucket_width, width - 1)
        mask = attention[index, columns]
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)  # as generate numbers left-padded rows
        output = decoder(input_ids=input_ids[index, columns], attention_mask=mask, position_ids=positions,
                         use_cache=True)
        for number, layer in enumerate(output.past_key_values.layers):
            if number == len(keys):
                keys.append(_batch_wide(layer.keys, rows, width - 1))
                values.append(_batch_wide(layer.values, rows, width - 1))
            keys[number][index, :, columns] = layer.keys
            values[number][index, :, columns] = layer.values
        del output
    filled = {"cache_position": torch.arange(width - 1, device=input_ids.device)}  # read by older static caches
    for number in range(len(keys)):  # each staging tensor freed as its layer is filled: one copy at a time
        cache.update(keys[number], values[number], number, filled)
        keys[number] = values[number] = None
    return cache


def _batch_wide(bucket_tensor: torch.Tensor, rows: int, positions: int) -> torch.Tensor:
    """Zeros shaped (rows, heads, positions, head_dim) like a bucket's (bucket_rows, heads, width, head_dim) keys."""
    heads, head_dim = bucket_tensor.shape[1], bucket_tensor.shape[3]
    return bucket_tensor.new_zeros((rows, heads, positions, head_dim))


def _plain_cache(model, cache: Cache) -> bool:
    """Only full-attention layers of a dynamic or static cache the caller may fill: sliding-window or recurrent
    layers keep other shapes, and a model whose generation config names its own cache refuses a given one."""
    if getattr(model.generation_config, "cache_implementation", None):
        return False
    plain = StaticLayer if isinstance(cache, StaticCache) else DynamicLayer
    return bool(cache.layers) and all(type(layer) is plain for layer in cache.layers)
