"""Long-CoT warm-up SFT on packed sequences of verified traces (METHOD.md section 2)."""

from __future__ import annotations

import random
from typing import Callable, Iterator, Sequence

import torch

from training.prompting import prompt_ids, response_ids
from training.trainer.logprobs import masked_mean_nll


def packed_blocks(examples: Sequence[tuple[str, str]], tokenizer, block_length: int,
                  seed: int) -> Iterator[tuple[list[int], list[int]]]:
    """Endless (input ids, loss mask) blocks: shuffled prompt+response examples back to back.

    Examples are concatenated without padding (plain packing: attention may cross example
    boundaries, each ending in end-of-sequence); only response tokens carry loss.
    """
    encoded = []
    for problem, response in examples:
        prompt, answer = list(prompt_ids(problem, tokenizer)), list(response_ids(response, tokenizer))
        encoded.append((prompt + answer, [0] * len(prompt) + [1] * len(answer)))
    rng = random.Random(seed)
    tokens, mask = [], []
    while True:
        order = list(range(len(encoded)))
        rng.shuffle(order)
        for index in order:
            tokens.extend(encoded[index][0])
            mask.extend(encoded[index][1])
            while len(tokens) >= block_length:
                yield tokens[:block_length], mask[:block_length]
                tokens, mask = tokens[block_length:], mask[block_length:]


def packed_loss(model, input_ids: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over the masked (response) tokens of packed rows."""
    return masked_mean_nll(model, input_ids, None, loss_mask)


def warmup_sft(model, tokenizer, examples: Sequence[tuple[str, str]], steps: int, batch_size: int,
               block_length: int, learning_rate: float, seed: int,
               on_step: Callable[[int, float], None] | None = None) -> list[float]:
    """Train `steps` steps of packed SFT with AdamW and cosine decay; returns the loss of each step."""
    device = next(model.parameters()).device
    blocks = packed_blocks(examples, tokenizer, block_length, seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda step: min(1.0, (step + 1) / 20) * 0.5 * (1 + torch.cos(torch.tensor(step / steps * 3.14159)).item()))
    model.train()
    losses = []
    for step in range(steps):
        batch = [next(blocks) for _ in range(batch_size)]
        input_ids = torch.tensor([ids for ids, _ in batch], device=device)
        loss_mask = torch.tensor([mask for _, mask in batch], device=device)
        loss = packed_loss(model, input_ids, loss_mask)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step + 1, losses[-1])
    return losses
