"""The length reward of METHOD.md section 4 (report §2.3.3) and its warm-up schedule."""

from __future__ import annotations

import torch
from torch import Tensor


def length_rewards(lengths: Tensor, correct: Tensor) -> Tensor:
    """Length rewards of the k responses of one problem.

    lengths: (k,) response lengths in tokens (int or float); correct: (k,) bool.
    Returns (k,) float: lambda_i = 0.5 - (len_i - min_len) / (max_len - min_len) for a correct
    response, min(0, lambda_i) for a wrong one; all zeros when every length is the same.
    """
    if lengths.dim() != 1 or correct.shape != lengths.shape:
        raise ValueError(f"lengths and correct must both be (k,); got {tuple(lengths.shape)} "
                         f"and {tuple(correct.shape)}")
    return grouped_length_rewards(lengths.unsqueeze(0), correct.unsqueeze(0)).squeeze(0)


def grouped_length_rewards(lengths: Tensor, correct: Tensor) -> Tensor:
    """`length_rewards` applied to each row: lengths (G, k), correct (G, k) bool -> (G, k) float."""
    if lengths.dim() != 2 or correct.shape != lengths.shape:
        raise ValueError(f"lengths and correct must both be (G, k); got {tuple(lengths.shape)} "
                         f"and {tuple(correct.shape)}")
    dtype = lengths.dtype if lengths.is_floating_point() else torch.get_default_dtype()
    lengths = lengths.to(dtype)
    if lengths.numel() == 0:
        return torch.zeros_like(lengths)
    min_len = lengths.min(dim=1, keepdim=True).values  # (G, 1)
    max_len = lengths.max(dim=1, keepdim=True).values  # (G, 1)
    span = max_len - min_len
    # Rows where every length is equal get 0; the clamp only avoids 0/0 in that discarded branch.
    lam = 0.5 - (lengths - min_len) / span.clamp(min=torch.finfo(dtype).tiny)
    reward = torch.where(correct.bool(), lam, lam.clamp(max=0.0))
    return torch.where(span > 0, reward, torch.zeros_like(reward))


def length_penalty_weight_at(iteration: int, weight: float, warmup_iterations: int) -> float:
    """The length-reward weight at an iteration (counted from 1): 0 during the warm-up, then `weight`."""
    return 0.0 if iteration <= warmup_iterations else float(weight)
