"""Policy losses of METHOD.md section 3: online policy mirror descent and the ReST baseline.

Every loss takes sequence-level log-probabilities over a batch of G problems with k responses
each: logp (G, k) is the sum of the response's token log-probs under the current parameters,
and `valid` (G, k) bool marks the responses that take part (a group's k is its count of valid
responses; invalid entries are treated as absent and may hold any value, NaN included).
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import torch
from torch import Tensor

from training.registries import log_z_estimates, policy_losses


def mean_reward_baseline(rewards: Tensor, valid: Tensor, tau: float) -> Tensor:
    """(G, k) rewards -> (G, 1) mean of the valid rewards (0 for a group with none)."""
    counts = valid.sum(dim=1, keepdim=True)
    total = torch.where(valid, rewards, torch.zeros_like(rewards)).sum(dim=1, keepdim=True)
    return total / counts.clamp(min=1)


def log_mean_exp_baseline(rewards: Tensor, valid: Tensor, tau: float) -> Tensor:
    """(G, k) rewards -> (G, 1) tau * log(mean_j exp(r_j / tau)) over valid j (0 for a group with none)."""
    counts = valid.sum(dim=1, keepdim=True)
    scaled = torch.where(valid, rewards / tau, torch.full_like(rewards, float("-inf")))
    log_mean = torch.logsumexp(scaled, dim=1, keepdim=True) - counts.clamp(min=1).to(rewards.dtype).log()
    return torch.where(counts > 0, tau * log_mean, torch.zeros_like(log_mean))


def log_z_baseline(rewards: Tensor, valid: Tensor, tau: float, estimate: str) -> Tensor:
    """The estimate of tau*log Z per group: rewards (G, k), valid (G, k) bool -> (G, 1), detached.

    "mean_reward": the mean valid reward; "log_mean_exp": tau * log mean_j exp(r_j / tau).
    """
    if estimate not in log_z_estimates.entries:
        raise ValueError(f"unknown log_z_estimate {estimate!r}; choose one of {', '.join(log_z_estimates.entries)}")
    if tau <= 0:
        raise ValueError(f"tau must be greater than 0; got {tau}")
    rewards = rewards.detach()
    return log_z_estimates.get(estimate)(rewards, valid.bool(), tau).detach()


def mirror_descent_loss(logp: Tensor, ref_logp: Tensor, rewards: Tensor, valid: Tensor, tau: float,
                        log_z_estimate: str = "mean_reward") -> tuple[Tensor, dict[str, float]]:
    """The mirror-descent surrogate, scaled by 1/(2 tau) so its gradient is minus equation 3.

    logp (G, k) with grad; ref_logp (G, k) under the iteration's reference policy; rewards (G, k);
    valid (G, k) bool. Per group: mean over valid j of (r_j - b - tau (logp_j - ref_logp_j))^2,
    then the mean over groups with a valid response, divided by 2 tau. Returns (scalar, metrics).
    """
    valid = valid.bool()
    zeros = torch.zeros_like(logp)
    counts = valid.sum(dim=1)  # (G,)
    active = counts > 0  # groups that take part
    baseline = log_z_baseline(rewards, valid, tau, log_z_estimate)  # (G, 1)
    rewards = torch.where(valid, rewards.detach().to(logp.dtype), zeros.detach())
    log_ratio = torch.where(valid, logp - ref_logp.detach(), zeros)  # (G, k)
    residual = rewards - baseline - tau * log_ratio
    per_group = torch.where(valid, residual.square(), zeros).sum(dim=1) / counts.clamp(min=1)  # (G,)
    if active.any():
        loss = per_group[active].mean() / (2 * tau)
    else:
        loss = 0 * logp.sum()  # nothing to learn from; keeps the graph
    valid_count = max(int(valid.sum()), 1)
    metrics = {
        "loss": float(loss.detach()),
        "mean_reward": float(rewards.sum()) / valid_count,
        "baseline": float(baseline[active].mean()) if active.any() else 0.0,
        "log_ratio_mean": float(log_ratio.detach().sum()) / valid_count,
    }
    return loss, metrics


def rest_loss(logp: Tensor, token_counts: Tensor, rewards: Tensor,
              valid: Tensor) -> tuple[Tensor, dict[str, float]]:
    """The ReST baseline (report §3.5): token-mean negative log-likelihood of each group's best response.

    logp (G, k) with grad; token_counts (G, k) response tokens in the loss; rewards (G, k); valid (G, k) bool.
    The best is the response with the highest reward among the valid ones with tokens in the loss (ties: the
    first; one whose tokens segment exclusion removed has nothing to fit); only groups whose best reward is > 0
    take part (as counted_groups says). Returns (scalar, metrics); the loss is 0 * logp.sum() when none do.
    """
    valid = valid.bool()
    best_reward, best = _rest_best(rewards, valid, token_counts)
    used = best_reward > 0  # (G,)
    best_logp = logp.gather(1, best.unsqueeze(1)).squeeze(1)  # (G,)
    best_tokens = token_counts.gather(1, best.unsqueeze(1)).squeeze(1).clamp(min=1).to(logp.dtype)
    if used.any():
        loss = -(best_logp[used] / best_tokens[used]).mean()
    else:
        loss = 0 * logp.sum()
    valid_count = max(int(valid.sum()), 1)
    metrics = {
        "loss": float(loss.detach()),
        "mean_reward": float(torch.where(valid, rewards.detach(), torch.zeros_like(rewards)).sum()) / valid_count,
        "groups_used": float(used.sum()),
    }
    return loss, metrics


def _rest_best(rewards: Tensor, valid: Tensor, token_counts: Tensor) -> tuple[Tensor, Tensor]:
    """(G,) best reward and index among each group's valid responses with tokens in the loss (-inf: none)."""
    trainable = valid.bool() & (token_counts > 0)
    masked_rewards = torch.where(trainable, rewards.detach(), torch.full_like(rewards, float("-inf")))
    return masked_rewards.max(dim=1)  # max returns the first maximal index


