"""The one batch type between rollouts, rewards and the update: finished groups as padded tensors."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from training.trajectories import Group


@dataclass
class PolicyBatch:
    """G groups of k responses, flattened group-major to N = G*k rows.

    input_ids, attention_mask: (N, T) prompt + response, right-padded.
    loss_mask: (N, T-1) 1 where position t predicts a response token that takes part in the loss.
    token_counts: (G, k) response tokens in the loss; valid: (G, k) responses with at least one token.
    Every response stays in its group's statistics (mean reward, log Z) even when old-segment exclusion
    leaves none of its tokens in the loss: then its log-ratio is 0 and it adds no gradient of its own.
    sampler_logprobs: (N, T-1) at position t the log-prob the sampler gave the response token t predicts (NaN
    where unknown or not a response token); token_lag: (N, T-1) how many iterations before this one that
    token's policy started (0: the policy being trained; -1 where not a response token).
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    token_counts: torch.Tensor
    valid: torch.Tensor
    groups: int
    samples: int
    sampler_logprobs: torch.Tensor | None = None
    token_lag: torch.Tensor | None = None

    def rows(self, group_slice: slice) -> slice:
        """Row range of a slice of groups."""
        return slice(group_slice.start * self.samples, group_slice.stop * self.samples)

    def longest_first(self) -> torch.Tensor:
        """(G,) group order by each group's longest sequence, longest first (ties keep batch order)."""
        longest = self.attention_mask.sum(dim=1).view(self.groups, self.samples).max(dim=1).values
        return torch.sort(longest, descending=True, stable=True).indices

    def select_groups(self, order: torch.Tensor) -> "PolicyBatch":
        """The batch with its groups in `order` (G,), each group's rows kept together."""
        rows = (order.unsqueeze(1) * self.samples + torch.arange(self.samples)).flatten()
        return PolicyBatch(input_ids=self.input_ids[rows], attention_mask=self.attention_mask[rows],
                           loss_mask=self.loss_mask[rows], token_counts=self.token_counts[order],
                           valid=self.valid[order], groups=self.groups, samples=self.samples,
                           sampler_logprobs=_rows_of(self.sampler_logprobs, rows),
                           token_lag=_rows_of(self.token_lag, rows))


def _rows_of(tensor: torch.Tensor | None, rows: torch.Tensor) -> torch.Tensor | None:
    return None if tensor is None else tensor[rows]


def build_policy_batch(groups: list[Group], pad_id: int, iteration: int,
                       exclude_segments_older_than: int | None) -> PolicyBatch:
    """Pad prompts + responses; mask out prompts, padding and (optionally) segments from old iterations."""
    samples = len(groups[0].trajectories)
    trajectories = [trajectory for group in groups for trajectory in group.trajectories]
    width = max(len(t.prompt_ids) + len(t.response_ids) for t in trajectories)
    input_ids = torch.full((len(trajectories), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(trajectories), width), dtype=torch.long)
    sampler_logprobs = torch.full((len(trajectories), width - 1), float("nan"), dtype=torch.float32)
    token_lag = torch.full((len(trajectories), width - 1), -1, dtype=torch.long)
    for row, trajectory in enumerate(trajectories):
        tokens = list(trajectory.prompt_ids) + trajectory.response_ids
        input_ids[row, :len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        attention[row, :len(tokens)] = 1
        start = len(trajectory.prompt_ids) - 1  # position predicting the first response token
        made = torch.tensor(trajectory.token_iterations, dtype=torch.long)
        token_lag[row, start:start + len(made)] = iteration - made
        known = trajectory.sampler_logprobs[:len(made)]
        sampler_logprobs[row, start:start + len(known)] = torch.tensor(known, dtype=torch.float32)
    loss_mask = token_lag >= 0  # response tokens, minus the segments older than the exclusion keeps
    if exclude_segments_older_than is not None:
        loss_mask &= token_lag <= exclude_segments_older_than
    loss_mask = loss_mask.float()
    token_counts = loss_mask.sum(dim=1).view(len(groups), samples)
    responded = torch.tensor([len(t.response_ids) > 0 for t in trajectories]).view(len(groups), samples)
    return PolicyBatch(input_ids=input_ids, attention_mask=attention, loss_mask=loss_mask,
                       token_counts=token_counts, valid=responded, groups=len(groups), samples=samples,
                       sampler_logprobs=sampler_logprobs, token_lag=token_lag)
