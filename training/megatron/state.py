"""The whole model's weights in Hugging Face layout, gathered from every tensor- and pipeline-parallel rank."""

from __future__ import annotations

import torch
import torch.distributed as dist

from training.megatron.model import ParallelLayout, stage_first_layer
from training.megatron.weights import ModelShape, join_pipeline_stages, megatron_to_hf, merge_tensor_parallel


def local_state(model) -> dict[str, torch.Tensor]:
    """This rank's tensors (no Transformer Engine extra state), detached."""
    return {name: tensor.detach() for name, tensor in model.state_dict().items()
            if isinstance(tensor, torch.Tensor) and not name.endswith("_extra_state")}


def gather_tensor_parallel(state: dict[str, torch.Tensor], layout: ParallelLayout) -> dict[str, torch.Tensor]:
    """Every tensor-parallel rank's part of this stage, merged on the host (tensor by tensor, with all_gather:
    the device holds one tensor's parts at a time)."""
    from megatron.core import parallel_state

    if layout.tensor_parallel_size == 1:
        return state
    group = parallel_state.get_tensor_model_parallel_group()
    shards: list[dict[str, torch.Tensor]] = [{} for _ in range(layout.tensor_parallel_size)]
    for name in sorted(state):  # the same order on every rank
        parts = [torch.empty_like(state[name]) for _ in range(layout.tensor_parallel_size)]
        dist.all_gather(parts, state[name].contiguous(), group=group)
        for rank, part in enumerate(parts):
            shards[rank][name] = part.cpu()
    return merge_tensor_parallel(shards)


def gather_pipeline_stages(stage: dict[str, torch.Tensor], first_layer: int, layout: ParallelLayout,
                           tied: bool, device: torch.device) -> dict[str, torch.Tensor]:
    """Every stage's state dict, on the host, joined into the whole Megatron state dict.

    Each stage broadcasts its tensors one at a time over the pipeline group (the names, shapes and dtypes go
    first, as small objects), so a device holds one tensor of another stage at a time. `device`: where the
    group's collectives run (the model's device).
    """
    from megatron.core import parallel_state

    if layout.pipeline_parallel_size == 1:
        return {name: tensor.cpu() for name, tensor in stage.items()}
    group = parallel_state.get_pipeline_model_parallel_group()
    ranks = dist.get_process_group_ranks(group)
    headers: list = [None] * layout.pipeline_parallel_size
    specs = {name: (tuple(tensor.shape), tensor.dtype) for name, tensor in stage.items()}
    dist.all_gather_object(headers, (first_layer, specs), group=group)
    stages = []
    for stage_rank, (stage_first, stage_specs) in enumerate(headers):
        tensors = {}
        for name in sorted(stage_specs):
            shape, dtype = stage_specs[name]
            mine = stage_rank == layout.pipeline_rank
            tensor = stage[name].to(device).contiguous() if mine else torch.empty(shape, dtype=dtype, device=device)
            dist.broadcast(tensor, src=ranks[stage_rank], group=group)
            tensors[name] = tensor.cpu()
        stages.append((stage_first, tensors))
    return join_pipeline_stages(stages, tied)


def gather_hf_state_dict(model, hf_config, layout: ParallelLayout) -> dict[str, torch.Tensor]:
    """The whole model in Hugging Face names and shapes, on the CPU; every rank of the model-parallel group calls it."""
    shape = ModelShape.from_hf_config(hf_config)
    stage = gather_tensor_parallel(local_state(model), layout)
    device = next(model.parameters()).device
    whole = gather_pipeline_stages(stage, stage_first_layer(model), layout, shape.tied, device)
    return {name: tensor.cpu() for name, tensor in megatron_to_hf(whole, shape).items()}
