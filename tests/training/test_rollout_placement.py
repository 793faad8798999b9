"""Where the torch engine samples: the GPU beside a CPU-held trainer copy, the sampling dtype, rows per call."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from training.rollout.base import RolloutRequest, SamplingSettings
from training.rollout.placement import (
    batch_sequences_for_memory, compiled_row_count, compiled_row_count_within, kv_cache_bytes_per_token,
    sampling_device, sampling_dtype,
)


def test_a_cpu_held_model_samples_on_the_gpu_when_there_is_one():
    assert sampling_device(torch.device("cpu"), cuda_available=True).type == "cuda"
    assert sampling_device(torch.device("cpu"), cuda_available=False) == torch.device("cpu")
    assert sampling_device(torch.device("cuda", 1), cuda_available=True) == torch.device("cuda", 1)


def test_auto_keeps_the_model_dtype_on_a_cpu_and_a_named_dtype_wins():
    cpu = torch.device("cpu")
    assert sampling_dtype("auto", cpu, torch.float32) == torch.float32
    assert sampling_dtype("bfloat16", cpu, torch.float32) == torch.bfloat16
    assert sampling_dtype("float16", cpu, torch.float32) == torch.float16


def test_rows_per_call_follow_the_kv_cache_of_the_free_memory():
    # Qwen2-0.5B: 24 layers, 2 key-value heads of 64 dims: 2 * 24 * 2 * 64 * 2 bytes = 12 KiB a token in bf16
    config = SimpleNamespace(num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, hidden_size=896)
    assert kv_cache_bytes_per_token(config, torch.bfloat16) == 12288
    # 40 GB free, half of it for the cache, 1024 tokens a row: 20e9 / (12288 * 1024) = 1589 -> capped at 1024
    assert batch_sequences_for_memory(config, 1024, 40 * 10**9, torch.bfloat16) == 1024
    assert batch_sequences_for_memory(config, 4096, 10 * 10**9, torch.bfloat16) == 5 * 10**9 // (12288 * 4096)
    assert batch_sequences_for_memory(config, 10**6, 10**6, torch.bfloat16) == 1  # never below one row


def test_compiled_calls_pad_their_rows_to_two_sizes_per_doubling():
    assert [compiled_row_count(rows) for rows in range(1, 18)] == [1, 2, 3, 4, 6, 6, 8, 8, 12, 12, 12, 12, 16, 16,
                                                                   16, 16, 24]
    # a partial-rollout run's round sizes: 1..1024 rows come down to 20 shapes, none padded by half or more
    sizes = {compiled_row_count(rows) for rows in range(1, 1025)}
    assert len(sizes) == 20 and all(rows <= compiled_row_count(rows) < 1.5 * rows for rows in range(3, 1025))
    # the largest size within a memory budget: padding a call up to it never passes the budget
    assert [compiled_row_count_within(limit) for limit in (1, 2, 5, 7, 100, 1000, 1024)] == [1, 2, 4, 6, 96, 768,
                                                                                            1024]
    assert all(compiled_row_count(compiled_row_count_within(limit)) <= limit for limit in range(1, 2000))


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from training.models.loading import load_model, load_tokenizer

    return load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir))


def test_an_engine_in_another_dtype_samples_from_its_own_copy_and_follows_weight_updates(tiny):
    from training.prompting import prompt_ids
    from training.rollout.torch_engine import TorchRolloutEngine

    model, tokenizer = tiny
    engine = TorchRolloutEngine(model, tokenizer, dtype=torch.bfloat16)
    assert engine.owns_copy and next(engine.model.parameters()).dtype == torch.bfloat16
    assert not TorchRolloutEngine(model, tokenizer).owns_copy  # same device and dtype: the trainer's object
    request = [RolloutRequest(prompt_ids("2+2", tokenizer), n=2)]
    settings = SamplingSettings(12, temperature=1.0, seed=3)
    before = engine.generate(request, settings)
    changed = type(model)(model.config)
    changed.load_state_dict(model.state_dict())
    with torch.no_grad():
        changed.lm_head.weight.mul_(-3.0)
    engine.update_weights(changed)
    expected = changed.lm_head.weight.to(torch.bfloat16)
    assert torch.equal(engine.model.lm_head.weight, expected)
    assert engine.generate(request, settings) != before  # samples from the updated weights
    assert next(model.parameters()).dtype == torch.float32  # the trainer's model is untouched


def test_a_bfloat16_copy_keeps_the_rotary_frequencies_in_float32_through_weight_updates(tiny):
    """Only the parameters are rounded: the rotary inverse frequencies (a buffer outside the state dict, which no
    weight update restores) stay the trainer's float32 ones, so positions thousands of tokens in rotate alike."""
    from training.rollout.torch_engine import TorchRolloutEngine

    model, tokenizer = tiny
    engine = TorchRolloutEngine(model, tokenizer, dtype=torch.bfloat16)
    engine.update_weights(model)
    ours, trainers = engine.model.model.rotary_emb, model.model.rotary_emb
    assert ours.inv_freq.dtype == torch.float32 and torch.equal(ours.inv_freq, trainers.inv_freq)
    assert {parameter.dtype for parameter in engine.model.parameters()} == {torch.bfloat16}
    positions = torch.tensor([[3000]])
    probe = torch.zeros(1, 1, model.config.hidden_size)
    assert torch.allclose(ours(probe, positions)[0].float(), trainers(probe, positions)[0].float(), atol=1e-2)


def test_the_torch_engine_refuses_a_request_beyond_the_context_window_instead_of_running_past_it(tiny):
    from training.rollout.torch_engine import TorchRolloutEngine

    model, tokenizer = tiny
    window = model.config.max_position_embeddings
    engine = TorchRolloutEngine(model, tokenizer)
    with pytest.raises(ValueError, match=rf"request 1: a prompt of {window - 8} tokens plus 16 new tokens exceeds "
                                         rf"the model's context window of {window}"):
        engine.generate([RolloutRequest((5, 6, 7)), RolloutRequest((5,) * (window - 8))], SamplingSettings(16))


def test_the_torch_engine_reads_a_rope_scaled_window_as_the_launch_check_does(tiny):
    """A linear rope scaling of factor 2 doubles the window (as vLLM and the launch check read it): a request
    between the two fits."""
    import copy

    from training.rollout.torch_engine import TorchRolloutEngine

    model, tokenizer = tiny
    window = model.config.max_position_embeddings
    scaled = copy.deepcopy(model)
    scaled.config.rope_parameters = {**(scaled.config.rope_parameters or {}), "rope_type": "linear", "factor": 2.0}
    engine = TorchRolloutEngine(scaled, tokenizer)
    engine._check_context([RolloutRequest((5,) * window)], [16])  # 2048 + 16 tokens: inside 4096
    with pytest.raises(ValueError, match=rf"the model's context window of {2 * window}"):
        engine._check_context([RolloutRequest((5,) * (2 * window))], [16])
