"""Token selection for the torch engine: one random stream per row, the sampler's own log-probs, repeat stops.

Hugging Face `generate` runs the decoding loop and KV cache; these hooks take over what it would
draw at random. Each row samples by inverse CDF with uniforms from its own seeded generator, so a
row's tokens depend on its seed and the model only, never on which other rows share the batch.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from transformers import LogitsProcessor, StoppingCriteria

from training.rollout.repeats import RepeatLimits, repeating_rows


def processed_logprobs(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """(rows, V) float32 logits -> (rows, V) log-probs of softmax(logits / T) restricted to the top-p nucleus.

    The nucleus keeps the most likely tokens until their mass reaches top_p (the one crossing it included);
    temperature 0 means greedy: plain log_softmax(logits), the token is chosen by argmax.
    """
    if temperature > 0:
        logits = logits / temperature
    logprobs = torch.log_softmax(logits, dim=-1)
    if temperature == 0 or top_p >= 1.0:
        return logprobs
    sorted_logprobs, order = logprobs.sort(dim=-1, descending=True)
    mass_before = sorted_logprobs.exp().cumsum(dim=-1) - sorted_logprobs.exp()  # (rows, V) mass of better tokens
    sorted_logprobs = sorted_logprobs.masked_fill(mass_before >= top_p, float("-inf"))
    kept = torch.full_like(logprobs, float("-inf")).scatter(-1, order, sorted_logprobs)
    return torch.log_softmax(kept, dim=-1)


def choose_tokens(logprobs: torch.Tensor, uniforms: torch.Tensor | None) -> torch.Tensor:
    """(rows, V) processed log-probs -> (rows, 1) chosen tokens: by inverse CDF with each row's uniform in [0, 1)
    ((rows,) float64), the first token whose cumulative mass exceeds it (never one of probability 0); argmax when
    uniforms is None (greedy)."""
    if uniforms is None:
        return logprobs.argmax(dim=-1, keepdim=True)
    cdf = logprobs.exp().double().cumsum(dim=-1)
    target = (uniforms * cdf[:, -1]).unsqueeze(1)
    return torch.searchsorted(cdf, target, right=True).clamp(max=cdf.shape[1] - 1)


def row_uniforms(seeds: Sequence[int | None], steps: int, device: torch.device) -> torch.Tensor:
    """(rows, steps) float64 uniforms in [0, 1): row r from numpy's PCG64 seeded with all of seeds[r]'s bits
    (torch's CPU generator keeps only a seed's low 32, so seeds s and s + 2**32 drew the same tokens and two
    of a run's million streams met about a hundred times); None rows from torch's global generator."""
    table = torch.empty((len(seeds), steps), dtype=torch.float64)
    for row, seed in enumerate(seeds):
        if seed is None:
            table[row] = torch.rand(steps, dtype=torch.float64)
        else:
            table[row] = torch.from_numpy(np.random.Generator(np.random.PCG64(seed)).random(steps))
    return table.to(device)


class SeededTokenSampler(LogitsProcessor):
    """Chooses every row's next token itself and hands `generate` a one-hot score (run it with do_sample=False).

    Records each chosen token's log-prob under the processed distribution (after temperature and top-p),
    the sampler's own, in `step_logprobs`.
    """

    def __init__(self, uniforms: torch.Tensor | None, prompt_width: int, temperature: float, top_p: float):
        self.uniforms = uniforms  # (rows, steps); None when greedy
        self.prompt_width = prompt_width
        self.temperature = temperature
        self.top_p = top_p
        self.step_logprobs: list[torch.Tensor] = []  # per step (rows,)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        logprobs = processed_logprobs(scores.float(), self.temperature, self.top_p)
        step = input_ids.shape[1] - self.prompt_width
        chosen = choose_tokens(logprobs, None if self.uniforms is None else self.uniforms[:, step])
        self.step_logprobs.append(logprobs.gather(1, chosen).squeeze(1))
        return torch.full_like(scores, float("-inf")).scatter(1, chosen, 0.0)

    def logprobs(self) -> torch.Tensor:
        """(rows, steps) log-prob of each generated token."""
        return torch.stack(self.step_logprobs, dim=1)


class RepeatStop(StoppingCriteria):
    """Ends a row as soon as its generated tokens end in a degenerate repeat; remembers at which step."""

    def __init__(self, limits: RepeatLimits, prompt_width: int, rows: int, device: torch.device):
        self.limits = limits
        self.prompt_width = prompt_width
        self.stopped_at = torch.full((rows,), -1, dtype=torch.long, device=device)  # step count, -1 = never

    def __call__(self, input_ids: torch.Tensor, scores, **kwargs) -> torch.Tensor:
        generated = input_ids[:, self.prompt_width:]
        found = repeating_rows(generated, self.limits) & (self.stopped_at < 0)
        self.stopped_at[found] = generated.shape[1]
        return found


class RowLimits(StoppingCriteria):
    """Ends each row at its own new-token limit (one generate call serves requests of several limits)."""

    def __init__(self, limits: Sequence[int], prompt_width: int, device: torch.device):
        self.limits = torch.tensor(list(limits), dtype=torch.long, device=device)
        self.prompt_width = prompt_width

    def __call__(self, input_ids: torch.Tensor, scores, **kwargs) -> torch.Tensor:
        return self.limits <= input_ids.shape[1] - self.prompt_width
