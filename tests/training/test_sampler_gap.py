"""The sampler-trainer gap of an iteration: KL(sampler || pi_i) on the tokens pi_i sampled, and on older ones."""

from __future__ import annotations

import math

import pytest
import torch

from common.knobs import parse_config
from training.batch import build_policy_batch
from training.collect import RolloutLimits, StreamKey, collect_rollouts, new_groups
from training.config import RLConfig
from training.prompting import prompt_ids
from training.rollout.base import SamplingSettings
from training.sampler_gap import sampler_gap_metrics, sampler_gap_sums
from training.trainer.torch_trainer import TorchTrainer
from training.trajectories import Group, Trajectory, groups_from_state, groups_state


def k3(delta: float) -> float:
    return math.exp(delta) - delta - 1


def test_the_gaps_are_k3_means_split_by_the_policy_that_sampled_each_token():
    # iteration 3; prompt (1, 2): position 1 predicts the first response token
    current = Trajectory(prompt_ids=(1, 2), finish_reason="stop")
    current.extend([5, 6], 3, [-1.0, -2.0])
    mixed = Trajectory(prompt_ids=(1, 2), finish_reason="stop")
    mixed.extend([7], 2, [-0.5])  # an older segment
    mixed.extend([8, 9], 3, [-1.5, math.nan])  # the engine gave no log-prob for the last token
    batch = build_policy_batch([Group(0, 2, [current, mixed])], pad_id=0, iteration=3,
                               exclude_segments_older_than=None)
    assert batch.token_lag.tolist() == [[-1, 0, 0, -1], [-1, 1, 0, 0]]
    trainer = torch.zeros(2, 4)
    trainer[0, 1:3] = torch.tensor([-1.0 + 0.1, -2.0 - 0.2])  # the trainer's log-probs: off by +0.1, -0.2
    trainer[1, 1:4] = torch.tensor([-0.5 + 0.3, -1.5, -9.0])
    sums = sampler_gap_sums(batch, trainer)
    assert sums["sampler_kl_tokens"] == 3 and sums["stale_sampler_kl_tokens"] == 1
    metrics = sampler_gap_metrics(sums)
    assert metrics["sampler_kl"] == pytest.approx((k3(0.1) + k3(-0.2) + k3(0.0)) / 3, rel=1e-5)
    assert metrics["stale_sampler_kl"] == pytest.approx(k3(0.3), rel=1e-5)
    assert sampler_gap_metrics(sampler_gap_sums(None, None)) == {}  # no tokens: no metric, not a 0


def test_segments_left_out_of_the_loss_are_left_out_of_the_gaps():
    """exclude_segments_older_than 0 at iteration 3: the older segment (lag 1) trains on nothing, so the stale
    gap has no tokens (it was counted before, unlike old_policy_token_share)."""
    mixed = Trajectory(prompt_ids=(1, 2), finish_reason="stop")
    mixed.extend([7], 2, [-0.5])
    mixed.extend([8], 3, [-1.5])
    batch = build_policy_batch([Group(0, 2, [mixed])], pad_id=0, iteration=3, exclude_segments_older_than=0)
    assert batch.loss_mask.tolist() == [[0, 0, 1]]
    trainer = torch.tensor([[0.0, -0.2, -1.5]])
    sums = sampler_gap_sums(batch, trainer)
    assert (sums["sampler_kl_tokens"], sums["stale_sampler_kl_tokens"]) == (1, 0)


def test_the_sampler_log_probs_move_with_their_rows_when_the_trainer_reorders_groups():
    short, long_ = Trajectory(prompt_ids=(1,), finish_reason="stop"), Trajectory(prompt_ids=(1,), finish_reason="stop")
    short.extend([5], 2, [-0.5])
    long_.extend([6, 7, 8], 1, [-1.0, -2.0, -3.0])
    batch = build_policy_batch([Group(0, 2, [short]), Group(1, 1, [long_])], pad_id=0, iteration=2,
                               exclude_segments_older_than=None)
    reordered = batch.select_groups(batch.longest_first())
    assert reordered.input_ids[0].tolist() == [1, 6, 7, 8]
    assert reordered.sampler_logprobs[0].tolist() == [-1.0, -2.0, -3.0]
    assert reordered.token_lag.tolist() == [[1, 1, 1], [0, -1, -1]]


