"""How far the trainer's distribution is from the one the tokens were sampled from, per iteration.

For a token the sampler drew with log-prob s, the trainer's starting policy pi_i gives it t. The k3
estimator exp(t - s) - (t - s) - 1 averages to KL(sampler || pi_i) over the sampler's tokens that the update
trains on (the loss mask: segments left out by exclude_segments_older_than do not count):
- `sampler_kl`: over tokens sampled by pi_i itself (lag 0). Only numerics separate the two there (the
  engine's dtype and kernels against the trainer's), so it should be near 0: in float32 on a CPU it is
  below 1e-6; a 16-bit engine beside a float32 trainer shows its rounding here. With top_p < 1 it
  also holds the log of the nucleus mass, since the trainer scores the whole softmax(z / T).
- `stale_sampler_kl`: over tokens sampled by older policies (partial rollouts' earlier segments, rollouts
  made ahead): how far off-policy the reused tokens are.
"""

from __future__ import annotations

import torch
from torch import Tensor

from training.batch import PolicyBatch
from training.losses import k3_terms

NAMES = ("sampler_kl", "stale_sampler_kl")


@torch.no_grad()
def sampler_gap_sums(batch: PolicyBatch | None, trainer_tokens: Tensor | None) -> dict[str, float]:
    """Summed k3 terms and token counts of both gaps, for adding over micro-batches and ranks.

    trainer_tokens: (N, T-1) token log-probs of the batch's rows under pi_i (None off the rank or pipeline
    stage that has them, or without a batch: then all sums are 0). The gap is taken in float64, where tiny
    gaps keep their digits.
    """
    sums = {f"{name}_{part}": 0.0 for name in NAMES for part in ("sum", "tokens")}
    if batch is None or trainer_tokens is None or batch.sampler_logprobs is None or batch.token_lag is None:
        return sums
    trainer_tokens, sampler_tokens = trainer_tokens.double().cpu(), batch.sampler_logprobs.double()
    known = torch.isfinite(sampler_tokens) & torch.isfinite(trainer_tokens)  # NaN: the engine gave none
    known &= batch.loss_mask.bool()
    terms = k3_terms(torch.where(known, trainer_tokens - sampler_tokens, torch.zeros_like(trainer_tokens)))
    for name, tokens in zip(NAMES, (known & (batch.token_lag == 0), known & (batch.token_lag > 0))):
        sums[f"{name}_sum"] = float(terms[tokens].sum())
        sums[f"{name}_tokens"] = float(tokens.sum())
    return sums


def sampler_gap_metrics(sums: dict[str, float]) -> dict[str, float]:
    """The mean of each gap that has tokens (a gap without any is left out)."""
    return {name: sums[f"{name}_sum"] / sums[f"{name}_tokens"] for name in NAMES if sums[f"{name}_tokens"] > 0}
