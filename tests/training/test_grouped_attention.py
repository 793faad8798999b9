"""Grouped SDPA on the CPU computes what the stock SDPA path computes, with masks (padding, packing) or without."""

from __future__ import annotations

import copy

import torch

from training.models.attention import NAME
from training.models.loading import load_model


def test_loaded_text_models_use_grouped_sdpa_and_match_the_stock_path(tiny_model_dir):
    grouped = load_model(str(tiny_model_dir)).eval()
    assert grouped.config._attn_implementation == NAME
    assert grouped.config.num_key_value_heads < grouped.config.num_attention_heads  # the case it is for
    stock = copy.deepcopy(grouped)
    stock.set_attn_implementation("sdpa")
    ids = torch.randint(3, 300, (3, 12), generator=torch.Generator().manual_seed(0))
    attention = torch.ones_like(ids)
    attention[1, :5] = 0  # a left-padded row
    positions = torch.tensor([list(range(7)) + list(range(5))] * 3)  # two packed sequences per row
    with torch.no_grad():
        for inputs in ({"attention_mask": attention}, {"position_ids": positions}, {}):
            expected = stock(input_ids=ids, use_cache=False, **inputs).logits
            got = grouped(input_ids=ids, use_cache=False, **inputs).logits
            assert torch.allclose(got, expected, atol=1e-5), (inputs.keys(), (got - expected).abs().max())


def test_a_decoding_step_over_a_padded_cache_matches_the_stock_path(tiny_model_dir):
    """One query per row (the float32 decoding path, two grouped matmuls) against stock SDPA with repeat_kv."""
    grouped = load_model(str(tiny_model_dir)).eval()
    stock = copy.deepcopy(grouped)
    stock.set_attn_implementation("sdpa")
    ids = torch.randint(3, 300, (3, 9), generator=torch.Generator().manual_seed(1))
    attention = torch.ones(3, 10, dtype=torch.long)
    attention[0, :4] = 0  # left padding, masked at every step
    with torch.no_grad():
        logits = []
        for model in (stock, grouped):
            prefill = model(input_ids=ids, attention_mask=attention[:, :9], use_cache=True)
            step = model(input_ids=ids[:, -1:], attention_mask=attention, past_key_values=prefill.past_key_values,
                         use_cache=True)
            logits.append(step.logits)
    assert torch.allclose(logits[1], logits[0], atol=1e-5), (logits[1] - logits[0]).abs().max()
