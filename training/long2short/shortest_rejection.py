"""Shortest rejection sampling (METHOD.md section 8): sample the long model n times per problem, keep the
shortest correct response of each, and fine-tune the parent on those (prompt, response) pairs."""

from __future__ import annotations

import random
from statistics import mean
from typing import Sequence

import torch

from training.config import ShortestRejectionConfig
from training.long2short.base import KeptSample, Long2ShortHooks, Long2ShortJob, Long2ShortOutcome, Long2ShortStopped
from training.long2short.sampling import JudgedSample, response_ids
from training.trainer.logprobs import masked_mean_nll
from training.types import PromptRecord

SAMPLING_SHARE = 0.5  # of the progress bar; SFT takes the rest

Example = tuple[tuple[int, ...], tuple[int, ...]]  # (prompt ids, response ids ending in end-of-sequence)


def run(config: ShortestRejectionConfig, job: Long2ShortJob, hooks: Long2ShortHooks) -> Long2ShortOutcome:
    """Sample, keep the shortest correct per problem, SFT the parent on the kept responses, save it."""
    from training.long2short.output import load_parent, save_variant_checkpoint
    from training.long2short.sampling import sample_parent

    if not job.records:
        raise ValueError("shortest rejection sampling needs problems: the variant's prompt set is empty")
    torch.manual_seed(config.seed)
    model, tokenizer = load_parent(job)
    hooks.log(f"sampling {config.samples_per_problem} responses to each of {len(job.records)} problems")
    judged = sample_parent(model, tokenizer, job, config, hooks.within(0.0, SAMPLING_SHARE))
    kept = kept_samples(judged)
    if not kept:
        raise ValueError(f"no problem had a correct response among its {config.samples_per_problem} samples, so "
                         "there is nothing to fine-tune on: raise samples_per_problem or max_response_tokens")
    hooks.log(f"kept {len(kept)} of {len(job.records)} problems; SFT for {config.epochs} epoch(s)")
    examples = sft_examples(kept, job.records, tokenizer)
    losses = fine_tune(model, examples, config, tokenizer.pad_token_id, hooks.within(SAMPLING_SHARE, 0.98))
    path, size = save_variant_checkpoint(model, tokenizer, job, "shortest_rejection", config)
    hooks.progress(1.0)
    return Long2ShortOutcome(checkpoint_path=path, size_bytes=size, kept_samples=tuple(kept),
                             metrics=sampling_metrics(judged, kept) | losses)


def kept_samples(judged: Sequence[Sequence[JudgedSample]]) -> list[KeptSample]:
    """Per problem, the shortest correct of its samples (problems with no correct sample keep nothing)."""
    from training.long2short.selection import shortest_correct

    kept = []
    for samples in judged:
        best = shortest_correct(samples)
        if best is not None:
            kept.append(KeptSample(prompt_id=best.prompt_id, response=best.response,
                                   response_tokens=best.response_tokens, samples_drawn=len(samples),
                                   correct_samples=sum(sample.correct for sample in samples),
                                   token_ids=best.token_ids))
    return kept


def sampling_metrics(judged: Sequence[Sequence[JudgedSample]], kept: Sequence[KeptSample]) -> dict[str, float]:
    """Problems, kept problems, sampled accuracy, and mean tokens of all samples against the kept ones."""
    samples = [sample for group in judged for sample in group]
    return {
        "problems": float(len(judged)),
        "kept": float(len(kept)),
        "sampled_accuracy": mean(float(sample.correct) for sample in samples),
        "mean_sampled_tokens": mean(sample.response_tokens for sample in samples),
        "mean_correct_sampled_tokens": mean([s.response_tokens for s in samples if s.correct] or [0.0]),
        "mean_kept_tokens": mean(sample.response_tokens for sample in kept) if kept else 0.0,
    }


def sft_examples(kept: Sequence[KeptSample], records: Sequence[PromptRecord], tokenizer) -> list[Example]:
    """Each kept response after its problem's prompt: the tokens as sampled (decoding and encoding again can
    split the text differently), else, for a sample kept without them, the text encoded plus end-of-sequence."""
    from training.prompting import prompt_ids

    problems = {record.prompt_id: record.problem for record in records}
    return [(tuple(prompt_ids(problems[sample.prompt_id], tokenizer)),
             sample.token_ids or response_ids(sample.response, tokenizer)) for sample in kept]



def padded_batch(examples: Sequence[Example], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded (batch, longest) input ids, attention mask, and loss mask (1 on response tokens)."""
    width = max(len(prompt) + len(response) for prompt, response in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(input_ids)
    loss_mask = torch.zeros_like(input_ids)
    for row, (prompt, response) in enumerate(examples):
        tokens = prompt + response
        input_ids[row, :len(tokens)] = torch.tensor(tokens)
        attention[row, :len(tokens)] = 1
        loss_mask[row, len(prompt):len(tokens)] = 1
    return input_ids, attention, loss_mask


def response_loss(model, examples: Sequence[Example], pad_id: int) -> torch.Tensor:
    """Mean next-token cross-entropy over the response tokens of the examples (one forward pass)."""
    device = next(model.parameters()).device
    input_ids, attention, loss_mask = (tensor.to(device) for tensor in padded_batch(examples, pad_id))
    return masked_mean_nll(model, input_ids, attention, loss_mask)


def fine_tune(model, examples: Sequence[Example], config: ShortestRejectionConfig, pad_id: int,
              hooks: Long2ShortHooks) -> dict[str, float]:
    """`epochs` shuffled passes of AdamW steps over batches of examples; the mean loss of the first and last epoch."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    order, rng = list(range(len(examples))), random.Random(config.seed)
    steps_per_epoch = -(-len(examples) // config.batch_size)
    epoch_losses = []
    model.train()
    for epoch in range(config.epochs):
        rng.shuffle(order)
        losses = []
        for step, start in enumerate(range(0, len(order), config.batch_size)):
            if hooks.should_stop():
                raise Long2ShortStopped(f"stopped during SFT epoch {epoch + 1}")
            loss = response_loss(model, [examples[i] for i in order[start:start + config.batch_size]], pad_id)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(float(loss.detach()))
            hooks.progress((epoch * steps_per_epoch + step + 1) / (config.epochs * steps_per_epoch))
        epoch_losses.append(mean(losses))
        hooks.log(f"SFT epoch {epoch + 1}: mean loss {epoch_losses[-1]:.4f}")
    return {"sft_loss_first_epoch": epoch_losses[0], "sft_loss_last_epoch": epoch_losses[-1]}
