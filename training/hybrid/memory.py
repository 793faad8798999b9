"""Trainer memory between the hybrid phases: offloaded to the host while vLLM rolls out, back before training.

A model object with its own `offload_to_cpu()` and `onload()` methods (a trainer that also holds
optimizer state between iterations, such as a Megatron distributed optimizer) handles its own memory.
Otherwise the parameters and buffers of the torch module move (gradients are dropped); the Parameter
objects stay the same, so optimizers and DDP keep their references. On the CPU both are no-ops.
"""

from __future__ import annotations

import torch


def module_device(model) -> torch.device:
    """Where the model's first parameter lives."""
    return next(model.parameters()).device


@torch.no_grad()
def move_module(model: torch.nn.Module, device: torch.device) -> None:
    """Move parameters and buffers to `device` in place (same Parameter objects); gradients are dropped
    (every training step starts from cleared ones)."""
    for parameter in model.parameters():
        parameter.data = parameter.data.to(device, non_blocking=True)
        parameter.grad = None
    for module in model.modules():
        for name, buffer in module.named_buffers(recurse=False):
            module._buffers[name] = buffer.to(device, non_blocking=True)


def offload(model) -> torch.device | None:
    """Move the trainer's state to the host; returns the device to bring it back to (None: nothing moved)."""
    if hasattr(model, "offload_to_cpu"):
        model.offload_to_cpu()
        return None
    device = module_device(model)
    if device.type == "cpu":
        return None
    move_module(model, torch.device("cpu"))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()  # hand the cached blocks to vLLM
    return device


def onload(model, device: torch.device | None) -> None:
    """Bring the trainer's state back to `device` (what `offload` returned)."""
    if hasattr(model, "onload"):
        model.onload()
        return
    if device is not None:
        move_module(model, device)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