def counted_groups(name: str, *, rewards: Tensor, valid: Tensor, token_counts: Tensor) -> Tensor:
    """(G,) bool: the groups policy loss `name` averages over. The trainers weight each micro-batch's loss by how
    many of them it holds, out of all ranks' count, so that a step's loss is the mean over every counted group
    whatever the micro-batch size or the split over ranks: ReST counts the groups with a correct trainable
    response, mirror descent every group with a valid response."""
    if name == "rest":
        return _rest_best(rewards, valid, token_counts)[0] > 0
    return valid.bool().any(dim=1)


class GroupWeights(NamedTuple):
    """Which of a rank's groups the loss counts ((G,) bool, None without groups) and how many all ranks count."""

    counted: Tensor | None
    total: int

    def share(self, groups: slice) -> float:
        """The weight of a micro-batch's mean loss: its counted groups out of all ranks' (0 when none count)."""
        return int(self.counted[groups].sum()) / max(self.total, 1)


def compute_policy_loss(name: str, *, logp: Tensor, ref_logp: Tensor, rewards: Tensor, valid: Tensor,
                        token_counts: Tensor, tau: float,
                        log_z_estimate: str = "mean_reward") -> tuple[Tensor, dict[str, float]]:
    """Look up the policy loss `name` and call it with the arguments it takes."""
    loss_function = policy_losses.get(name)
    available = {"logp": logp, "ref_logp": ref_logp, "rewards": rewards, "valid": valid,
                 "token_counts": token_counts, "tau": tau, "log_z_estimate": log_z_estimate}
    wanted = inspect.signature(loss_function).parameters
    return loss_function(**{key: value for key, value in available.items() if key in wanted})


def k3_terms(log_ratio: Tensor) -> Tensor:
    """exp(r) - r - 1 for log-ratios r = log q/p of tokens sampled from p: its mean estimates KL(p || q) (>= 0,
    unbiased; expm1 keeps tiny gaps from rounding below 0)."""
    return torch.expm1(log_ratio) - log_ratio


@torch.no_grad()
def token_kl(logp_tokens: Tensor, ref_logp_tokens: Tensor, mask: Tensor) -> float:
    """KL(pi_ref || pi_cur) per token, estimated on tokens sampled from pi_ref (the rollout policy).

    The k3 estimator exp(cur - ref) - (cur - ref) - 1 (>= 0, unbiased under pi_ref, and only linear
    where the updated policy dropped a token's probability). logp_tokens, ref_logp_tokens, mask:
    (N, T); returns 0.0 when no token is masked in.
    """
    mask = mask.bool()
    if not mask.any():
        return 0.0
    log_ratio = (logp_tokens - ref_logp_tokens)[mask]
    return float(k3_terms(log_ratio).mean())
