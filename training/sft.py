"""Long-CoT warm-up SFT on verified traces (the report's section 2.3), whole examples per row.

Each step trains on about `batch_size x block_length` tokens of whole, shuffled examples. Packing-capable models
(training.trainer.packing) take them packed with restarting position ids, so no example attends to another;
others take one right-padded example per row. (Concatenating examples into blocks with attention across them
let a tiny model average the operands of neighbouring problems: docs/demo-design.md.)
"""

from __future__ import annotations

import math
import random
from typing import Callable, Iterator, Sequence

import torch

from training.prompting import prompt_ids, response_ids
from training.trainer.logprobs import token_logprobs
from training.trainer.packing import packed_token_logprobs, packing_supported

Example = tuple[list[int], list[int]]  # (prompt + response ids, loss mask: 1 on response tokens)


def encoded_examples(examples: Sequence[tuple[str, str]], tokenizer, block_length: int) -> list[Example]:
    """(ids, loss mask) of each (prompt, response), cut to block_length tokens."""
    encoded = []
    for problem, response in examples:
        prompt, answer = list(prompt_ids(problem, tokenizer)), list(response_ids(response, tokenizer))
        ids, mask = prompt + answer, [0] * len(prompt) + [1] * len(answer)
        encoded.append((ids[:block_length], mask[:block_length]))
    return encoded


def example_batches(encoded: Sequence[Example], tokens_per_batch: int, seed: int) -> Iterator[list[Example]]:
    """Endless batches of whole examples in shuffled epochs, each batch about `tokens_per_batch` tokens."""
    rng = random.Random(seed)
    batch, tokens = [], 0
    while True:
        order = list(range(len(encoded)))
        rng.shuffle(order)
        for index in order:
            batch.append(encoded[index])
            tokens += len(encoded[index][0])
            if tokens >= tokens_per_batch:
                yield batch
                batch, tokens = [], 0


def batch_loss(model, batch: Sequence[Example], pad_id: int, packs: bool) -> torch.Tensor:
    """Mean next-token cross-entropy over the response tokens of the batch's examples."""
    device = next(model.parameters()).device
    width = max(len(ids) for ids, _ in batch)
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long, device=device)
    loss_mask = torch.zeros((len(batch), width), device=device)
    attention = torch.zeros((len(batch), width), dtype=torch.long, device=device)
    for row, (ids, mask) in enumerate(batch):
        input_ids[row, :len(ids)] = torch.tensor(ids, device=device)
        loss_mask[row, :len(ids)] = torch.tensor(mask, dtype=torch.float, device=device)
        attention[row, :len(ids)] = 1
    if packs:
        logprobs = packed_token_logprobs(model, input_ids, [len(ids) for ids, _ in batch])
    else:
        logprobs = token_logprobs(model, input_ids, attention)
    predicted = loss_mask[:, 1:]
    return -(logprobs * predicted).sum() / predicted.sum().clamp(min=1.0)


def warmup_sft(model, tokenizer, examples: Sequence[tuple[str, str]], steps: int, batch_size: int,
               block_length: int, learning_rate: float, seed: int,
               on_step: Callable[[int, float], None] | None = None) -> list[float]:
    """Train `steps` steps with AdamW, a 20-step linear warm-up and cosine decay; returns each step's loss."""
    batches = example_batches(encoded_examples(examples, tokenizer, block_length), batch_size * block_length, seed)
    packs = packing_supported(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 20) * 0.5 * (1 + math.cos(math.pi * step / steps)))
    model.train()
    losses = []
    for step in range(steps):
        loss = batch_loss(model, next(batches), tokenizer.pad_token_id, packs)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step + 1, losses[-1])
    return losses
