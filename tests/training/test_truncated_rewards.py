"""A response cut off at the response limit earns no correctness reward (truncated_counts_wrong), by hand."""

from __future__ import annotations

import dataclasses

import pytest

from common.knobs import parse_config
from training.config import RLConfig
from training.group_rewards import score_groups
from training.long2short.rl import long2short_rl_config
from training.models.loading import load_tokenizer
from training.rewards import CorrectnessRewards
from training.rollout.base import FINISH_LENGTH, FINISH_STOP
from training.trajectories import Group, Trajectory
from training.types import PromptRecord


def scored(tokenizer, truncated_counts_wrong: bool):
    """One group: "Answer: 7" that ended, and a longer response cut off after writing 7 (weight 0.5)."""
    ended = list(tokenizer("Answer: 7", add_special_tokens=False).input_ids) + [tokenizer.eos_token_id]
    cut = list(tokenizer("Answer: 7. Let me check again: 3+4 = 7, so", add_special_tokens=False).input_ids)
    group = Group(problem_index=0, started_iteration=1, trajectories=[
        Trajectory(prompt_ids=(1,), response_ids=ended, finish_reason=FINISH_STOP),
        Trajectory(prompt_ids=(1,), response_ids=cut, finish_reason=FINISH_LENGTH)])
    config = parse_config(RLConfig, {"length_penalty_weight": 0.5, "truncated_counts_wrong": truncated_counts_wrong})
    with CorrectnessRewards() as correctness:
        return score_groups([group], [PromptRecord("p", "3+4", "7")], tokenizer, config, 1, correctness)


@pytest.mark.parametrize("counts_wrong, correct, rewards", [
    # lengths L1 < L2: lambda = [0.5, -0.5]; a correct response gets lambda, a wrong one min(0, lambda)
    (True, [1.0, 0.0], [1 + 0.5 * 0.5, 0 + 0.5 * -0.5]),
    (False, [1.0, 1.0], [1 + 0.5 * 0.5, 1 + 0.5 * -0.5]),
])
def test_a_cut_off_response_gets_no_correctness_reward_unless_the_run_grades_its_text(tiny_model_dir, counts_wrong,
                                                                                     correct, rewards):
    result = scored(load_tokenizer(str(tiny_model_dir)), counts_wrong)
    assert result.truncated.tolist() == [[False, True]]
    assert result.correct.tolist() == [correct]
    assert result.rewards[0].tolist() == pytest.approx(rewards)


def test_long2short_rl_always_counts_cut_off_responses_wrong():
    parent = dataclasses.asdict(parse_config(RLConfig, {"truncated_counts_wrong": False}))
    from training.config.long2short import Long2ShortRLConfig

    config = long2short_rl_config(parse_config(Long2ShortRLConfig, {}), parent, "/models/parent")
    assert config.truncated_counts_wrong is True
    assert config.max_response_tokens == int(parent["max_response_tokens"] * 0.5)


def test_the_one_truncation_rule_reads_bools_and_tensors_alike():
    """grading.judgement.counted_wrong_for_truncation, which every scorer applies: wrong only when cut off and the
    policy says so, elementwise on a tensor of many responses."""
    import torch

    from grading.judgement import counted_wrong_for_truncation

    assert [counted_wrong_for_truncation(cut, policy) for cut in (False, True) for policy in (False, True)] == [
        False, False, False, True]
    cut = torch.tensor([[True, False], [False, True]])
    assert torch.equal(counted_wrong_for_truncation(cut, True), cut)
    assert not counted_wrong_for_truncation(cut, False).any()
