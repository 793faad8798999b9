"""The torch engine prefills prompts of very different lengths apart, and samples exactly what one prefill would."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, StaticCache

from training.models.loading import load_model, load_tokenizer
from training.rollout.base import RolloutRequest, SamplingSettings
from training.length_buckets import length_buckets
from training.rollout.bucketed_prefill import BUCKET_RATIO, bucketed_prefill
from training.rollout import torch_engine
from training.rollout.torch_engine import TorchRolloutEngine

PROMPT_LENGTHS = [120, 100, 95, 40, 33, 12, 12, 5, 1]


def test_length_buckets_start_a_bucket_below_three_quarters_of_its_longest():
    assert length_buckets([120, 100, 95, 40, 33, 12, 12, 5, 1], BUCKET_RATIO) == [[0, 1, 2], [3, 4], [5, 6], [7], [8]]
    assert length_buckets([10, 9, 8], BUCKET_RATIO) == [[0, 1, 2]]


@pytest.fixture
def engine(tiny_model_dir):
    return TorchRolloutEngine(load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir)))


def requests(lengths: list[int]) -> list[RolloutRequest]:
    generator = torch.Generator().manual_seed(0)
    return [RolloutRequest(tuple(torch.randint(3, 300, (length,), generator=generator).tolist()), n=2,
                           sample_seeds=(2 * index, 2 * index + 1)) for index, length in enumerate(lengths)]


@pytest.mark.parametrize("static_cache", [False, True])
def test_bucketed_prefill_samples_the_tokens_and_log_probs_of_one_prefill(engine, static_cache, monkeypatch):
    """24 new tokens beside prompts of up to 120: the CPU engine decodes into a static cache unless told not to."""
    settings = SamplingSettings(max_new_tokens=24, temperature=1.0)
    batch = requests(PROMPT_LENGTHS)
    processed = []  # token positions each decoder call computes
    engine.model.get_decoder().register_forward_pre_hook(
        lambda module, args, kwargs: processed.append(kwargs["input_ids"].numel()), with_kwargs=True)
    caches = []
    monkeypatch.setattr(torch_engine, "bucketed_prefill",
                        lambda *args, **kwargs: caches.append(bucketed_prefill(*args, **kwargs)) or caches[-1])
    monkeypatch.setattr(engine, "segment_steps", None)  # rows stay to the end: the positions below count them
    engine.bucket_prefill = False
    whole = engine.generate(batch, settings)
    whole_positions = sum(processed)
    processed.clear()
    engine.bucket_prefill, engine.static_cache = True, static_cache
    bucketed = engine.generate(batch, settings)
    assert [type(cache) for cache in caches] == [StaticCache if static_cache else DynamicCache]
    rows, width = 2 * len(PROMPT_LENGTHS), max(PROMPT_LENGTHS)
    assert whole_positions == rows * width + rows * 23  # one padded prefill, then one token a row a step
    # buckets [120, 100, 95], [40, 33], [12, 12], [5] (two rows a prompt) prefill all but their last token at
    # their own widths; the 1-token prompt needs none; generate resumes from the cache, one token a row a step
    assert sum(processed) == 6 * 119 + 4 * 39 + 4 * 11 + 2 * 4 + rows * 24
    for one_pass, by_bucket in zip(whole, bucketed):
        for expected, got in zip(one_pass, by_bucket):
            assert got.token_ids == expected.token_ids
            assert got.finish_reason == expected.finish_reason
            assert max(abs(a - b) for a, b in zip(got.logprobs, expected.logprobs)) < 1e-4


def test_a_cache_of_the_batch_width_holds_each_bucket_left_padded(engine):
    ids = torch.zeros((3, 10), dtype=torch.long)
    attention = torch.zeros_like(ids)
    for row, length in enumerate((10, 4, 9)):
        ids[row, 10 - length:] = torch.arange(3, 3 + length)
        attention[row, 10 - length:] = 1
    cache = bucketed_prefill(engine.model, ids, attention, [10, 4, 9])
    keys = cache.layers[0].keys
    assert keys.shape[0] == 3 and keys.shape[2] == 9  # every prompt token but the last
    assert (keys[1, :, :6] == 0).all() and (keys[1, :, 6:] != 0).any()  # row 1: 3 tokens cached, 6 left as padding
    assert bucketed_prefill(engine.model, ids[[0, 2]], attention[[0, 2]], [10, 9]) is None  # one bucket: no pass
    static = bucketed_prefill(engine.model, ids, attention, [10, 4, 9], static_room=5)
    assert isinstance(static, StaticCache) and static.layers[0].keys.shape[2] == 15  # the prompts' width + 5
    assert torch.equal(static.layers[0].keys[:, :, :9], keys) and (static.layers[0].keys[:, :, 9:] == 0).all()
    assert int(static.get_seq_length()) == 9  # generate resumes at the last prompt token
    static.layers[0].keys[:, :, 9:] = 1.0  # what a decoded call left behind
    address = static.layers[0].keys.data_ptr()
    again = bucketed_prefill(engine.model, ids, attention, [10, 4, 9], static_room=5, reuse=static)
    assert again is static and static.layers[0].keys.data_ptr() == address  # filled in place
    assert torch.equal(static.layers[0].keys[:, :, :9], keys) and (static.layers[0].keys[:, :, 9:] == 0).all()
    assert int(static.get_seq_length()) == 9
    assert isinstance(bucketed_prefill(engine.model, ids[[0, 2]], attention[[0, 2]], [10, 9], static_room=5),
                      StaticCache)  # a static cache is prefilled even for one bucket
    engine.model.generation_config.cache_implementation = "static"  # a model that names its own cache
    assert bucketed_prefill(engine.model, ids, attention, [10, 4, 9]) is None