def test_a_segment_with_the_wrong_number_of_log_probs_is_refused():
    with pytest.raises(ValueError, match="3 tokens came with 2 sampler log-probs"):
        Trajectory(prompt_ids=(1,)).extend([4, 5, 6], 1, [-0.1, -0.2])


def test_a_non_finite_log_prob_leaves_the_gap_out_instead_of_making_it_nan():
    trajectory = Trajectory(prompt_ids=(1,), finish_reason="stop")
    trajectory.extend([4, 5], 1, [float("-inf"), -1.0])  # a token outside the sampler's nucleus
    batch = build_policy_batch([Group(0, 1, [trajectory])], pad_id=0, iteration=1, exclude_segments_older_than=None)
    metrics = sampler_gap_metrics(sampler_gap_sums(batch, torch.tensor([[-2.0, -1.0]])))
    assert metrics == {"sampler_kl": 0.0}


def test_a_checkpoint_keeps_the_sampler_log_probs_and_reads_older_ones_as_unknown():
    trajectory = Trajectory(prompt_ids=(1,), finish_reason=None)
    trajectory.extend([4, 5], 1, [-0.25, -0.75])
    state = groups_state([Group(0, 1, [trajectory])])
    assert groups_from_state(state)[0].trajectories[0].sampler_logprobs == [-0.25, -0.75]
    del state[0]["trajectories"][0]["sampler_logprobs"]  # written before the field existed
    restored = groups_from_state(state)[0].trajectories[0].sampler_logprobs
    assert len(restored) == 2 and all(math.isnan(value) for value in restored)


def trainer_gap(tiny_model_dir, engine_temperature: float, trainer_temperature: float) -> dict[str, float]:
    """One update's metrics on responses the torch engine sampled at `engine_temperature` in iteration 1."""
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.torch_engine import TorchRolloutEngine

    model, tokenizer = load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir))
    limits = RolloutLimits(max_response_tokens=16, token_budget=None, samples_per_problem=4)
    groups = new_groups([0, 1], [prompt_ids("5-2+1", tokenizer), prompt_ids("7+1", tokenizer)], 1, 4)
    collected = collect_rollouts(TorchRolloutEngine(model, tokenizer), groups,
                                 SamplingSettings(16, temperature=engine_temperature), limits, 1,
                                 StreamKey(run_seed=0, iteration=1))
    config = parse_config(RLConfig, {"temperature": trainer_temperature, "micro_batch_size": 4,
                                     "samples_per_problem": 4})
    batch = build_policy_batch(collected.finished, tokenizer.pad_token_id, 1, None)
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0]])
    return TorchTrainer(model, config, torch.device("cpu")).update(batch, rewards)


def test_an_update_reports_a_near_zero_sampler_kl_when_it_scores_the_sampled_distribution(tiny_model_dir):
    matched = trainer_gap(tiny_model_dir, 0.7, 0.7)
    assert 0.0 <= matched["sampler_kl"] < 1e-6 and "stale_sampler_kl" not in matched
    # the metric has teeth: a trainer scoring T = 0.7 samples at T = 1 is far off
    assert trainer_gap(tiny_model_dir, 0.7, 1.0)["sampler_kl"] > 1e-3


@pytest.mark.slow
def test_a_bfloat16_engine_beside_a_float32_trainer_shows_in_the_sampler_kl(warm_model_dir, tmp_path):
    """The RL loop with the torch engine sampling in bfloat16 (rollout_dtype) from the float32 trainer's weights."""
    from training.loop import run
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, RunPaths, TrainingHooks

    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(16, seed=2)]
    gaps = {}
    for dtype in ("float32", "bfloat16"):
        reports = []
        config = parse_config(RLConfig, dict(model=str(warm_model_dir), iterations=2, batch_size=4,
                                             samples_per_problem=4, max_response_tokens=32, learning_rate=1e-3,
                                             rollout_dtype=dtype))
        run(config, records, RunPaths(tmp_path / dtype, tmp_path / "models"),
            TrainingHooks(on_iteration=reports.append))
        gaps[dtype] = [report.extra["sampler_kl"] for report in reports]
    assert all(gap < 1e-6 for gap in gaps["float32"]), gaps
    assert all(bf16 > 1e3 * max(fp32, 1e-12) for bf16, fp32 in zip(gaps["bfloat16"], gaps["float32"])), gaps
