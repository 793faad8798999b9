"""The megatron trainer's device memory, handed to vLLM between updates (hybrid deployment) and taken back.

What lives on the device between two updates: Megatron DDP's contiguous weight and gradient buffers (every
parameter is a view into them), the distributed optimizer's fp32 main weights (separate tensors when training
in bf16; views into the weight buffer in fp32) and Adam's moments. Offloading copies the weight buffers and
the separate main weights into host memory kept for the next time, frees the device storage in place (the
views stay valid objects), drops the gradient buffers (zeroed before every step) and Adam's moments (the
optimizer is reset every iteration). Onloading reallocates and copies back.
"""

from __future__ import annotations

import torch


def ddp_buffers(ddp) -> list:
    """Megatron DDP's parameter-and-gradient buffers (dense and expert-parallel)."""
    return list(ddp.buffers) + list(getattr(ddp, "expert_parallel_buffers", []))


def separate_main_weights(optimizer, buffers) -> list[torch.Tensor]:
    """The optimizer's weights that are not views into a DDP weight buffer (fp32 copies of bf16 weights)."""
    buffer_storages = {buffer.param_data.untyped_storage().data_ptr() for buffer in buffers
                       if buffer.param_data is not None}
    return [weight for inner in getattr(optimizer, "chained_optimizers", [optimizer])
            for group in inner.optimizer.param_groups for weight in group["params"]
            if weight.untyped_storage().data_ptr() not in buffer_storages]


def clear_adam_state(optimizer) -> None:
    """Forget Adam's moments and step counts (a fresh optimizer). Torch's Adam counts steps in its state;
    Transformer Engine's and Apex's FusedAdam, which megatron-core picks where installed, in each param group."""
    for inner in getattr(optimizer, "chained_optimizers", [optimizer]):
        inner.optimizer.state.clear()
        for group in inner.optimizer.param_groups:
            group.pop("step", None)


def host_copy(tensor: torch.Tensor, host: torch.Tensor | None) -> torch.Tensor:
    """`tensor`'s values in host memory, reusing `host` when it fits (page-locked when `tensor` is on a GPU)."""
    if host is None or host.shape != tensor.shape or host.dtype != tensor.dtype:
        host = torch.empty(tensor.shape, dtype=tensor.dtype, device="cpu", pin_memory=tensor.is_cuda)
    host.copy_(tensor, non_blocking=tensor.is_cuda)
    return host


def free_storage(tensor: torch.Tensor) -> int:
    """Release the device memory behind `tensor` and its views; returns the bytes it held."""
    storage = tensor.untyped_storage()
    size = storage.nbytes()
    storage.resize_(0)
    return size


def restore_storage(tensor: torch.Tensor, size: int) -> None:
    tensor.untyped_storage().resize_(size)


class TrainerMemory:
    """Offload and onload of one megatron trainer's DDP buffers and optimizer; host copies are reused."""

    def __init__(self, ddp, optimizer):
        self.ddp, self.optimizer = ddp, optimizer
        self.host: dict[int, torch.Tensor] = {}  # id of the device tensor -> its host copy
        self.freed: list[tuple[torch.Tensor, int, bool]] = []  # (buffer, its storage bytes, copy back?)
        self.moved_weights: list[tuple[torch.Tensor, torch.device, torch.Tensor]] = []  # (weight, device, host)

    @property
    def offloaded(self) -> bool:
        return bool(self.freed or self.moved_weights)

    @torch.no_grad()
    def offload(self) -> None:
        if self.offloaded:
            return
        clear_adam_state(self.optimizer)
        buffers = ddp_buffers(self.ddp)
        weights = separate_main_weights(self.optimizer, buffers)
        to_free = [(buffer.param_data, True) for buffer in buffers if buffer.param_data is not None]
        to_free += [(buffer.grad_data, False) for buffer in buffers]
        for tensor in weights + [tensor for tensor, copy in to_free if copy]:  # keyed by the lasting objects
            self.host[id(tensor)] = host_copy(tensor.detach(), self.host.get(id(tensor)))
        synchronize()  # the copies must land before the device memory goes
        for weight in weights:
            self.moved_weights.append((weight, weight.device, self.host[id(weight)]))
            weight.data = self.host[id(weight)]
        self.freed = [(tensor, free_storage(tensor), copy) for tensor, copy in to_free]
        empty_device_cache()

    @torch.no_grad()
    def onload(self) -> None:
        if not self.offloaded:
            return
        for tensor, size, copy in self.freed:
            restore_storage(tensor, size)
            if copy:
                tensor.copy_(self.host[id(tensor)], non_blocking=tensor.is_cuda)
            else:
                tensor.zero_()
        for weight, device, host in self.moved_weights:
            weight.data = host.to(device, non_blocking=True)
        synchronize()
        self.freed, self.moved_weights = [], []

    def device_bytes(self) -> int:
        """Bytes held by the DDP buffers and the separate main weights now (only the latter's copies when offloaded)."""
        buffers = ddp_buffers(self.ddp)
        tensors = [buffer.param_data for buffer in buffers if buffer.param_data is not None]
        tensors += [buffer.grad_data for buffer in buffers]
        if not self.moved_weights:
            tensors += [weight.data for weight in separate_main_weights(self.optimizer, buffers)]
        return sum(tensor.untyped_storage().nbytes() for tensor in tensors)


def synchronize() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def empty_device_cache() -> None:
    """Hand the allocator's cached blocks back, so vLLM can take them."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
