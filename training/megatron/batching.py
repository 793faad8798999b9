"""How the megatron trainer splits a PolicyBatch: equal micro-batches, one batch per model-parallel group."""

from __future__ import annotations

import torch
import torch.distributed as dist

from training.batch import PolicyBatch


def equal_micro_batches(groups: int, samples: int, micro_batch_size: int) -> list[slice]:
    """Group slices of equal size (pipeline stages exchange tensors of one fixed shape).

    The size is the largest divisor of `groups` whose rows (groups * samples) fit in micro_batch_size,
    and at least one group: a group's k responses stay together because the loss compares them.
    """
    limit = max(1, micro_batch_size // samples)
    size = max(size for size in range(1, min(limit, groups) + 1) if groups % size == 0)
    return [slice(start, start + size) for start in range(0, groups, size)]


def concat_batches(batches: list[PolicyBatch]) -> PolicyBatch:
    """Several ranks' batches (same k) as one, right-padded to the widest (padding is masked out)."""
    width = max(batch.input_ids.shape[1] for batch in batches)

    def padded(tensor: torch.Tensor, columns: int, value: float = 0) -> torch.Tensor:
        return torch.nn.functional.pad(tensor, (0, columns - tensor.shape[1]), value=value)

    def joined(name: str, value: float) -> torch.Tensor | None:
        parts = [getattr(b, name) for b in batches]
        return None if any(part is None for part in parts) else torch.cat([padded(p, width - 1, value) for p in parts])

    return PolicyBatch(
        input_ids=torch.cat([padded(b.input_ids, width) for b in batches]),
        attention_mask=torch.cat([padded(b.attention_mask, width) for b in batches]),
        loss_mask=torch.cat([padded(b.loss_mask, width - 1) for b in batches]),
        token_counts=torch.cat([b.token_counts for b in batches]), valid=torch.cat([b.valid for b in batches]),
        groups=sum(b.groups for b in batches), samples=batches[0].samples,
        sampler_logprobs=joined("sampler_logprobs", float("nan")), token_lag=joined("token_lag", -1))


def union_over_model_parallel_ranks(batch: PolicyBatch | None, rewards: torch.Tensor | None
                                    ) -> tuple[PolicyBatch | None, torch.Tensor | None]:
    """The ranks that hold one model replica (its tensor and pipeline ranks) all train on the union of their groups.

    Each rank rolls out its own groups; the replica's ranks must see the same batch, so they gather
    theirs (in rank order) and concatenate them. A no-op when a replica is a single rank.
    """
    from megatron.core import parallel_state

    group = parallel_state.get_model_parallel_group()
    if dist.get_world_size(group) == 1:
        return batch, rewards
    gathered: list = [None] * dist.get_world_size(group)
    dist.all_gather_object(gathered, (batch, rewards), group=group)
    present = [(b, r) for b, r in gathered if b is not None]
    if not present:
        return None, None
    return concat_batches([b for b, _ in present]), torch.cat([r for _, r in present])
