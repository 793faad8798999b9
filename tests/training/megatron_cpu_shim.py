"""Test-only: let Megatron-core's CUDA-bound calls run on the CPU (gloo), so its tests run without a GPU.

Product code asks for `torch.cuda.current_device()` and megatron-core allocates with `device="cuda"`; this
module maps both to the CPU, makes synchronisation and CUDA RNG calls no-ops, and reports CPU tensors under
their CUDA type names (the distributed optimizer checks them). Apply it before any Megatron code runs; with
MIRRORLAB_GPU_SMOKE=1 (a GPU host, NCCL) it does nothing.
"""

from __future__ import annotations

import contextlib
import functools
import os

import torch
import torch.utils._device

GPU_SMOKE = os.environ.get("MIRRORLAB_GPU_SMOKE") == "1"
_FACTORIES = ("empty", "zeros", "ones", "full", "tensor", "arange", "rand", "randn", "empty_like", "zeros_like")
_applied = False


def _cpu_device(device):
    """'cuda', 'cuda:0', 0 or a cuda torch.device -> 'cpu'; anything else unchanged."""
    if isinstance(device, int) or (isinstance(device, str) and device.startswith("cuda")):
        return "cpu"
    if isinstance(device, torch.device) and device.type == "cuda":
        return "cpu"
    return device


def _on_cpu(factory):
    @functools.wraps(factory)
    def wrapped(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = _cpu_device(kwargs["device"])
        return factory(*args, **kwargs)
    return wrapped


def apply() -> None:
    """Patch torch once per process (no-op under MIRRORLAB_GPU_SMOKE=1)."""
    global _applied
    if _applied or GPU_SMOKE:
        return
    _applied = True
    # torch.device(...) used as a context manager recognises factories by identity, from a set it builds
    # once: build it before wrapping them, or models created under a meta device (transformers'
    # from_pretrained) get uninitialised buffers.
    torch.utils._device._device_constructors()
    for name in _FACTORIES:
        setattr(torch, name, _on_cpu(getattr(torch, name)))
    torch.cuda.current_device = lambda: "cpu"
    torch.cuda.is_available = lambda: False  # on a GPU host too: product code then picks gloo and fp32
    torch.cuda.synchronize = lambda *args, **kwargs: None
    torch.cuda.get_rng_state = torch.cuda.random.get_rng_state = lambda *args, **kwargs: torch.get_rng_state()
    torch.cuda.set_rng_state = lambda *args, **kwargs: None
    torch.cuda.manual_seed = lambda *args, **kwargs: None
    torch.cuda.stream = lambda *args, **kwargs: contextlib.nullcontext()
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    original_type = torch.Tensor.type
    torch.Tensor.type = lambda self, *args, **kwargs: (
        original_type(self).replace("torch.", "torch.cuda.", 1) if not args and not kwargs
        else original_type(self, *args, **kwargs))
