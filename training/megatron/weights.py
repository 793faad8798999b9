"""Hugging Face <-> Megatron-core weight mapping for Qwen2 and Llama decoders: pure functions over state dicts.

Megatron layout (the local layer spec) per decoder layer:
- `linear_qkv`: per query group g, the group's query heads, then its key head, then its value head, stacked
  on the output dimension: (groups * (heads_per_group + 2) * head_dim, hidden). Hugging Face keeps q, k, v apart.
- `linear_fc1`: gate then up, stacked: (2 * ffn, hidden); Megatron's SwiGLU is silu(first half) * second half.
- norms, `linear_proj` (o_proj) and `linear_fc2` (down_proj) map one to one.
Tensor parallelism splits column-parallel weights (qkv, fc1, embeddings, output layer) on dim 0, per half for
fc1, and row-parallel ones (proj, fc2) on dim 1; pipeline stages hold a contiguous run of layers, numbered
from 0 in each stage. The vocabulary rows (embeddings, output layer) are padded with zeros to a multiple of the
tensor-parallel size; log-probs leave the padded entries out of the softmax (training/megatron/logprobs.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

LAYER = re.compile(r"^(?:model|decoder)\.layers\.(\d+)\.(.+)$")
# Megatron name inside a layer -> Hugging Face name inside a layer (the one-to-one part).
DIRECT_LAYER_NAMES = {
    "input_layernorm.weight": "input_layernorm.weight",
    "self_attention.linear_proj.weight": "self_attn.o_proj.weight",
    "pre_mlp_layernorm.weight": "post_attention_layernorm.weight",
    "mlp.linear_fc2.weight": "mlp.down_proj.weight",
}
ROW_PARALLEL = ("self_attention.linear_proj.weight", "mlp.linear_fc2.weight")
COLUMN_PARALLEL = ("self_attention.linear_qkv.weight", "self_attention.linear_qkv.bias")
GATED = "mlp.linear_fc1.weight"
VOCAB_PARALLEL = ("embedding.word_embeddings.weight", "output_layer.weight")


@dataclass(frozen=True)
class ModelShape:
    """The sizes the mapping needs, read from a Hugging Face Qwen2/Llama config."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    qkv_bias: bool
    tied: bool

    @classmethod
    def from_hf_config(cls, config) -> "ModelShape":
        heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        qkv_bias = config.model_type == "qwen2" or bool(getattr(config, "attention_bias", False))
        return cls(layers=config.num_hidden_layers, hidden=config.hidden_size, heads=heads,
                   kv_heads=getattr(config, "num_key_value_heads", None) or heads, head_dim=head_dim,
                   ffn=config.intermediate_size, vocab=config.vocab_size, qkv_bias=qkv_bias,
                   tied=bool(getattr(config, "tie_word_embeddings", False)))

    @property
    def heads_per_group(self) -> int:
        return self.heads // self.kv_heads


def interleave_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, shape: ModelShape) -> torch.Tensor:
    """q (heads*d, ...), k and v (kv_heads*d, ...) -> linear_qkv (kv_heads*(heads_per_group+2)*d, ...)."""
    rest = q.shape[1:]
    groups, d = shape.kv_heads, shape.head_dim
    stacked = torch.cat([q.reshape(groups, shape.heads_per_group * d, *rest), k.reshape(groups, d, *rest),
                         v.reshape(groups, d, *rest)], dim=1)
    return stacked.reshape(-1, *rest)


