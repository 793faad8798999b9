"""The torch trainer backend: per-token log-probs, micro-batched loss steps, clipping, a fresh optimizer
every iteration. Single process, or data parallel under torchrun (DDP over the process group)."""

from __future__ import annotations

import contextlib
import logging
import math

import torch
import torch.nn.functional as F

from training import distributed
from training.batch import PolicyBatch
from training.losses import GroupWeights, compute_policy_loss, counted_groups, token_kl
from training.models.loading import is_vision_language
from training.sampler_gap import sampler_gap_metrics, sampler_gap_sums
from training.trainer.logprobs import token_logprobs
from training.trainer.packing import packed_token_logprobs, packing_supported

logger = logging.getLogger(__name__)


class UpdateDiverged(RuntimeError):
    """A gradient step's loss or gradient norm is not finite: the step is not taken, and the run stops with the
    weights of its last good step (its last checkpoint resumes it)."""


class TorchTrainer:
    def __init__(self, model, config, device: torch.device | None = None):
        self.config = config
        self.device = device or default_device()
        self.model = model.to(self.device)
        self.world_size = distributed.current_context().world_size
        self.distributed = self.world_size > 1
        self.wrapped = torch.nn.parallel.DistributedDataParallel(self.model) if self.distributed else self.model
        self.use_bf16 = self.device.type == "cuda" and torch.cuda.is_bf16_supported()
        # packed rows need text models that read restarting position ids (vision-language ones take 3-D ids)
        wants_packing = bool(getattr(config, "pack_sequences", False))
        text_model = not is_vision_language(self.model.config)
        self.packs_sequences = wants_packing and text_model and packing_supported(self.model)
        if wants_packing and text_model and not self.packs_sequences:
            logger.warning("pack_sequences: %s does not keep packed sequences apart; training on padded rows",
                           type(self.model).__name__)

    def _autocast(self):
        if self.use_bf16:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def sequence_logprobs(self, batch: PolicyBatch, rows: slice, grad: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(rows,) summed response log-probs and (rows, T-1) token log-probs of a slice of the batch.

        The slice runs at its own longest sequence, not the batch's (rows are right-padded), so a micro-batch
        without a long response costs no padding; its token log-probs are padded back with zeros. With
        packing, shorter rows share rows as wide as that longest one (training.trainer.packing).
        """
        lengths = batch.attention_mask[rows].sum(dim=1)
        width = max(2, int(lengths.max()))
        input_ids = batch.input_ids[rows, :width].to(self.device)
        mask = batch.loss_mask[rows, :width - 1].to(self.device)
        model = self.wrapped if grad else self.model
        with torch.set_grad_enabled(grad), self._autocast():
            if self.packs_sequences:
                tokens = packed_token_logprobs(model, input_ids, lengths.tolist(), self.config.temperature)
            else:
                attention = batch.attention_mask[rows, :width].to(self.device)
                tokens = token_logprobs(model, input_ids, attention, self.config.temperature)
        sequence = (tokens * mask).sum(dim=1)
        return sequence, F.pad(tokens, (0, batch.input_ids.shape[1] - width))

    @torch.no_grad()
    def all_logprobs(self, batch: PolicyBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Sequence (N,) and token (N, T-1) log-probs of every row, no grad, in the gradient pass's micro-batches
        (the same rows at the same padded width, so an unmoved policy scores exactly as that pass did)."""
        self.model.eval()
        rows, chunk = batch.groups * batch.samples, self._groups_per_micro(batch) * batch.samples
        parts = [self.sequence_logprobs(batch, slice(start, min(start + chunk, rows)), grad=False)
                 for start in range(0, rows, chunk)]
        return torch.cat([part[0] for part in parts]), torch.cat([part[1] for part in parts])

    def reference_logprobs(self, batch: PolicyBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Sequence (G, k) and token (N, T-1) log-probs under the iteration's starting policy pi_i."""
        sequence, tokens = self.all_logprobs(batch)
        return sequence.view(batch.groups, batch.samples), tokens

    def reload_from_model(self) -> None:
        """Nothing to do: this trainer trains the Hugging Face model itself (megatron keeps weights of its own)."""

    def rank_state(self) -> None:
        """Nothing beyond the weights: the checkpoint's float32 Hugging Face weights are this trainer's own."""
        return None

    def load_rank_state(self, state: dict) -> bool:
        return False

    def update(self, batch: PolicyBatch | None, rewards: torch.Tensor | None) -> dict[str, float]:
        """Gradient steps on one iteration's batch, from a freshly reset optimizer.

        The first step runs at pi_i itself, so its forward pass is also the reference: no separate pass (dropout
        stays off throughout, so pi_theta equals pi_i there exactly, as the mirror-descent loss assumes).
        Under DDP every rank passes its own groups (None when it has none) and gets metrics of the
        whole batch: the loss is the mean over all ranks' groups (see `_accumulate`).
        """
        config = self.config
        if batch is not None:  # long groups share micro-batches, which then run at their own length
            order = batch.longest_first()
            batch, rewards = batch.select_groups(order), rewards[order]
        counted = None if batch is None else counted_groups(
            config.policy_loss, rewards=rewards, valid=batch.valid, token_counts=batch.token_counts)
        weights = GroupWeights(counted, int(distributed.all_reduce_sum(
            {"groups": int(counted.sum()) if batch else 0})["groups"]))
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=config.learning_rate, weight_decay=0.0)
        self.model.eval()
        losses, grad_norms, reference = [], [], None
        for _ in range(config.gradient_steps_per_iteration):
            optimizer.zero_grad(set_to_none=True)
            recorded: list[tuple[torch.Tensor, torch.Tensor]] = []  # the first step's forward: the reference
            losses.append(self._backward_step(batch, reference and reference[0], rewards, weights, recorded))
            if recorded:
                reference = (torch.cat([part[0] for part in recorded]), torch.cat([part[1] for part in recorded]))
            grad_norms.append(float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)))
            if not math.isfinite(grad_norms[-1]):  # the same on every rank (gradients are all-reduced)
                raise UpdateDiverged(
                    f"gradient step {len(grad_norms)} of the update: loss {losses[-1]}, gradient norm {grad_norms[-1]} "
                    f"(not finite); the step was not taken. Lower learning_rate (now {config.learning_rate}) or "
                    f"check the rewards for NaN; the last checkpoint resumes the run")
            optimizer.step()
        kl, kl_tokens = self.kl_to_reference(batch, reference[1]) if batch else (0.0, 0)
        gap = sampler_gap_sums(batch, reference[1] if batch else None)
        totals = distributed.all_reduce_sum({"first_step_loss": losses[0], "loss": losses[-1],
                                             "kl_sum": kl * kl_tokens, "kl_tokens": kl_tokens, **gap})
        if self.distributed:  # token-weighted over ranks
            kl = totals["kl_sum"] / max(totals["kl_tokens"], 1.0)
        # loss: the last gradient step's (at step 1 it is (r - rbar)^2 / 2 tau whatever the update does)
        return {"loss": totals["loss"], "first_step_loss": totals["first_step_loss"], "grad_norm": grad_norms[0],
                "kl": kl, **sampler_gap_metrics(totals)}

    def _backward_step(self, batch: PolicyBatch | None, ref_sequence: torch.Tensor | None,
                       rewards: torch.Tensor | None, weights: GroupWeights,
                       recorded: list[tuple[torch.Tensor, torch.Tensor]] | None = None) -> float:
        """Backward of this rank's micro-batches; returns its share of the step's loss.

        ref_sequence: (G, k) log-probs under pi_i; None at the first step, where each micro-batch's own
        forward is its reference, appended to `recorded` as ((g, k) sequence, (rows, T-1) token) log-probs.
        weights: the groups the loss counts (losses.counted_groups) and their number over all ranks.
        Under DDP gradients are averaged once per step, on the last micro-batch (the others run in
        `no_sync`), so ranks with different numbers of micro-batches still meet in one all-reduce.
        """
        if batch is None:
            self._backward_zero()
            return 0.0
        groups_per_micro = self._groups_per_micro(batch)
        step_loss = 0.0
        for start in range(0, batch.groups, groups_per_micro):
            groups = slice(start, min(start + groups_per_micro, batch.groups))
            last = groups.stop == batch.groups
            with contextlib.nullcontext() if last or not self.distributed else self.wrapped.no_sync():
                share, sequence, tokens = self._accumulate(batch, groups, ref_sequence, rewards, weights)
            step_loss += share
            if ref_sequence is None and recorded is not None:
                recorded.append((sequence, tokens))
        return step_loss

    def _groups_per_micro(self, batch: PolicyBatch) -> int:
        """Whole groups per micro-batch: at most micro_batch_size rows, at least one group."""
        return max(1, self.config.micro_batch_size // batch.samples)

    def _backward_zero(self) -> None:
        """A rank without groups still joins the step's gradient all-reduce, with a zero gradient."""
        input_ids = torch.zeros((1, 2), dtype=torch.long, device=self.device)
        with self._autocast():
            tokens = token_logprobs(self.wrapped, input_ids, torch.ones_like(input_ids))
        (tokens.sum() * 0.0).backward()

    def _accumulate(self, batch: PolicyBatch, groups: slice, ref_sequence: torch.Tensor | None, rewards: torch.Tensor,
                    weights: GroupWeights) -> tuple[float, torch.Tensor, torch.Tensor]:
        """Backward of one micro-batch's share of the mean loss over all ranks' counted groups.

        Returns that share and the micro-batch's (g, k) sequence and (rows, T-1) token log-probs, detached.
        The share is loss * counted_groups_in_micro / counted_groups_in_all (losses.counted_groups). DDP
        averages gradients over ranks, so each rank back-propagates world_size times its share: the average is
        then the gradient of the sum of all shares, the mean over every counted group of the batch whatever
        the micro-batch size or the ranks' counts.
        """
        sequence, tokens = self.sequence_logprobs(batch, batch.rows(groups), grad=True)
        size = groups.stop - groups.start
        logp = sequence.view(size, batch.samples)
        ref_logp = logp.detach() if ref_sequence is None else ref_sequence[groups].to(self.device)
        loss, _ = compute_policy_loss(
            self.config.policy_loss, logp=logp, ref_logp=ref_logp, rewards=rewards[groups].to(self.device),
            valid=batch.valid[groups].to(self.device), token_counts=batch.token_counts[groups].to(self.device),
            tau=self.config.tau, log_z_estimate=self.config.log_z_estimate,
        )
        share = loss * weights.share(groups)
        (share * self.world_size).backward()
        return float(share.detach()), logp.detach(), tokens.detach()

    @torch.no_grad()
    def kl_to_reference(self, batch: PolicyBatch, ref_tokens: torch.Tensor) -> tuple[float, int]:
        """KL estimate of the updated policy from pi_i over the batch's loss tokens, and how many tokens."""
        _, tokens = self.all_logprobs(batch)
        mask = batch.loss_mask.to(self.device)
        value, count = token_kl(tokens, ref_tokens, mask), int(mask.sum())
        return (0.0 if count == 0 else value), count  # a NaN over real tokens (a diverged update) shows


def default_device() -> torch.device:
    """The current CUDA device (torchrun ranks set theirs from LOCAL_RANK), else the CPU."""
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
