"""Where and in what precision the torch rollout engine samples, and how many rows fit one generate call."""

from __future__ import annotations

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
KV_CACHE_SHARE = 0.5  # of the free accelerator memory, for one call's KV cache (activations take the rest)
MAX_BATCH_SEQUENCES = 1024
KEPT_THROUGH_TRAINING_SHARE = 0.125  # of the GPU's memory: a kept decoding cache up to this stays through updates


def sampling_device(model_device: torch.device, cuda_available: bool | None = None) -> torch.device:
    """The GPU when there is one (a trainer that keeps its Hugging Face copy on the CPU, as Megatron does,
    still samples there), else the model's own device."""
    available = torch.cuda.is_available() if cuda_available is None else cuda_available
    if model_device.type == "cpu" and available:
        return torch.device("cuda")  # the current device (torchrun ranks set theirs)
    return model_device


def sampling_dtype(rollout_dtype: str, device: torch.device, model_dtype: torch.dtype) -> torch.dtype:
    """rollout_dtype by name; "auto": bfloat16 on a GPU (float16 where bf16 is missing), the model's on a CPU."""
    if rollout_dtype != "auto":
        return DTYPES[rollout_dtype]
    if device.type != "cuda":
        return model_dtype
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def compiles_decoding(rollout_compile: str, device: torch.device, beside_training: bool = False) -> bool:
    """rollout_compile by name: "auto" compiles on a GPU (where CUDA graphs remove the launch cost of every
    decoding step) unless rollouts run beside training (overlap_rollouts: a graph captured in the rollout thread
    while the trainer launches kernels on the same device is not measured yet), "on" always, "off" never."""
    if rollout_compile == "auto":
        return device.type == "cuda" and not beside_training
    return rollout_compile == "on"


def decodes_lean(rollout_loop: str, compiled: bool) -> bool:
    """rollout_loop by name: "auto" takes the lean loop where decoding is compiled (on a GPU its step is one CUDA
    graph, measured faster than compiled generate), generate elsewhere (uncompiled on a CPU the two run at
    the same speed); "lean" and "generate" as named."""
    return rollout_loop == "lean" or (rollout_loop == "auto" and compiled)


def compiled_row_count(rows: int) -> int:
    """Rows a compiled call decodes for `rows` requested: the next size of the grid 1, 2, 3, 4, 6, 8, 12, 16, 24, ...
    (powers of two and one and a half times them). Each new row count of a compiled step compiles or records a CUDA
    graph, and torch keeps every recording and looks through them at each step; partial rollouts' rounds change
    their row count all the time, which the grid brings down to two shapes per doubling, for less than half as
    many rows again (on a GPU a small model's decoding step costs about the same for them)."""
    power = 1 << (max(1, rows) - 1).bit_length()  # the smallest power of two >= rows
    return power * 3 // 4 if power >= 4 and rows <= power * 3 // 4 else power


def compiled_row_count_within(limit: int) -> int:
    """The largest grid size (compiled_row_count) not above `limit`, so that a call padded to the grid still fits."""
    power = 1 << (max(1, limit).bit_length() - 1)
    return power * 3 // 2 if power >= 2 and power * 3 // 2 <= limit else power


def keeps_through_training(kept_bytes: int, device_bytes: int) -> bool:
    """Whether a compiled call's kept cache and rows (kept_bytes) stay allocated while the trainer updates, on a
    device of device_bytes (0: not a GPU). Their CUDA graph replays only on the addresses it was recorded with:
    new buffers after every update make torch record it again and keep every old recording, which it looks
    through at each step (and older torch versions stop using graphs for the step after 128 recordings). So
    buffers that take little of the GPU stay; larger ones leave for the trainer, and each iteration records anew."""
    return 0 < kept_bytes <= device_bytes * KEPT_THROUGH_TRAINING_SHARE


def kv_cache_bytes_per_token(model_config, dtype: torch.dtype) -> int:
    """Bytes of keys and values one token keeps in the cache, over all layers."""
    config = getattr(model_config, "text_config", None) or model_config
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    return 2 * config.num_hidden_layers * kv_heads * head_dim * dtype.itemsize


def batch_sequences_for_memory(model_config, tokens_per_row: int, free_bytes: int, dtype: torch.dtype) -> int:
    """Rows of `tokens_per_row` (prompt + new tokens) whose KV cache fits KV_CACHE_SHARE of `free_bytes`."""
    per_row = kv_cache_bytes_per_token(model_config, dtype) * max(1, tokens_per_row)
    return max(1, min(MAX_BATCH_SEQUENCES, int(free_bytes * KV_CACHE_SHARE) // per_row))
