"""The megatron trainer backend: TorchTrainer's interface over a tensor/pipeline/data-parallel Megatron GPTModel.

`update(batch, rewards)` runs the same policy losses (training/losses.py) through Megatron's pipeline schedule,
Megatron DDP and the distributed optimizer (reset every iteration, as the torch backend does). `model` is a
Hugging Face copy on the CPU, refreshed after every update, for checkpoints and rollout-engine weight updates.
"""

from __future__ import annotations

from dataclasses import asdict
from functools import partial

import torch
import torch.distributed as dist

from training.batch import PolicyBatch
from training.losses import GroupWeights, compute_policy_loss, counted_groups, k3_terms
from training.megatron.batching import equal_micro_batches, union_over_model_parallel_ranks
from training.megatron.logprobs import decoder_output, token_logprobs_from_hidden
from training.megatron.memory import TrainerMemory, clear_adam_state
from training.megatron.model import build_gpt_model, causal_inputs, init_parallel, load_hf_state_dict
from training.megatron.state import gather_hf_state_dict
from training.sampler_gap import sampler_gap_metrics, sampler_gap_sums


def training_dtype(precision: str = "auto") -> torch.dtype:
    """The weights' dtype for the `megatron_precision` knob; auto: bfloat16 (with fp32 main copies in the
    optimizer) where the GPU supports it, else float32."""
    if precision == "auto":
        return torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32
    return {"bf16": torch.bfloat16, "fp32": torch.float32}[precision]


