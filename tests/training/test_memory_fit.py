"""A model larger than memory is refused at run start with its size and the memory there is, from the weights'
safetensors headers, before any weight loads (not an allocator traceback, or a worker the OOM killer ends)."""

from __future__ import annotations

import json
import shutil
import struct

import pytest

from common.knobs import parse_config
from training import session as session_module
from training.config import RLConfig
from training.models import memory_fit
from training.models.memory_fit import (
    GIB, ModelTooLarge, check_inference_fits, check_training_fits, stored_parameter_count,
)
from training.types import PromptRecord, TrainingHooks


def write_header_only(path, shapes: dict[str, list[int]], dtype: str = "BF16") -> None:
    """A safetensors file's header naming tensors of these shapes (the data is never read by the check)."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes.items():
        size = 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text)


def test_parameters_are_counted_from_every_shard_header(tmp_path, tiny_model_dir):
    write_header_only(tmp_path / "model-00001-of-00002.safetensors", {"a": [1000, 3000], "b": [7]})
    write_header_only(tmp_path / "model-00002-of-00002.safetensors", {"c": [2, 3, 4]})
    assert stored_parameter_count(tmp_path) == 3_000_000 + 7 + 24

    from training.models.loading import load_model

    real = sum(parameter.numel() for parameter in load_model(str(tiny_model_dir)).parameters())
    assert stored_parameter_count(tiny_model_dir) == real


def test_only_the_files_the_index_names_are_counted(tmp_path):
    write_header_only(tmp_path / "model-00001-of-00002.safetensors", {"a": [1000]})
    write_header_only(tmp_path / "model-00002-of-00002.safetensors", {"b": [500]})
    write_header_only(tmp_path / "consolidated.safetensors", {"a": [1000], "b": [500]})  # Mistral repos ship both
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    assert stored_parameter_count(tmp_path) == 1500
    (tmp_path / "model.safetensors.index.json").unlink()
    write_header_only(tmp_path / "model.safetensors", {"a": [1000], "b": [7]})
    assert stored_parameter_count(tmp_path) == 1007  # transformers loads model.safetensors alone


@pytest.mark.parametrize("content", [
    b"\x01\x02",  # truncated before the length
    struct.pack("<Q", 2**62) + b"{}",  # a length no file holds
    struct.pack("<Q", 2) + b"[]",  # a list, not a header
    struct.pack("<Q", 11) + b'{"w": 3.14}',  # an entry that is no tensor
    struct.pack("<Q", 14) + b'{"w": {"x":1}}',  # no shape
])
def test_a_damaged_header_is_not_estimated_and_left_to_the_loader(tmp_path, content):
    (tmp_path / "model.safetensors").write_bytes(content)
    assert stored_parameter_count(tmp_path) is None
    check_training_fits(str(tmp_path), "torch", trains_on_gpu=False, host_bytes=1)


def test_a_folder_without_safetensors_is_not_estimated(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    assert stored_parameter_count(tmp_path) is None
    check_training_fits(str(tmp_path), "torch", trains_on_gpu=False, host_bytes=1)  # nothing to estimate: no refusal


def test_the_torch_trainer_on_a_cpu_needs_sixteen_bytes_a_parameter_per_process(tmp_path):
    write_header_only(tmp_path / "model.safetensors", {"w": [1_000_000_000]})  # 1B parameters
    check_training_fits(str(tmp_path), "torch", trains_on_gpu=False, host_bytes=16 * 10**9)
    with pytest.raises(ModelTooLarge) as raised:
        check_training_fits(str(tmp_path), "torch", trains_on_gpu=False, host_bytes=16 * 10**9 - 1)
    assert str(raised.value) == (
        f"model {tmp_path} has 1.00B parameters; training it with the torch trainer needs at least 15.0 GiB of host "
        "memory (float32 weights and gradients and AdamW's two moments, 16 bytes a parameter, per process), and "
        "14.9 GiB is available: choose a smaller model, or trainer_backend megatron to split it over GPUs")
    with pytest.raises(ModelTooLarge, match="29.9 GiB of host memory"):  # two torchrun ranks on this host
        check_training_fits(str(tmp_path), "torch", trains_on_gpu=False, local_processes=2, host_bytes=20 * GIB)


def test_on_a_gpu_the_trainer_is_checked_against_the_gpu_and_the_host_holds_the_loading_copy(tmp_path):
    write_header_only(tmp_path / "model.safetensors", {"w": [1_000_000_000]})
    check_training_fits(str(tmp_path), "torch", trains_on_gpu=True, gpu_free_bytes=16 * GIB, host_bytes=4 * GIB)
    with pytest.raises(ModelTooLarge, match=r"needs at least 15.0 GiB of GPU memory .* and 8.0 GiB is available"):
        check_training_fits(str(tmp_path), "torch", trains_on_gpu=True, gpu_free_bytes=8 * GIB, host_bytes=64 * GIB)
    with pytest.raises(ModelTooLarge, match=r"3.8 GiB of host memory \(a float32 copy of the weights\)"):
        check_training_fits(str(tmp_path), "torch", trains_on_gpu=True, gpu_free_bytes=80 * GIB, host_bytes=GIB)
    # ranks on GPUs each move their host copy to their GPU: one copy is what is certain, not one per rank
    check_training_fits(str(tmp_path), "torch", trains_on_gpu=True, local_processes=8, gpu_free_bytes=80 * GIB,
                        host_bytes=4 * GIB)


def test_megatron_is_checked_for_its_host_copy_only(tmp_path):
    write_header_only(tmp_path / "model.safetensors", {"w": [1_000_000_000]})
    check_training_fits(str(tmp_path), "megatron", trains_on_gpu=True, gpu_free_bytes=1, host_bytes=4 * GIB)
    with pytest.raises(ModelTooLarge, match="megatron trainer needs at least 3.8 GiB of host memory"):
        check_training_fits(str(tmp_path), "megatron", trains_on_gpu=True, gpu_free_bytes=1, host_bytes=GIB)


def test_a_cgroup_limit_lowers_the_available_memory(tmp_path, monkeypatch):
    limit, usage, stat = tmp_path / "memory.max", tmp_path / "memory.current", tmp_path / "memory.stat"
    limit.write_text(f"{8 * GIB}\n")
    usage.write_text(f"{3 * GIB}\n")
    monkeypatch.setattr(memory_fit, "CGROUP_V2", tmp_path)
    monkeypatch.setattr(memory_fit, "CGROUP_V1", tmp_path / "v1")
    meminfo = memory_fit._meminfo_available()  # read once: the machine's MemAvailable moves between two reads
    monkeypatch.setattr(memory_fit, "_meminfo_available", lambda: meminfo)
    assert memory_fit.available_host_bytes() <= 5 * GIB
    usage.write_text(f"{8 * GIB - 1024}\n")
    assert memory_fit.available_host_bytes() == 1024
    # page cache the kernel can reclaim (shards just read, checkpoints just written) is not counted as used
    stat.write_text(f"anon 1024\nfile {6 * GIB}\nactive_file {GIB}\ninactive_file {5 * GIB}\n")
    assert memory_fit.available_host_bytes() == min(5 * GIB + 1024, memory_fit._meminfo_available())
    limit.write_text("max\n")  # no limit: the kernel's MemAvailable
    assert memory_fit.available_host_bytes() == memory_fit._meminfo_available()


def test_a_cgroup_v1_limit_is_read_too(tmp_path, monkeypatch):
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "memory.limit_in_bytes").write_text(f"{4 * GIB}\n")
    (v1 / "memory.usage_in_bytes").write_text(f"{3 * GIB}\n")
    (v1 / "memory.stat").write_text(f"cache 100\ntotal_inactive_file {GIB}\n")
    monkeypatch.setattr(memory_fit, "CGROUP_V2", tmp_path / "no-v2")
    monkeypatch.setattr(memory_fit, "CGROUP_V1", v1)
    assert memory_fit._cgroup_available() == 2 * GIB
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    assert memory_fit._cgroup_available() is None


def test_start_session_refuses_a_model_larger_than_memory_before_loading_it(tmp_path, run_paths, monkeypatch):
    huge = tmp_path / "huge"
    shutil.copytree(run_paths.models_dir / "tiny", huge)
    for weights in huge.glob("*.safetensors"):
        weights.unlink()
    write_header_only(huge / "model.safetensors", {"w": [10**12]})  # a trillion parameters: 16 TB to train

    def never(*args, **kwargs):
        raise AssertionError("loaded the weights before checking that they fit")

    monkeypatch.setattr(session_module, "load_model", never)
    config = parse_config(RLConfig, {"trainer_backend": "torch", "model": str(huge), "warmup_sft_steps": 0})
    records = [PromptRecord(prompt_id="p-1", problem="What is 2+3?", answer="5")]
    with pytest.raises(ModelTooLarge, match=r"has 1000.00B parameters; training it with the torch trainer needs"):
        session_module.start_session(config, records, run_paths, TrainingHooks())


def test_generation_needs_the_weights_in_their_loaded_dtype(tmp_path):
    write_header_only(tmp_path / "model.safetensors", {"w": [1_000_000_000]})
    check_inference_fits(str(tmp_path), on_gpu=False, host_bytes=4 * 10**9)
    with pytest.raises(ModelTooLarge) as raised:
        check_inference_fits(str(tmp_path), on_gpu=False, host_bytes=4 * 10**9 - 1)
    assert str(raised.value) == (
        f"model {tmp_path} has 1.00B parameters; generating with it needs at least 3.8 GiB of host memory (its "
        "weights in float32, 4 bytes a parameter), and 3.7 GiB is available: choose a smaller model")
    check_inference_fits(str(tmp_path), on_gpu=True, gpu_free_bytes=2 * GIB, host_bytes=2 * GIB)
    with pytest.raises(ModelTooLarge, match=r"1.9 GiB of GPU memory \(its weights in bfloat16"):
        check_inference_fits(str(tmp_path), on_gpu=True, gpu_free_bytes=GIB, host_bytes=64 * GIB)


def test_an_evaluation_model_larger_than_memory_is_refused_before_loading(tmp_path, tiny_model_dir):
    from training.generation import ModelGenerator

    huge = tmp_path / "huge"
    shutil.copytree(tiny_model_dir, huge)
    for weights in huge.glob("*.safetensors"):
        weights.unlink()
    write_header_only(huge / "model.safetensors", {"w": [10**12]})
    with pytest.raises(ModelTooLarge, match="has 1000.00B parameters; generating with it needs at least"):
        ModelGenerator(str(huge))


def test_memory_this_process_keeps_cached_counts_as_free_on_the_gpu(monkeypatch):
    """A GPU worker runs its jobs one after another in one process: what the last job freed sits in PyTorch's
    cache, which the driver counts as used (faked here: this machine has no GPU)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (10 * GIB, 80 * GIB))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda: 50 * GIB)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: 2 * GIB)
    assert memory_fit.free_gpu_bytes() == 58 * GIB
