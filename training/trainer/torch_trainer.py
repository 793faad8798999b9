"""The torch trainer backend: per-token log-probs, micro-batched loss steps, clipping, a fresh optimizer
every iteration. Single process, or data parallel under torchrun (DDP over the process group)."""

from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F

from training.batch import PolicyBatch
from training.losses import compute_policy_loss, token_kl


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(N, T-1) log-prob of each next token under `model`, in float32."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits[:, :-1]
    return torch.gather(F.log_softmax(logits.float(), dim=-1), 2, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)


class TorchTrainer:
    def __init__(self, model, config, device: torch.device | None = None):
        self.config = config
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.distributed = torch.distributed.is_available() and torch.distributed.is_initialized() \
            and torch.distributed.get_world_size() > 1
        self.wrapped = torch.nn.parallel.DistributedDataParallel(self.model) if self.distributed else self.model
        self.use_bf16 = self.device.type == "cuda" and torch.cuda.is_bf16_supported()

    def _autocast(self):
        if self.use_bf16:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def sequence_logprobs(self, batch: PolicyBatch, rows: slice, grad: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(rows,) summed response log-probs and (rows, T-1) token log-probs of a slice of the batch."""
        input_ids = batch.input_ids[rows].to(self.device)
        attention = batch.attention_mask[rows].to(self.device)
        mask = batch.loss_mask[rows].to(self.device)
        with torch.set_grad_enabled(grad), self._autocast():
            tokens = token_logprobs(self.wrapped if grad else self.model, input_ids, attention)
        return (tokens * mask).sum(dim=1), tokens

    @torch.no_grad()
    def reference_logprobs(self, batch: PolicyBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Sequence (G, k) and token (N, T-1) log-probs under the iteration's starting policy pi_i."""
        self.model.eval()
        sequence, tokens = self.sequence_logprobs(batch, slice(0, batch.groups * batch.samples), grad=False)
        return sequence.view(batch.groups, batch.samples), tokens

    def update(self, batch: PolicyBatch, rewards: torch.Tensor) -> dict[str, float]:
        """Gradient steps on one iteration's batch, from a freshly reset optimizer."""
        config = self.config
        ref_sequence, ref_tokens = self.reference_logprobs(batch)
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=config.learning_rate, weight_decay=0.0)
        groups_per_micro = max(1, config.micro_batch_size // batch.samples)
        self.model.train()
        losses, grad_norms = [], []
        for _ in range(config.gradient_steps_per_iteration):
            optimizer.zero_grad(set_to_none=True)
            step_loss = 0.0
            for start in range(0, batch.groups, groups_per_micro):
                groups = slice(start, min(start + groups_per_micro, batch.groups))
                step_loss += self._accumulate(batch, groups, ref_sequence, rewards)
            grad_norms.append(float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)))
            optimizer.step()
            losses.append(step_loss)
        return {"loss": losses[0], "final_loss": losses[-1], "grad_norm": grad_norms[0],
                "kl": self.kl_to_reference(batch, ref_tokens)}

    def _accumulate(self, batch: PolicyBatch, groups: slice, ref_sequence: torch.Tensor,
                    rewards: torch.Tensor) -> float:
        """Backward of one micro-batch's share of the mean loss; returns that share."""
        sequence, _ = self.sequence_logprobs(batch, batch.rows(groups), grad=True)
        size = groups.stop - groups.start
        loss, _ = compute_policy_loss(
            self.config.policy_loss, logp=sequence.view(size, batch.samples),
            ref_logp=ref_sequence[groups].to(self.device), rewards=rewards[groups].to(self.device),
            valid=batch.valid[groups].to(self.device), token_counts=batch.token_counts[groups].to(self.device),
            tau=self.config.tau, log_z_estimate=self.config.log_z_estimate,
        )
        share = loss * (size / batch.groups)
        share.backward()
        return float(share.detach())

    @torch.no_grad()
    def kl_to_reference(self, batch: PolicyBatch, ref_tokens: torch.Tensor) -> float:
        """KL estimate of the updated policy from pi_i over the batch's loss tokens."""
        self.model.eval()
        _, tokens = self.sequence_logprobs(batch, slice(0, batch.groups * batch.samples), grad=False)
        value = token_kl(tokens, ref_tokens, batch.loss_mask.to(self.device))
        return 0.0 if math.isnan(value) else value
