"""The DPO loss (METHOD.md section 8) as a pure function over sequence log-probabilities."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor


def dpo_loss(policy_chosen_logp: Tensor, policy_rejected_logp: Tensor, reference_chosen_logp: Tensor,
             reference_rejected_logp: Tensor, beta: float) -> tuple[Tensor, dict[str, float]]:
    """-mean log sigmoid(beta * ((pc - rc) - (pr - rr))) over P pairs.

    Every argument is (P,): the sum of the response's token log-probs, under the trained policy
    (with grad) or the frozen reference. Metrics: reward accuracy (share of pairs whose implicit
    reward beta * (policy - reference) ranks chosen above rejected), the mean margin between
    those rewards, and the mean chosen and rejected rewards.
    """
    if beta <= 0:
        raise ValueError(f"beta must be greater than 0; got {beta}")
    shapes = {tuple(t.shape) for t in (policy_chosen_logp, policy_rejected_logp, reference_chosen_logp,
                                       reference_rejected_logp)}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1:
        raise ValueError(f"the four log-prob tensors must all be (P,); got shapes {sorted(shapes)}")
    chosen_reward = beta * (policy_chosen_logp - reference_chosen_logp.detach())  # (P,)
    rejected_reward = beta * (policy_rejected_logp - reference_rejected_logp.detach())  # (P,)
    margins = chosen_reward - rejected_reward
    loss = -F.logsigmoid(margins).mean()
    detached = margins.detach()
    metrics = {
        "reward_accuracy": float((detached > 0).float().mean()),
        "margin": float(detached.mean()),
        "chosen_reward": float(chosen_reward.detach().mean()),
        "rejected_reward": float(rejected_reward.detach().mean()),
    }
    return loss, metrics
