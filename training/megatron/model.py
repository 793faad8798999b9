"""Build a Megatron-core GPTModel from a Hugging Face Qwen2/Llama checkpoint, with tensor and pipeline parallelism.

The model lives on `torch.cuda.current_device()` (each torchrun rank sets its own). It uses Megatron's local
layer spec (plain torch modules; no Transformer Engine or apex needed) with fusions off.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from training.megatron.weights import (
    ModelShape, check_tensor_parallel, hf_to_megatron, padded_vocab_size, pipeline_stage, shard_tensor_parallel,
)

SUPPORTED_MODEL_TYPES = ("qwen2", "llama")


@dataclass(frozen=True)
class ParallelLayout:
    """This rank's place in the tensor x pipeline x data grid."""

    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    tensor_rank: int
    pipeline_rank: int
    data_rank: int

    @property
    def first_stage(self) -> bool:
        return self.pipeline_rank == 0

    @property
    def last_stage(self) -> bool:
        return self.pipeline_rank == self.pipeline_parallel_size - 1


def init_parallel(tensor_parallel_size: int, pipeline_parallel_size: int, seed: int) -> ParallelLayout:
    """Join (or create, for one process) the process group and split it into Megatron's parallel groups."""
    from megatron.core import parallel_state, tensor_parallel

    if not dist.is_initialized():  # one process without torchrun: a group of one
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    world = dist.get_world_size()
    if world % (tensor_parallel_size * pipeline_parallel_size):
        raise ValueError(f"the {world} processes cannot be split into tensor_parallel_size {tensor_parallel_size} x "
                         f"pipeline_parallel_size {pipeline_parallel_size} groups; launch a multiple of their product")
    if parallel_state.model_parallel_is_initialized():
        parallel_state.destroy_model_parallel()
    parallel_state.initialize_model_parallel(tensor_parallel_size, pipeline_parallel_size)
    tensor_parallel.model_parallel_cuda_manual_seed(seed)
    return current_layout()


def current_layout() -> ParallelLayout:
    from megatron.core import parallel_state as ps

    return ParallelLayout(
        tensor_parallel_size=ps.get_tensor_model_parallel_world_size(),
        pipeline_parallel_size=ps.get_pipeline_model_parallel_world_size(),
        data_parallel_size=ps.get_data_parallel_world_size(), tensor_rank=ps.get_tensor_model_parallel_rank(),
        pipeline_rank=ps.get_pipeline_model_parallel_rank(), data_rank=ps.get_data_parallel_rank())


def rope_theta(hf_config) -> float:
    """The rotary base; refuses rope scaling, which this mapping does not reproduce."""
    parameters = getattr(hf_config, "rope_parameters", None) or getattr(hf_config, "rope_scaling", None) or {}
    rope_type = parameters.get("rope_type", parameters.get("type", "default"))
    if rope_type != "default":
        raise ValueError(f"the megatron backend supports plain rotary embeddings only; this model uses {rope_type!r}")
    return float(parameters.get("rope_theta", getattr(hf_config, "rope_theta", 10000.0)))


def check_supported(hf_config) -> None:
    """Refuse architectures the weight mapping does not cover, naming the field."""
    if hf_config.model_type not in SUPPORTED_MODEL_TYPES:
        raise ValueError(f"the megatron backend supports {', '.join(SUPPORTED_MODEL_TYPES)} models; "
                         f"this checkpoint's model_type is {hf_config.model_type!r}")
    if getattr(hf_config, "mlp_bias", False):
        raise ValueError("the megatron backend does not support mlp_bias=True")
    if hf_config.model_type == "llama" and getattr(hf_config, "attention_bias", False):
        # Hugging Face Llama then biases o_proj too; Megatron's add_bias_linear would bias every linear layer
        raise ValueError("the megatron backend does not support llama with attention_bias=True (o_proj has a bias)")
    if getattr(hf_config, "use_sliding_window", False):
        raise ValueError("the megatron backend does not support use_sliding_window=True")