def split_qkv(qkv: torch.Tensor, shape: ModelShape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The inverse of `interleave_qkv`: linear_qkv -> (q, k, v) in Hugging Face layout."""
    rest = qkv.shape[1:]
    groups, d = shape.kv_heads, shape.head_dim
    per_group = qkv.reshape(groups, (shape.heads_per_group + 2) * d, *rest)
    q, k, v = torch.split(per_group, [shape.heads_per_group * d, d, d], dim=1)
    return q.reshape(-1, *rest), k.reshape(-1, *rest), v.reshape(-1, *rest)


def padded_vocab_size(vocab: int, tp_size: int) -> int:
    """The vocabulary rounded up to a multiple of the tensor-parallel size (each rank holds an equal slice)."""
    return -(-vocab // tp_size) * tp_size


def pad_rows(tensor: torch.Tensor, rows: int) -> torch.Tensor:
    """(V, H) -> (rows, H), the extra rows zero."""
    if tensor.shape[0] == rows:
        return tensor
    return torch.cat([tensor, tensor.new_zeros(rows - tensor.shape[0], *tensor.shape[1:])])


def hf_to_megatron(hf: dict[str, torch.Tensor], shape: ModelShape, padded_vocab: int | None = None
                   ) -> dict[str, torch.Tensor]:
    """A whole Hugging Face state dict -> the whole (unsharded, one-stage) Megatron state dict.

    `padded_vocab` (default: the model's vocabulary) pads the embedding and output-layer rows with zeros.
    """
    rows = padded_vocab or shape.vocab
    out = {"embedding.word_embeddings.weight": pad_rows(hf["model.embed_tokens.weight"], rows),
           "decoder.final_layernorm.weight": hf["model.norm.weight"]}
    if not shape.tied:
        out["output_layer.weight"] = pad_rows(hf["lm_head.weight"], rows)
    for layer in range(shape.layers):
        source, target = f"model.layers.{layer}.", f"decoder.layers.{layer}."
        for megatron_name, hf_name in DIRECT_LAYER_NAMES.items():
            out[target + megatron_name] = hf[source + hf_name]
        attention = source + "self_attn."
        out[target + "self_attention.linear_qkv.weight"] = interleave_qkv(
            hf[attention + "q_proj.weight"], hf[attention + "k_proj.weight"], hf[attention + "v_proj.weight"], shape)
        if shape.qkv_bias:
            out[target + "self_attention.linear_qkv.bias"] = interleave_qkv(
                hf[attention + "q_proj.bias"], hf[attention + "k_proj.bias"], hf[attention + "v_proj.bias"], shape)
        out[target + GATED] = torch.cat([hf[source + "mlp.gate_proj.weight"], hf[source + "mlp.up_proj.weight"]])
    return out


def megatron_to_hf(megatron: dict[str, torch.Tensor], shape: ModelShape) -> dict[str, torch.Tensor]:
    """The whole Megatron state dict -> the whole Hugging Face state dict (lm_head = embeddings when tied).

    Vocabulary padding rows are dropped.
    """
    embeddings = megatron["embedding.word_embeddings.weight"][:shape.vocab]
    out = {"model.embed_tokens.weight": embeddings, "model.norm.weight": megatron["decoder.final_layernorm.weight"],
           "lm_head.weight": embeddings if shape.tied else megatron["output_layer.weight"][:shape.vocab]}
    for layer in range(shape.layers):
        source, target = f"decoder.layers.{layer}.", f"model.layers.{layer}."
        for megatron_name, hf_name in DIRECT_LAYER_NAMES.items():
            out[target + hf_name] = megatron[source + megatron_name]
        names = ("q_proj", "k_proj", "v_proj")
        for name, part in zip(names, split_qkv(megatron[source + "self_attention.linear_qkv.weight"], shape)):
            out[target + f"self_attn.{name}.weight"] = part
        if shape.qkv_bias:
            for name, part in zip(names, split_qkv(megatron[source + "self_attention.linear_qkv.bias"], shape)):
                out[target + f"self_attn.{name}.bias"] = part
        gate, up = megatron[source + GATED].chunk(2, dim=0)
        out[target + "mlp.gate_proj.weight"], out[target + "mlp.up_proj.weight"] = gate, up
    return out


def _suffix(name: str) -> str:
    """The name inside a layer ('decoder.layers.3.mlp.linear_fc1.weight' -> 'mlp.linear_fc1.weight')."""
    match = LAYER.match(name)
    return match.group(2) if match else name


def check_tensor_parallel(shape: ModelShape, tp_size: int) -> None:
    """Refuse a tensor-parallel size the model's heads, groups or ffn cannot be split by."""
    for what, count in (("num_attention_heads", shape.heads), ("num_key_value_heads", shape.kv_heads),
                        ("intermediate_size", shape.ffn)):
        if count % tp_size:
            raise ValueError(f"tensor_parallel_size {tp_size} must divide the model's {what} ({count})")


def shard_tensor_parallel(megatron: dict[str, torch.Tensor], tp_rank: int, tp_size: int) -> dict[str, torch.Tensor]:
    """This tensor-parallel rank's part of a Megatron state dict (a stage's or the whole model's)."""
    out = {}
    for name, tensor in megatron.items():
        suffix = _suffix(name)
        if suffix in COLUMN_PARALLEL or suffix in VOCAB_PARALLEL:
            out[name] = tensor.chunk(tp_size, dim=0)[tp_rank]
        elif suffix in ROW_PARALLEL:
            out[name] = tensor.chunk(tp_size, dim=1)[tp_rank]
        elif suffix == GATED:
            gate, up = tensor.chunk(2, dim=0)
            out[name] = torch.cat([gate.chunk(tp_size, dim=0)[tp_rank], up.chunk(tp_size, dim=0)[tp_rank]])
        else:
            out[name] = tensor
    return {name: tensor.contiguous() for name, tensor in out.items()}


def merge_tensor_parallel(shards: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The inverse of `shard_tensor_parallel`: every tensor-parallel rank's part, in rank order -> the whole."""
    out = {}
    for name, first in shards[0].items():
        parts = [shard[name] for shard in shards]
        suffix = _suffix(name)
        if suffix in COLUMN_PARALLEL or suffix in VOCAB_PARALLEL:
            out[name] = torch.cat(parts, dim=0)
        elif suffix in ROW_PARALLEL:
            out[name] = torch.cat(parts, dim=1)
        elif suffix == GATED:
            halves = [part.chunk(2, dim=0) for part in parts]
            out[name] = torch.cat([half[0] for half in halves] + [half[1] for half in halves])
        else:
            out[name] = first
    return out


def pipeline_stage(megatron: dict[str, torch.Tensor], first_layer: int, layer_count: int, first_stage: bool,
                   last_stage: bool, tied: bool) -> dict[str, torch.Tensor]:
    """A stage's part of the whole Megatron state dict, its layers renumbered from 0.

    The first stage holds the embeddings, the last the final norm and output layer (a copy of the
    embeddings when they are tied and the stage is not also the first).
    """
    out = {}
    for name, tensor in megatron.items():
        match = LAYER.match(name)
        if match:
            layer = int(match.group(1))
            if first_layer <= layer < first_layer + layer_count:
                out[f"decoder.layers.{layer - first_layer}.{match.group(2)}"] = tensor
        elif name.startswith("embedding.") and first_stage:
            out[name] = tensor
        elif (name.startswith("output_layer.") or name.startswith("decoder.final_layernorm.")) and last_stage:
            out[name] = tensor
    if tied and last_stage and not first_stage:
        out["output_layer.weight"] = megatron["embedding.word_embeddings.weight"]
    return out


def join_pipeline_stages(stages: list[tuple[int, dict[str, torch.Tensor]]], tied: bool) -> dict[str, torch.Tensor]:
    """(first layer, stage state dict) of every stage -> the whole Megatron state dict, layers renumbered globally."""
    out = {}
    for first_layer, stage in stages:
        for name, tensor in stage.items():
            match = LAYER.match(name)
            if match:
                out[f"decoder.layers.{int(match.group(1)) + first_layer}.{match.group(2)}"] = tensor
            elif not (tied and name == "output_layer.weight"):
                out[name] = tensor
    return out
