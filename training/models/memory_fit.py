"""Whether a model can be trained here, checked from its safetensors headers before any weight is read.

Without it a model larger than the machine dies deep inside the allocator (or the kernel's OOM killer ends the
worker with no message at all). The estimate is a lower bound: only what the trainer must hold for certain
(float32 weights and gradients, AdamW's two moments) is counted, never activations, so the check refuses only
runs that cannot fit.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

GIB = 1024**3
# float32 weights + float32 gradients + AdamW's exp_avg and exp_avg_sq (float32): what the torch trainer holds
TORCH_TRAINER_BYTES_PER_PARAMETER = 16
HOST_COPY_BYTES_PER_PARAMETER = 4  # the float32 Hugging Face copy every process loads first (megatron keeps it)
CGROUP_FILES = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory.current"))


class ModelTooLarge(ValueError):
    """The model cannot be held for training in the memory this machine (or GPU) has."""


@dataclass(frozen=True)
class MemoryNeed:
    where: str  # "host memory" or "GPU memory"
    needed_bytes: int
    available_bytes: int
    holds: str  # what the needed bytes hold, in words

    @property
    def fits(self) -> bool:
        return self.needed_bytes <= self.available_bytes


def stored_parameter_count(folder: Path) -> int | None:
    """Parameters in the folder's safetensors files, read from their headers only (a few KB each); None when
    the folder keeps no safetensors weights (nothing to estimate from)."""
    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        return None
    return sum(_header_parameters(path) for path in files)


def _header_parameters(path: Path) -> int:
    """A safetensors file starts with the header's length (8 bytes, little-endian) and a JSON header of every
    tensor's dtype, shape and offsets."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    count = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        numel = 1
        for size in entry["shape"]:
            numel *= size
        count += numel
    return count


def available_host_bytes() -> int | None:
    """Memory this process can still take: the kernel's MemAvailable, lowered by a cgroup (container) limit;
    None where neither can be read."""
    candidates = []
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                candidates.append(int(line.split()[1]) * 1024)
    limit_file, usage_file = CGROUP_FILES
    try:
        limit = limit_file.read_text().strip()
        if limit != "max":
            candidates.append(int(limit) - int(usage_file.read_text().strip()))
    except (OSError, ValueError):
        pass
    return min(candidates) if candidates else None


def training_needs(parameters: int, trainer_backend: str, trains_on_gpu: bool, local_processes: int,
                   host_bytes: int | None, gpu_free_bytes: int | None) -> list[MemoryNeed]:
    """The memory needs that can be checked for a run of `parameters` parameters: every local process first
    loads a float32 copy on the host; the torch trainer then holds weights, gradients and AdamW moments on its
    device (the host, `local_processes` times, on a CPU; its GPU otherwise). Megatron's shards depend on its
    parallel layout and are left to it."""
    needs = []
    host_need = parameters * HOST_COPY_BYTES_PER_PARAMETER * local_processes
    holds = "a float32 copy of the weights per process"
    if trainer_backend == "torch" and not trains_on_gpu:
        host_need = parameters * TORCH_TRAINER_BYTES_PER_PARAMETER * local_processes
        holds = "float32 weights and gradients and AdamW's two moments, 16 bytes a parameter, per process"
    if host_bytes is not None:
        needs.append(MemoryNeed("host memory", host_need, host_bytes, holds))
    if trainer_backend == "torch" and trains_on_gpu and gpu_free_bytes is not None:
        needs.append(MemoryNeed("GPU memory", parameters * TORCH_TRAINER_BYTES_PER_PARAMETER, gpu_free_bytes,
                                "float32 weights and gradients and AdamW's two moments, 16 bytes a parameter"))
    return needs


def check_training_fits(model_path: str, trainer_backend: str, trains_on_gpu: bool, local_processes: int = 1,
                        gpu_free_bytes: int | None = None, host_bytes: int | None = None) -> None:
    """ModelTooLarge naming the model, its size, what must be held and the memory there is, when the trainer's
    least need exceeds it; nothing when the folder has no safetensors headers to read (a hub id, .bin weights)."""
    parameters = _folder_parameters(model_path)
    if parameters:
        host = available_host_bytes() if host_bytes is None else host_bytes
        advice = ", or trainer_backend megatron to split it over GPUs" if trainer_backend == "torch" else ""
        _refuse_short(model_path, parameters, f"training it with the {trainer_backend} trainer", advice,
                      training_needs(parameters, trainer_backend, trains_on_gpu, local_processes, host,
                                     gpu_free_bytes))


def check_inference_fits(model_path: str, on_gpu: bool, gpu_free_bytes: int | None = None,
                         host_bytes: int | None = None) -> None:
    """The same for generation alone (an evaluation, a judge): the weights in the dtype they are loaded in,
    float32 on a CPU, bfloat16 on a GPU (loaded on the host first, then moved)."""
    parameters = _folder_parameters(model_path)
    if not parameters:
        return
    host = available_host_bytes() if host_bytes is None else host_bytes
    width, dtype = (2, "bfloat16") if on_gpu else (4, "float32")
    holds = f"its weights in {dtype}, {width} bytes a parameter"
    needs = [MemoryNeed("host memory", parameters * width, host, holds)] if host is not None else []
    if on_gpu and gpu_free_bytes is not None:
        needs.append(MemoryNeed("GPU memory", parameters * width, gpu_free_bytes, holds))
    _refuse_short(model_path, parameters, "generating with it", "", needs)


def _folder_parameters(model_path: str) -> int | None:
    folder = Path(model_path)
    return stored_parameter_count(folder) if folder.is_dir() else None


def _refuse_short(model_path: str, parameters: int, doing: str, advice: str, needs: list[MemoryNeed]) -> None:
    for need in needs:
        if not need.fits:
            raise ModelTooLarge(
                f"model {model_path} has {parameters / 1e9:.2f}B parameters; {doing} needs at least "
                f"{need.needed_bytes / GIB:.1f} GiB of {need.where} ({need.holds}), and "
                f"{need.available_bytes / GIB:.1f} GiB is available: choose a smaller model{advice}")


def local_process_count() -> int:
    """Processes of this run on this machine (torchrun sets LOCAL_WORLD_SIZE)."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1
