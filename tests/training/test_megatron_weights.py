"""The Hugging Face <-> Megatron weight mapping, as pure functions: exact round trips through shards and stages."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, Qwen2Config

from training.megatron.weights import (
    ModelShape, check_tensor_parallel, hf_to_megatron, interleave_qkv, join_pipeline_stages, megatron_to_hf,
    merge_tensor_parallel, padded_vocab_size, pipeline_stage, shard_tensor_parallel,
)

QWEN2 = Qwen2Config(vocab_size=37, hidden_size=24, intermediate_size=40, num_hidden_layers=4, num_attention_heads=6,
                    num_key_value_heads=2, tie_word_embeddings=False)
LLAMA = LlamaConfig(vocab_size=36, hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=4, tie_word_embeddings=True)


def random_state(config) -> dict[str, torch.Tensor]:
    """A Hugging Face state dict of random numbers for the config (Qwen2/Llama names and shapes)."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    return {name: torch.randn_like(tensor) for name, tensor in model.state_dict().items()}


@pytest.mark.parametrize("config", [QWEN2, LLAMA], ids=["qwen2", "llama-tied"])
def test_the_round_trip_through_megatron_layout_is_exact(config):
    hf = random_state(config)
    shape = ModelShape.from_hf_config(config)
    back = megatron_to_hf(hf_to_megatron(hf, shape, padded_vocab_size(shape.vocab, 4)), shape)
    if shape.tied:
        hf["lm_head.weight"] = hf["model.embed_tokens.weight"]
    assert back.keys() == hf.keys()
    for name, tensor in hf.items():
        assert torch.equal(back[name], tensor), name


def test_qkv_is_interleaved_per_query_group():
    shape = ModelShape.from_hf_config(QWEN2)  # 6 heads in 2 groups, head_dim 4
    q = torch.arange(6 * 4).float().repeat_interleave(1).view(24, 1) + 100
    k, v = torch.arange(2 * 4).float().view(8, 1) + 200, torch.arange(2 * 4).float().view(8, 1) + 300
    rows = interleave_qkv(q, k, v, shape).flatten().tolist()
    group0 = list(range(100, 112)) + list(range(200, 204)) + list(range(300, 304))
    group1 = list(range(112, 124)) + list(range(204, 208)) + list(range(304, 308))
    assert rows == [float(x) for x in group0 + group1]


def test_gate_and_up_stay_halves_in_every_tensor_parallel_shard():
    shape = ModelShape.from_hf_config(QWEN2)
    whole = hf_to_megatron(random_state(QWEN2), shape, padded_vocab_size(shape.vocab, 2))
    fc1 = whole["decoder.layers.0.mlp.linear_fc1.weight"]  # (2 * 40, 24): gate then up
    shard = shard_tensor_parallel(whole, 1, 2)["decoder.layers.0.mlp.linear_fc1.weight"]
    assert torch.equal(shard, torch.cat([fc1[20:40], fc1[60:80]]))


@pytest.mark.parametrize("tp_size", [1, 2])
def test_tensor_parallel_shards_merge_back_exactly(tp_size):
    shape = ModelShape.from_hf_config(QWEN2)
    whole = hf_to_megatron(random_state(QWEN2), shape, padded_vocab_size(shape.vocab, tp_size))
    shards = [shard_tensor_parallel(whole, rank, tp_size) for rank in range(tp_size)]
    assert shards[0]["embedding.word_embeddings.weight"].shape == (padded_vocab_size(37, tp_size) // tp_size, 24)
    assert shards[0]["decoder.layers.0.self_attention.linear_proj.weight"].shape == (24, 24 // tp_size)
    merged = merge_tensor_parallel(shards)
    assert all(torch.equal(merged[name], tensor) for name, tensor in whole.items())


@pytest.mark.parametrize("config", [QWEN2, LLAMA], ids=["qwen2", "llama-tied"])
def test_pipeline_stages_join_back_exactly(config):
    shape = ModelShape.from_hf_config(config)
    whole = hf_to_megatron(random_state(config), shape)
    half = shape.layers // 2
    first = pipeline_stage(whole, 0, half, True, False, shape.tied)
    last = pipeline_stage(whole, half, half, False, True, shape.tied)
    assert "embedding.word_embeddings.weight" in first and "decoder.final_layernorm.weight" not in first
    assert f"decoder.layers.{half - 1}.input_layernorm.weight" in last and "output_layer.weight" in last
    joined = join_pipeline_stages([(0, first), (half, last)], shape.tied)
    assert joined.keys() == whole.keys()
    assert all(torch.equal(joined[name], tensor) for name, tensor in whole.items())


def test_it_rejects_a_tensor_parallel_size_that_does_not_divide_the_key_value_heads():
    with pytest.raises(ValueError, match="num_key_value_heads"):
        check_tensor_parallel(ModelShape.from_hf_config(QWEN2), 3)  # 6 heads split by 3, but 2 groups not


def test_the_megatron_backend_and_its_trainer_are_registered():
    from training.backends import trainer_backends, trainer_classes
    from training.backends.megatron import run
    from training.megatron.trainer import MegatronTrainer

    assert trainer_backends.get("megatron") is run
    assert trainer_classes.get("megatron") is MegatronTrainer


def test_it_refuses_llama_with_attention_bias_naming_the_field():
    """Hugging Face Llama's attention_bias biases o_proj as well, which the mapping cannot carry: refused."""
    from transformers import LlamaConfig

    from training.megatron.model import check_supported

    check_supported(LLAMA)
    check_supported(QWEN2)  # Qwen2's q, k and v biases are mapped
    biased = LlamaConfig(**{**LLAMA.to_dict(), "attention_bias": True})
    with pytest.raises(ValueError, match="llama with attention_bias=True"):
        check_supported(biased)
