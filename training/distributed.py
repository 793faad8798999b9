"""Data-parallel training over several processes (torchrun + DistributedDataParallel).

Usage
-----
One machine, N GPUs (one process per GPU; CPU-only machines work too, over gloo):

    torchrun --nproc_per_node N -m training.cli config.yaml

torchrun sets the variables this module reads: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
MASTER_PORT. Without torchrun (WORLD_SIZE unset or 1) everything below is a no-op and the run is
the ordinary single-process one. Starting the processes yourself works too: set those five
variables in each (MASTER_ADDR=127.0.0.1 and a free MASTER_PORT on one machine).

Several machines: run the same command on every node with a shared rendezvous, for example

    torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d \
        --rdzv_endpoint HOST:29500 --rdzv_id RUN_ID -m training.cli config.yaml

(or the static form: --nnodes 2 --node_rank 0|1 --master_addr HOST --master_port 29500).
`output_dir` and `--models-dir` must then lie on storage every node sees: rank 0 writes the
checkpoints and every rank reads the one it resumes from (ranks that see different checkpoints
stop with an error). The backend is NCCL when CUDA is available, gloo otherwise.

How the loop shares the work (training/loop.py)
-----------------------------------------------
- Problems: every rank holds the same sampler and the same seeded numpy generator, draws the
  whole iteration's batch and keeps its own contiguous slice (no broadcast needed). The sampler
  is then updated on every rank with every rank's results (all-gathered, in rank order), so the
  samplers never diverge and the main rank's sampler state is the run's.
- Each rank aims at `batch_size / world_size` groups (the first `batch_size % world_size` ranks
  take one more), counting the partial rollouts it continues from its own replay buffer.
- Rollout seeds differ per rank: (seed * 1_000_003 + iteration) * world_size + rank.
- Gradients: each rank's loss is scaled by world_size / (groups on all ranks), so DDP's average
  over ranks is the gradient of the mean over all groups, whatever the ranks' group counts (a rank
  with no finished group joins with a zero gradient). It equals the single-process gradient on
  the concatenated batch whenever each micro-batch's loss is a plain mean over its groups (every
  group has a response in the loss; for ReST, a reward > 0), as single-process micro-batching does.
- Metrics reported to the hooks cover the whole batch (gathered or all-reduced); hooks fire on the
  main rank only, and `should_stop` is asked there and broadcast so all ranks stop together.
- Checkpoints: the main rank writes them; the replay buffers of all ranks are gathered into it
  (in rank order, with each rank's count). A resume with the same world size gives every rank its
  own groups back; with another world size the groups are re-split evenly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistributedContext:
    rank: int
    world_size: int
    local_rank: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0


SINGLE_PROCESS = DistributedContext(rank=0, world_size=1, local_rank=0)


def _env_int(name: str, default: int) -> int:
    """An integer environment variable set by torchrun; a malformed one stops with its name."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be a whole number; got {raw!r}") from None


def is_active() -> bool:
    """Whether a process group of more than one process is running."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def init_from_environment() -> DistributedContext:
    """Join the process group torchrun describes (WORLD_SIZE > 1); a no-op in one process or when joined."""
    world_size = _env_int("WORLD_SIZE", 1)
    if world_size > 1 and not (dist.is_available() and dist.is_initialized()):
        if not dist.is_available():
            raise RuntimeError("WORLD_SIZE > 1 but this torch build has no torch.distributed support")
        backend = "gloo"
        if torch.cuda.is_available():
            torch.cuda.set_device(_env_int("LOCAL_RANK", 0))
            backend = "nccl"
        dist.init_process_group(backend=backend)  # env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    return current_context()


def current_context() -> DistributedContext:
    """This process's rank and the world size (rank 0 of 1 outside a process group)."""
    if not is_active():
        return SINGLE_PROCESS
    return DistributedContext(rank=dist.get_rank(), world_size=dist.get_world_size(),
                              local_rank=_env_int("LOCAL_RANK", 0))


def _device() -> torch.device:
    """Where collectives stage their tensors: the current GPU under NCCL, else the CPU."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_reduce_sum(values: dict[str, float]) -> dict[str, float]:
    """Each value summed over all ranks (float64); every rank gets the sums."""
    if not is_active() or not values:
        return dict(values)
    names = sorted(values)
    tensor = torch.tensor([float(values[name]) for name in names], dtype=torch.float64, device=_device())
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return dict(zip(names, tensor.tolist()))


def all_reduce_mean(values: dict[str, float]) -> dict[str, float]:
    """Each value averaged over all ranks (unweighted); every rank gets the means."""
    world_size = current_context().world_size
    return {name: total / world_size for name, total in all_reduce_sum(values).items()}


def all_gather_objects(value: Any) -> list[Any]:
    """Every rank's (picklable) value, in rank order; [value] in one process."""
    if not is_active():
        return [value]
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, value)
    return gathered


def broadcast_from_main(value: Any) -> Any:
    """The main rank's (picklable) value, on every rank; the others' values are ignored."""
    if not is_active():
        return value
    holder = [value]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


def broadcast_module(module: torch.nn.Module) -> None:
    """Copy the main rank's parameters and buffers into every rank's module, in place."""
    if not is_active():
        return
    device = _device()
    with torch.no_grad():
        for tensor in module.state_dict().values():  # detached views sharing the parameters' storage
            if tensor.device == device:
                dist.broadcast(tensor, src=0)
            else:  # e.g. the megatron backend's host copy of the model under NCCL, which sends GPU tensors only
                staged = tensor.to(device)
                dist.broadcast(staged, src=0)
                tensor.copy_(staged)


def barrier() -> None:
    """Wait until every rank gets here."""
    if is_active():
        dist.barrier()


def shutdown() -> None:
    """Leave the process group (call once, at the end of the process that joined it)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def share_bounds(total: int, rank: int, world_size: int) -> tuple[int, int]:
    """[start, stop) of a rank's contiguous share of `total` items; the first total % world_size ranks get one more."""
    base, extra = divmod(total, world_size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)
