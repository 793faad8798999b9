"""Per-token log-probs of a Hugging Face causal LM, the quantity every trainer pass scores."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                   temperature: float = 1.0, position_ids: torch.Tensor | None = None) -> torch.Tensor:
    """(N, T-1) log-prob of each next token under softmax(logits / temperature) of `model`, in float32.

    RL passes the sampling temperature, so the trainer scores responses under the distribution they were drawn from.
    Packed rows pass restarting `position_ids` and no attention mask (training.trainer.packing).
    """
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                   use_cache=False).logits[:, :-1].float()
    if temperature != 1.0:
        logits = logits / temperature
    return torch.gather(F.log_softmax(logits, dim=-1), 2, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
