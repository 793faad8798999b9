"""Grouped SDPA on the CPU computes what the stock SDPA path computes, with masks (padding, packing) or without."""

from __future__ import annotations

import copy

import pytest
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


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-6), (torch.bfloat16, 3e-2)])
def test_the_groups_as_queries_give_stock_sdpa_s_decoding_step(dtype, tolerance):
    """The off-CPU decoding path (each key/value head's query group as its queries, one SDPA call) against the
    stock path in float32, with a padding mask; masked keys get no weight."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from training.models.attention import _groups_as_queries

    generator = torch.Generator().manual_seed(2)
    query, key, value = (torch.randn(shape, generator=generator) for shape in ((4, 6, 1, 16), (4, 2, 20, 16),
                                                                                (4, 2, 20, 16)))
    mask = torch.ones(4, 1, 1, 20, dtype=torch.bool)
    mask[1, ..., :7] = False
    module = torch.nn.Module()
    module.num_key_value_groups, module.is_causal = 3, True
    expected, _ = sdpa_attention_forward(module, query, key, value, mask)
    got = _groups_as_queries(query.to(dtype), key.to(dtype), value.to(dtype), mask, None)
    assert got.dtype == dtype and got.shape == expected.shape == (4, 1, 6, 16)
    assert torch.allclose(got.float(), expected, atol=tolerance), (got.float() - expected).abs().max()
    value[1, :, :7] = 1e4  # masked positions: no weight, so no change
    assert torch.equal(_groups_as_queries(query.to(dtype), key.to(dtype), value.to(dtype), mask, None), got)


def test_float16_scores_too_large_for_float16_before_scaling_stay_finite():
    """q.k of 82,000 overflows float16 unless scaled first (the two-matmul form gave NaN); a GPU without bfloat16
    samples in float16."""
    from training.models.attention import _groups_as_queries

    query = torch.full((1, 2, 1, 64), 40.0)
    key = torch.full((1, 1, 8, 64), 32.0)
    value = torch.randn(1, 1, 8, 64)
    output = _groups_as_queries(query.half(), key.half(), value.half(), None, 0.125)
    assert torch.isfinite(output).all()
    assert torch.allclose(output.float(), value.half().float().mean(dim=2).expand(1, 2, 64).unsqueeze(1), atol=1e-2)


def test_off_the_cpu_a_decoding_step_takes_the_grouped_path_in_any_dtype(monkeypatch):
    """Stock SDPA with a mask copies the key/value heads per group on a GPU; a decoding step there never calls it
    (shape-only meta tensors stand in for the device). Several queries per row still do."""
    import training.models.attention as attention

    calls = []
    monkeypatch.setattr(attention, "sdpa_attention_forward", lambda *args, **kwargs: calls.append(1) or (None, None))
    module = torch.nn.Module()
    module.num_key_value_groups = 7
    key = torch.empty(2, 2, 64, 8, dtype=torch.bfloat16, device="meta")
    mask = torch.empty(2, 1, 1, 64, dtype=torch.bool, device="meta")
    output, _ = attention.grouped_sdpa_forward(module, torch.empty(2, 14, 1, 8, dtype=torch.bfloat16, device="meta"),
                                               key, key, mask)
    assert output.shape == (2, 1, 14, 8) and output.dtype == torch.bfloat16 and not calls
    attention.grouped_sdpa_forward(module, torch.empty(2, 14, 5, 8, dtype=torch.bfloat16, device="meta"), key, key,
                                   torch.empty(2, 1, 5, 64, dtype=torch.bool, device="meta"))
    assert calls == [1]