def transformer_config(hf_config, tensor_parallel_size: int, pipeline_parallel_size: int, dtype: torch.dtype):
    """Megatron's TransformerConfig for a Hugging Face Qwen2/Llama config."""
    from megatron.core.transformer import TransformerConfig

    check_supported(hf_config)
    shape = ModelShape.from_hf_config(hf_config)
    return TransformerConfig(
        num_layers=shape.layers, hidden_size=shape.hidden, num_attention_heads=shape.heads,
        num_query_groups=shape.kv_heads, kv_channels=shape.head_dim, ffn_hidden_size=shape.ffn,
        normalization="RMSNorm", layernorm_epsilon=hf_config.rms_norm_eps, gated_linear_unit=True,
        activation_func=torch.nn.functional.silu, add_bias_linear=False, add_qkv_bias=shape.qkv_bias,
        hidden_dropout=0.0, attention_dropout=0.0, attention_softmax_in_fp32=True,
        tensor_model_parallel_size=tensor_parallel_size, pipeline_model_parallel_size=pipeline_parallel_size,
        params_dtype=dtype, bf16=dtype == torch.bfloat16, pipeline_dtype=dtype,
        # Every weight is then overwritten from the checkpoint, but initialisation is also where Megatron marks
        # tensor-parallel weights (`tensor_model_parallel`); without the marks the optimizer's gradient norm
        # counts split weights of tensor rank 0 only (seen with TP=2: a wrong norm, so wrong clipping).
        perform_initialization=True,
        masked_softmax_fusion=False, bias_activation_fusion=False, bias_dropout_fusion=False,
        apply_rope_fusion=False, gradient_accumulation_fusion=False, persist_layer_norm=False,
    )


def build_gpt_model(hf_config, layout: ParallelLayout, dtype: torch.dtype = torch.float32):
    """This rank's (unloaded) GPTModel stage for the Hugging Face config."""
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec

    shape = ModelShape.from_hf_config(hf_config)
    check_tensor_parallel(shape, layout.tensor_parallel_size)
    if shape.layers % layout.pipeline_parallel_size:
        raise ValueError(f"pipeline_parallel_size {layout.pipeline_parallel_size} must divide the model's "
                         f"num_hidden_layers ({shape.layers})")
    config = transformer_config(hf_config, layout.tensor_parallel_size, layout.pipeline_parallel_size, dtype)
    model = GPTModel(
        config, get_gpt_layer_local_spec(normalization="RMSNorm"),
        vocab_size=padded_vocab_size(shape.vocab, layout.tensor_parallel_size),
        max_sequence_length=hf_config.max_position_embeddings, pre_process=layout.first_stage,
        post_process=layout.last_stage, parallel_output=True, share_embeddings_and_output_weights=shape.tied,
        position_embedding_type="rope", rotary_base=rope_theta(hf_config))
    return model.to(torch.cuda.current_device())  # the local spec's norms are created on the host


def stage_first_layer(model) -> int:
    """Global index of this stage's first decoder layer (Megatron numbers layers from 1)."""
    return model.decoder.layers[0].layer_number - 1


def load_hf_state_dict(model, hf_state: dict[str, torch.Tensor], hf_config,
                       layout: ParallelLayout) -> dict[str, torch.Tensor]:
    """Copy this rank's tensor/pipeline part of a whole Hugging Face state dict into the GPTModel, in place.

    Returns that part, Megatron-named, in the Hugging Face tensors' precision (float32 for a float32 copy even
    when the GPTModel holds bf16: the optimizer's main weights are set from it).
    """
    shape = ModelShape.from_hf_config(hf_config)
    whole = hf_to_megatron(hf_state, shape, padded_vocab_size(shape.vocab, layout.tensor_parallel_size))
    stage = pipeline_stage(whole, stage_first_layer(model), len(model.decoder.layers), layout.first_stage,
                           layout.last_stage, shape.tied)
    mine = shard_tensor_parallel(stage, layout.tensor_rank, layout.tensor_parallel_size)
    expected = {name for name in model.state_dict() if not name.endswith("_extra_state")}
    if set(mine) != expected:
        raise ValueError(f"weight mapping mismatch: missing {sorted(expected - set(mine))[:5]}, "
                         f"unexpected {sorted(set(mine) - expected)[:5]}")
    with torch.no_grad():
        parameters = dict(model.named_parameters())
        for name, tensor in mine.items():
            parameters[name].copy_(tensor)
    return mine


def causal_inputs(input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Position ids (B, T) and the causal mask (1, 1, T, T), True where attention is blocked.

    Batches are right-padded, so a causal mask alone gives real tokens exactly the attention they have
    under the padding-aware Hugging Face model (padding comes after them and is left out of the loss).
    """
    length = input_ids.shape[1]
    positions = torch.arange(length, device=input_ids.device).unsqueeze(0).expand_as(input_ids)
    mask = torch.triu(torch.ones(length, length, dtype=torch.bool, device=input_ids.device), diagonal=1)
    return positions, mask.view(1, 1, length, length)