class MegatronTrainer:
    def __init__(self, model, config):
        from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
        from megatron.core.distributed.finalize_model_grads import finalize_model_grads
        from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

        self.config, self.model = config, model  # the Hugging Face copy, on the CPU
        self.layout = init_parallel(config.tensor_parallel_size, config.pipeline_parallel_size, config.seed)
        self.device = torch.cuda.current_device()
        dtype = training_dtype(config.megatron_precision)
        self.gpt = build_gpt_model(model.config, self.layout, dtype)
        exact = load_hf_state_dict(self.gpt, model.state_dict(), model.config, self.layout)
        self.vocab_size = model.config.vocab_size
        self.ddp = DistributedDataParallel(
            config=self.gpt.config, module=self.gpt,
            ddp_config=DistributedDataParallelConfig(grad_reduce_in_fp32=True, use_distributed_optimizer=True))
        self.gpt.config.no_sync_func = self.ddp.no_sync
        self.gpt.config.finalize_model_grads_func = finalize_model_grads
        self.optimizer = get_megatron_optimizer(OptimizerConfig(
            optimizer="adam", lr=config.learning_rate, weight_decay=0.0, adam_beta1=0.9, adam_beta2=0.999,
            adam_eps=1e-8, clip_grad=config.max_grad_norm, bf16=dtype == torch.bfloat16, params_dtype=dtype,
            use_distributed_optimizer=True), [self.ddp])
        self.memory = TrainerMemory(self.ddp, self.optimizer)
        self._set_main_weights(exact)  # a bf16 run resumed from a float32 checkpoint keeps its low bits

    def update(self, batch: PolicyBatch | None, rewards: torch.Tensor | None) -> dict[str, float]:
        """Gradient steps on one iteration's batch from a freshly reset optimizer; metrics of the whole batch.

        The first step runs at pi_i itself, so its forward pass is also the reference (dropout is off): no
        separate pass, as in TorchTrainer. Every rank passes its own groups (None when it has none); the ranks
        of one model-parallel group train on the union of theirs, and the loss is the mean over all groups of
        all ranks.
        """
        self.onload()
        batch, rewards = union_over_model_parallel_ranks(batch, rewards)
        counted = None if batch is None else counted_groups(
            self.config.policy_loss, rewards=rewards, valid=batch.valid, token_counts=batch.token_counts)
        weights = GroupWeights(counted, int(self._sum_over_replicas(
            {"groups": float(counted.sum()) if batch else 0.0}, every_rank=True)["groups"]))
        clear_adam_state(self.optimizer)  # each iteration starts from a fresh optimizer
        self.ddp.train()
        losses, grad_norms, ref_sequence, ref_tokens = [], [], None, None
        for step in range(self.config.gradient_steps_per_iteration):
            self.ddp.zero_grad_buffer()
            self.optimizer.zero_grad()
            recorded: dict[int, torch.Tensor] = {}  # the first step's token log-probs: the reference
            shares = self._run(batch, ref_sequence, rewards, weights,
                               collect=None if step else lambda groups, tokens: recorded.__setitem__(
                                   groups.start, tokens.cpu()))
            if step == 0 and batch is not None:
                ref_sequence, ref_tokens = self._joined(batch, recorded)
            losses.append(self._sum_over_replicas({"loss": sum(shares)})["loss"])
            succeeded, grad_norm, _ = self.optimizer.step()
            if not succeeded:
                raise RuntimeError("the distributed optimizer skipped its step (non-finite gradients)")
            grad_norms.append(float(grad_norm))
        kl = self._kl(batch, ref_tokens)
        gap = self._sum_over_replicas(sampler_gap_sums(batch, ref_tokens))
        self.model.load_state_dict(self.hf_state_dict())
        # loss: the last gradient step's (at step 1 it is (r - rbar)^2 / 2 tau whatever the update does)
        return {"loss": losses[-1], "first_step_loss": losses[0], "grad_norm": grad_norms[0], "kl": kl,
                **sampler_gap_metrics(gap)}

    def hf_state_dict(self) -> dict[str, torch.Tensor]:
        """The whole policy in Hugging Face layout, on the CPU (every rank must call it)."""
        self.onload()
        return gather_hf_state_dict(self.gpt, self.model.config, self.layout)

    def offload_to_cpu(self) -> None:
        """Free the device memory the trainer holds between updates (hybrid rollouts run meanwhile)."""
        self.memory.offload()

    def onload(self) -> None:
        """Bring the weights back onto the device (a no-op unless offloaded)."""
        self.memory.onload()

    def reload_from_model(self) -> None:
        """Take the Hugging Face copy's weights (after a warm-up SFT on it) into the GPT model and the optimizer.

        In bf16 the GPT model's weights are rounded, but the optimizer's fp32 main weights are set from the exact
        float32 warm-up weights, not from the rounded ones (the first update would otherwise lose the warm-up's
        low bits).
        """
        self.onload()
        self._set_main_weights(load_hf_state_dict(self.gpt, self.model.state_dict(), self.model.config, self.layout))

    def rank_state(self) -> dict | None:
        """This rank's fp32 main weights in bf16 training (the checkpoint's weights are the bf16-rounded model
        weights, so a resume from them alone would lose the low bits), with the layout that sharded them; None
        in fp32, where the model weights are the main weights."""
        shards = self._main_shards()
        if not shards:
            return None
        return {"layout": asdict(self.layout), "main_weights": [shard.detach().cpu().clone() for shard in shards]}

    def load_rank_state(self, state: dict) -> bool:
        """Take the main weights of rank_state; False (nothing changed) when another layout wrote them."""
        shards, saved = self._main_shards(), state.get("main_weights", [])
        if state.get("layout") != asdict(self.layout) or [s.shape for s in saved] != [s.shape for s in shards]:
            return False
        with torch.no_grad():
            for shard, value in zip(shards, saved):
                shard.copy_(value)
        return True

    def _main_shards(self) -> list[torch.Tensor]:
        """The optimizer's fp32 main copies of this rank's 16-bit weights (its shard of each), in a fixed order;
        readable and writable offloaded too (they then live in host memory), so a checkpoint taken while vLLM
        holds the devices does not bring the trainer back onto them."""
        return [shard for optimizer in getattr(self.optimizer, "chained_optimizers", [self.optimizer])
                for group in getattr(optimizer, "shard_fp32_from_float16_groups", []) for shard in group]

    def _set_main_weights(self, exact: dict[str, torch.Tensor]) -> None:
        """The optimizer's fp32 main weights from `exact` (the Hugging Face weights, unrounded)."""
        exact = {name: tensor.float() for name, tensor in exact.items()}
        for optimizer in getattr(self.optimizer, "chained_optimizers", [self.optimizer]):
            optimizer.reload_model_params(state_dict=exact)

    def _run(self, batch, ref_sequence, rewards, weights: GroupWeights | None, forward_only: bool = False,
             collect=None) -> list[float]:
        """One pass of Megatron's schedule over the batch's micro-batches; returns this rank's loss shares.

        ref_sequence None: each micro-batch's own (detached) log-probs are its reference, right at pi_i only.
        collect(groups, tokens): called with each micro-batch's detached (rows, T-1) token log-probs.
        """
        from megatron.core.pipeline_parallel import get_forward_backward_func

        micro = equal_micro_batches(batch.groups, batch.samples, self.config.micro_batch_size) if batch else [None]
        rows = (micro[0].stop - micro[0].start) * batch.samples if batch else 1
        width = batch.input_ids.shape[1] if batch else 2
        shares: list[float] = []

        def forward_step(data_iterator, model):
            groups = next(data_iterator)
            input_ids = (batch.input_ids[batch.rows(groups)] if groups else torch.zeros(1, 2, dtype=torch.long))
            input_ids = input_ids.to(self.device)
            positions, mask = causal_inputs(input_ids)
            with decoder_output(self.gpt):  # no (rows, T, V/tp) logits: the loss applies the output layer in chunks
                return model(input_ids, positions, mask), partial(loss_function, groups, input_ids)

        def loss_function(groups, input_ids, hidden):
            tokens = token_logprobs_from_hidden(self.gpt, hidden, input_ids, self.vocab_size,
                                                self.config.temperature)  # (rows, T-1), the sampler's T
            if groups is not None and collect is not None:
                collect(groups, tokens.detach())
            if groups is None or forward_only:  # a rank without groups joins the gradient reduction with zeros
                return tokens.sum() * 0.0, {}
            share = self._loss_share(batch, groups, tokens, ref_sequence, rewards, weights)
            shares.append(float(share.detach()))
            # Megatron divides by the micro-batch count and DDP averages over data-parallel replicas:
            # undo both, so the gradient is that of the sum of shares, the mean over all groups.
            return share * self.layout.data_parallel_size * len(micro), {}

        get_forward_backward_func()(
            forward_step_func=forward_step, data_iterator=iter(micro), model=[self.ddp],
            num_microbatches=len(micro), seq_length=width, micro_batch_size=rows, forward_only=forward_only)
        return shares

    def _loss_share(self, batch, groups: slice, tokens, ref_sequence, rewards, weights: GroupWeights):
        """loss(micro-batch groups) * its counted groups / all ranks' (losses.GroupWeights), as TorchTrainer
        computes it."""
        rows = batch.rows(groups)
        size = groups.stop - groups.start
        sequence = (tokens * batch.loss_mask[rows].to(tokens.device)).sum(dim=1).view(size, batch.samples)
        loss, _ = compute_policy_loss(
            self.config.policy_loss, logp=sequence,
            ref_logp=sequence.detach() if ref_sequence is None else ref_sequence[groups].to(tokens.device),
            rewards=rewards[groups].to(tokens.device), valid=batch.valid[groups].to(tokens.device),
            token_counts=batch.token_counts[groups].to(tokens.device), tau=self.config.tau,
            log_z_estimate=self.config.log_z_estimate)
        return loss * weights.share(groups)

    @torch.no_grad()
    def _logprobs(self, batch: PolicyBatch) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Sequence (G, k) and token (N, T-1) log-probs of the whole batch, no grad; None off the last stage."""
        parts: dict[int, torch.Tensor] = {}
        self.ddp.eval()
        self._run(batch, None, None, None, forward_only=True,
                  collect=lambda groups, tokens: parts.__setitem__(groups.start, tokens.cpu()))
        return self._joined(batch, parts)

    @staticmethod
    def _joined(batch: PolicyBatch, parts: dict[int, torch.Tensor]) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Micro-batches' token log-probs by first group -> sequence (G, k) and token (N, T-1) log-probs; None
        off the last pipeline stage, which alone computes them."""
        if not parts:
            return None, None
        tokens = torch.cat([parts[start] for start in sorted(parts)])
        sequence = (tokens * batch.loss_mask).sum(dim=1).view(batch.groups, batch.samples)
        return sequence, tokens

    def _kl(self, batch: PolicyBatch | None, ref_tokens: torch.Tensor | None) -> float:
        """Token-weighted KL estimate of the updated policy from pi_i over every rank's loss tokens."""
        totals = {"kl_sum": 0.0, "kl_tokens": 0.0}
        if batch is not None:
            _, tokens = self._logprobs(batch)
            if tokens is not None:
                mask = batch.loss_mask.bool()
                log_ratio = (tokens - ref_tokens)[mask]
                totals = {"kl_sum": float(k3_terms(log_ratio).sum()), "kl_tokens": float(mask.sum())}
        totals = self._sum_over_replicas(totals)
        return totals["kl_sum"] / max(totals["kl_tokens"], 1.0)  # NaN after a diverged update, shown as such

    def _sum_over_replicas(self, values: dict[str, float], every_rank: bool = False) -> dict[str, float]:
        """Each value summed over data-parallel replicas, on every rank.

        Only one rank per replica contributes (the first tensor-parallel rank of the last stage, which
        holds the loss), unless `every_rank` says the value is already the same on all of a replica's ranks.
        """
        layout = self.layout
        counts = every_rank or (layout.tensor_rank == 0 and layout.last_stage)
        names = sorted(values)
        tensor = torch.tensor([values[name] if counts else 0.0 for name in names], dtype=torch.float64,
                              device=self.device)
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(tensor)
        if every_rank:  # counted once per rank: divide by the ranks in a replica
            tensor /= layout.tensor_parallel_size * layout.pipeline_parallel_size
        return dict(zip(names, tensor.tolist()))
