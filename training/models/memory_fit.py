"""Whether a model can be trained here, checked from its safetensors headers before any weight is read.

Without it a model larger than the machine dies deep inside the allocator (or the kernel's OOM killer ends the
worker with no message at all). The estimate is a lower bound: only what the trainer must hold for certain
(float32 weights and gradients, AdamW's two moments) is counted, never activations, so the check refuses only
runs that cannot fit. A folder whose weights it cannot read (no safetensors, a damaged header) is not estimated:
the loader reports what is wrong with it.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path

GIB = 1024**3
# float32 weights + float32 gradients + AdamW's exp_avg and exp_avg_sq (float32): what the torch trainer holds
TORCH_TRAINER_BYTES_PER_PARAMETER = 16
HOST_COPY_BYTES_PER_PARAMETER = 4  # the float32 Hugging Face copy a process loads first (megatron keeps it)
MAX_HEADER_BYTES = 100 * 1024**2  # safetensors' own limit on a header
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
CGROUP_V2 = Path("/sys/fs/cgroup")  # memory.max, memory.current, memory.stat
CGROUP_V1 = Path("/sys/fs/cgroup/memory")  # memory.limit_in_bytes, memory.usage_in_bytes, memory.stat


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
    """Parameters of the folder's weights, read from their safetensors headers only (a few KB each): the files
    its index names when it has one (a repository may also ship a `consolidated.safetensors` beside the
    Hugging Face shards, which transformers does not load), else `model.safetensors`, else every safetensors
    file. None when there is none, or a header cannot be read (nothing to estimate from)."""
    folder = Path(folder)
    try:
        files = weight_files(folder)
        return sum(_header_parameters(path) for path in files) if files else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, struct.error):
        return None


def weight_files(folder: Path) -> list[Path]:
    index = folder / INDEX_FILE
    if index.is_file():
        return [folder / name for name in sorted(set(json.loads(index.read_text())["weight_map"].values()))]
    if (folder / SINGLE_FILE).is_file():
        return [folder / SINGLE_FILE]
    return sorted(folder.glob("*.safetensors"))


def _header_parameters(path: Path) -> int:
    """A safetensors file starts with the header's length (8 bytes, little-endian) and a JSON header of every
    tensor's dtype, shape and offsets; ValueError for a length no real header has."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        if length > min(MAX_HEADER_BYTES, path.stat().st_size - 8):
            raise ValueError(f"{path}: header length {length} exceeds the file or safetensors' limit")
        header = json.loads(handle.read(length))
    return sum(math.prod(entry["shape"]) for name, entry in header.items() if name != "__metadata__")


def available_host_bytes() -> int | None:
    """Memory this process can still take: the kernel's MemAvailable, lowered by a cgroup (container) limit;
    None where neither can be read."""
    candidates = [value for value in (_meminfo_available(), _cgroup_available()) if value is not None]
    return min(candidates) if candidates else None


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available() -> int | None:
    """The container's limit less what it uses, the page cache the kernel can reclaim (inactive files: model
    shards just read, checkpoints just written) not counted as used; cgroup v2, else v1; None without a limit."""
    for root, limit_name, usage_name, inactive_name in (
            (CGROUP_V2, "memory.max", "memory.current", "inactive_file"),
            (CGROUP_V1, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")):
        try:
            limit = (root / limit_name).read_text().strip()
            usage = int((root / usage_name).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit == "max" or int(limit) >= 2**60:  # v1 writes a huge number for "no limit"
            return None
        return int(limit) - max(0, usage - _stat_value(root / "memory.stat", inactive_name))
    return None


def _stat_value(path: Path, name: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def free_gpu_bytes() -> int | None:
    """Free memory of the current GPU, counting what this process's PyTorch keeps cached but unused as free (an
    earlier job of the same worker leaves its freed blocks there); None without a GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    free, _total = torch.cuda.mem_get_info()
    return free + torch.cuda.memory_reserved() - torch.cuda.memory_allocated()


def training_needs(parameters: int, trainer_backend: str, trains_on_gpu: bool, local_processes: int,
                   host_bytes: int | None, gpu_free_bytes: int | None) -> list[MemoryNeed]:
    """The memory needs that can be checked for a run of `parameters` parameters. On a CPU the torch trainer
    holds weights, gradients and AdamW moments in host memory, in each of the `local_processes` at once. On a
    GPU it holds them on its GPU, and the host holds the float32 copy loaded first (one process's: each moves its
    copy off the host). Megatron's shards depend on its parallel layout and are left to it: only its float32
    host copy is checked."""
    needs = []
    host_need, holds = parameters * HOST_COPY_BYTES_PER_PARAMETER, "a float32 copy of the weights"
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
    least need exceeds it; nothing when there are no safetensors headers to read (a hub id, .bin weights)."""
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
        if not need.fits:  # the need rounded up and the memory down: never "needs 14.9 and 14.9 is available"
            raise ModelTooLarge(
                f"model {model_path} has {parameters / 1e9:.2f}B parameters; {doing} needs at least "
                f"{math.ceil(need.needed_bytes / GIB * 10) / 10:.1f} GiB of {need.where} ({need.holds}), and "
                f"{math.floor(need.available_bytes / GIB * 10) / 10:.1f} GiB is available: choose a smaller "
                f"model{advice}")


def local_process_count() -> int:
    """Processes of this run on this machine (torchrun sets LOCAL_WORLD_SIZE)."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1
