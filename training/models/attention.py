"""Attention for grouped-query models without copying the key/value heads per query group.

Transformers' SDPA path copies the keys and values once per query head group (`repeat_kv`) whenever an
attention mask is passed, which is every padded generate step, every packed training pass and every step of
the lean decoding loop: for the tiny preset (6 query heads, 2 key/value heads) that copy was a third of a
continuation call's time on the CPU, and on a GPU a decoding step of Qwen2-0.5B's shapes (14 query heads, 2
key/value heads) over 256 rows x 1,024 cache positions wrote and read 7 copies of its 3.2 GB cache.
A decoding step (one query per row) reads each key and value once: off the CPU, one fused SDPA call whose
queries are each key/value head's query group (scaled before the product, scores in float32, as stock SDPA);
on the CPU in float32, two grouped matmuls, faster there than torch's kernels. Otherwise torch's CPU kernels
take the groups as they are (`enable_gqa`); on other devices, where a masked grouped SDPA call falls back to
the slow math kernel, the stock SDPA path runs unchanged.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask

NAME = "sdpa_grouped"


def grouped_sdpa_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                         is_causal: bool | None = None, **kwargs) -> tuple[torch.Tensor, None]:
    """(batch, heads, q, dim) query, (batch, kv_heads, kv, dim) key and value -> (batch, q, heads, dim)."""
    grouped = getattr(module, "num_key_value_groups", 1) > 1 and kwargs.get("position_bias") is None \
        and kwargs.get("cache") is None
    on_cpu = query.device.type == "cpu"
    if grouped and query.shape[2] == 1 and not dropout:
        if not on_cpu:
            return _groups_as_queries(query, key, value, attention_mask, scaling), None
        if query.dtype == torch.float32:
            return _one_query_attention(query, key, value, attention_mask, scaling), None
    if not grouped or not on_cpu:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    output = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        is_causal=query.shape[2] > 1 and attention_mask is None and causal, enable_gqa=True,
    )
    return output.transpose(1, 2).contiguous(), None


def _groups_as_queries(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                       attention_mask: torch.Tensor | None, scaling: float | None) -> torch.Tensor:
    """A decoding step as one SDPA call over the key/value heads, each with its query group as the query positions
    (no causal mask: every group member attends to the same keys). (batch, heads, 1, dim) -> (batch, 1, heads, dim)."""
    grouped, mask = _by_key_value_head(query, key, attention_mask)
    output = torch.nn.functional.scaled_dot_product_attention(grouped, key, value, attn_mask=mask, scale=scaling)
    return output.reshape(query.shape[0], 1, query.shape[1], query.shape[3])


def _one_query_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         attention_mask: torch.Tensor | None, scaling: float | None) -> torch.Tensor:
    """A float32 decoding step on the CPU as two batched matmuls over each key/value head's query group (torch's
    CPU SDPA kernels took ~1.8x as long for this shape). (batch, heads, 1, dim) -> (batch, 1, heads, dim)."""
    grouped, mask = _by_key_value_head(query, key, attention_mask)
    scores = torch.matmul(grouped, key.transpose(-1, -2)) * (query.shape[3] ** -0.5 if scaling is None else scaling)
    if mask is not None:  # True or 0.0 where a key may be attended
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    weights = scores.softmax(dim=-1, dtype=torch.float32).to(value.dtype)
    output = torch.matmul(weights, value)  # (batch, kv_heads, group, dim)
    return output.reshape(query.shape[0], 1, query.shape[1], query.shape[3])


def _by_key_value_head(query: torch.Tensor, key: torch.Tensor, attention_mask: torch.Tensor | None):
    """(batch, heads, 1, dim) queries as (batch, kv_heads, group, dim), each key/value head's query group in its
    query positions, and the mask as (batch or 1, 1, 1, keys) for them all (None stays None)."""
    batch, heads, _, dim = query.shape
    kv_heads, length = key.shape[1], key.shape[2]
    mask = None if attention_mask is None else attention_mask.reshape(attention_mask.shape[0], 1, 1, length)
    return query.reshape(batch, kv_heads, heads // kv_heads, dim), mask


AttentionInterface.register(NAME, grouped_sdpa_forward)
AttentionMaskInterface.register(NAME, sdpa_mask)


def use_grouped_sdpa(model) -> None:
    """Switch a text model that runs stock SDPA to grouped SDPA (other implementations are left alone)."""
    if getattr(model.config, "_attn_implementation", None) == "sdpa":
        model.set_attn_implementation(NAME)
