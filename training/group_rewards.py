"""Rewards of finished groups: correctness, length reward (with warm-up), repeat penalty."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from training.length_reward import grouped_length_rewards, length_penalty_weight_at
from training.prompting import decode_response
from training.rewards import CorrectnessRewards
from grading.judgement import counted_wrong_for_truncation
from training.rollout.base import FINISH_LENGTH, FINISH_REPEAT
from training.trajectories import Group
from training.types import PromptRecord, SampleReport


@dataclass(frozen=True)
class ScoredGroups:
    """Per response (G, k): correctness in {0, 1}, total reward, length in tokens, and flags."""

    correct: torch.Tensor
    rewards: torch.Tensor
    lengths: torch.Tensor
    repeated: torch.Tensor
    truncated: torch.Tensor
    length_weight: float
    responses: tuple[str, ...] = ()  # (G * k,) decoded responses, group by group


def score_groups(groups: Sequence[Group], records: Sequence[PromptRecord], tokenizer, config,
                 iteration: int, correctness: CorrectnessRewards) -> ScoredGroups:
    """Verify every response (one cut off at the response limit is wrong under config.truncated_counts_wrong),
    then add the weighted length reward and subtract the repeat penalty."""
    pairs = [(records[group.problem_index], decode_response(t.response_ids, tokenizer, t.prompt_ids))
             for group in groups for t in group.trajectories]
    flat = correctness([record for record, _ in pairs], [response for _, response in pairs])
    correct = torch.tensor(flat, dtype=torch.float32).reshape(len(groups), len(flat) // max(len(groups), 1))
    truncated = torch.tensor([[t.finish_reason == FINISH_LENGTH for t in group.trajectories] for group in groups],
                             dtype=torch.bool).reshape(correct.shape)
    correct = correct * ~counted_wrong_for_truncation(truncated, config.truncated_counts_wrong)
    lengths = torch.tensor([[len(t.response_ids) for t in group.trajectories] for group in groups],
                           dtype=torch.float32)
    repeated = torch.tensor([[t.finish_reason == FINISH_REPEAT for t in group.trajectories] for group in groups])
    weight = length_penalty_weight_at(iteration, config.length_penalty_weight, config.length_penalty_warmup_iterations)
    rewards = correct.clone()
    if weight > 0:
        rewards += weight * grouped_length_rewards(lengths, correct.bool())
    rewards -= config.repeat_penalty * repeated.float()
    return ScoredGroups(correct=correct, rewards=rewards, lengths=lengths, repeated=repeated, truncated=truncated,
                        length_weight=weight, responses=tuple(response for _, response in pairs))


def sample_reports(groups: Sequence[Group], records: Sequence[PromptRecord], scored: ScoredGroups,
                   limit: int) -> list[SampleReport]:
    """The first `limit` scored responses (whole groups first, in batch order) as plain reports."""
    reports: list[SampleReport] = []
    for group_position, group in enumerate(groups):
        record = records[group.problem_index]
        for sample_index in range(len(group.trajectories)):
            if len(reports) >= limit:
                return reports
            flat = group_position * len(group.trajectories) + sample_index
            reports.append(SampleReport(
                prompt_id=record.prompt_id, problem=record.problem, sample_index=sample_index,
                response=scored.responses[flat], reward=float(scored.rewards[group_position, sample_index]),
                correct=bool(scored.correct[group_position, sample_index]),
                response_tokens=int(scored.lengths[group_position, sample_index]),
                truncated=bool(scored.truncated[group_position, sample_index]),
                repeated=bool(scored.repeated[group_position, sample_index])))
    return reports
