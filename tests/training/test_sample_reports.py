"""Iteration reports carry up to `stored_samples_per_iteration` trained responses for the sample browser."""

from __future__ import annotations

import pytest
import torch

from common.knobs import parse_config
from training.config import RLConfig
from training.backends import noop_test
from training.loop import run
from training.rollout.base import FINISH_LENGTH, FINISH_REPEAT, FINISH_STOP
from training.group_rewards import ScoredGroups, sample_reports
from training.tasks.arithmetic import generate
from training.trajectories import Group, Trajectory
from training.types import PromptRecord, SampleReport, TrainingHooks

RECORDS = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
           for p in generate(8, seed=5)]


def fake_batch() -> tuple[list[Group], ScoredGroups]:
    """Two groups of two responses, for problems 3 and 1; the second group's responses are truncated/repeated."""
    groups = [
        Group(problem_index=3, started_iteration=1, trajectories=[
            Trajectory(prompt_ids=(1,), response_ids=[5, 6, 7], finish_reason=FINISH_STOP),
            Trajectory(prompt_ids=(1,), response_ids=[5], finish_reason=FINISH_STOP)]),
        Group(problem_index=1, started_iteration=1, trajectories=[
            Trajectory(prompt_ids=(2,), response_ids=[8] * 4, finish_reason=FINISH_LENGTH),
            Trajectory(prompt_ids=(2,), response_ids=[9] * 2, finish_reason=FINISH_REPEAT)]),
    ]
    scored = ScoredGroups(
        correct=torch.tensor([[1.0, 0.0], [0.0, 0.0]]), rewards=torch.tensor([[0.75, -0.25], [0.0, -0.5]]),
        lengths=torch.tensor([[3.0, 1.0], [4.0, 2.0]]), repeated=torch.tensor([[False, False], [False, True]]),
        truncated=torch.tensor([[False, False], [True, False]]), length_weight=0.5,
        responses=("a b c", "a", "d d d d", "e e"))
    return groups, scored


def test_sample_reports_take_the_first_responses_with_their_scores():
    groups, scored = fake_batch()
    reports = sample_reports(groups, RECORDS, scored, limit=3)
    assert reports == [
        SampleReport(prompt_id=RECORDS[3].prompt_id, problem=RECORDS[3].problem, sample_index=0, response="a b c",
                     reward=0.75, correct=True, response_tokens=3, truncated=False, repeated=False),
        SampleReport(prompt_id=RECORDS[3].prompt_id, problem=RECORDS[3].problem, sample_index=1, response="a",
                     reward=-0.25, correct=False, response_tokens=1, truncated=False, repeated=False),
        SampleReport(prompt_id=RECORDS[1].prompt_id, problem=RECORDS[1].problem, sample_index=0, response="d d d d",
                     reward=0.0, correct=False, response_tokens=4, truncated=True, repeated=False),
    ]


def test_sample_reports_stop_at_the_batch_or_at_zero():
    groups, scored = fake_batch()
    assert [report.repeated for report in sample_reports(groups, RECORDS, scored, limit=64)] == \
        [False, False, False, True]
    assert sample_reports(groups, RECORDS, scored, limit=0) == []


@pytest.mark.parametrize("stored, expected", [(64, 4), (3, 3), (0, 0)])
def test_the_noop_engine_reports_synthetic_samples(run_paths, stored, expected):
    reports = []
    config = parse_config(RLConfig, {"trainer_backend": "noop-test", "iterations": 2, "batch_size": 2,
                                     "samples_per_problem": 2, "stored_samples_per_iteration": stored})
    noop_test.run(config, RECORDS[:3], run_paths, TrainingHooks(on_iteration=reports.append))
    assert [len(report.samples) for report in reports] == [expected, expected]
    for report in reports:
        assert all(1 <= sample.response_tokens <= config.max_response_tokens for sample in report.samples)
        assert [sample.sample_index for sample in report.samples] == [0, 1, 0, 1][:expected]


def test_the_loop_reports_the_responses_it_trained_on(run_paths):
    """With every response stored, the samples reproduce the iteration's accuracy and mean length."""
    reports = []
    config = parse_config(RLConfig, {"iterations": 2, "batch_size": 2, "samples_per_problem": 2,
                                     "max_response_tokens": 8, "checkpoint_every_iterations": 2, "seed": 1})
    run(config, RECORDS, run_paths, TrainingHooks(on_iteration=reports.append))
    prompt_ids = {record.prompt_id for record in RECORDS}
    for report in reports:
        samples = report.samples
        assert len(samples) == 4
        assert {sample.prompt_id for sample in samples} <= prompt_ids
        assert sum(sample.correct for sample in samples) / 4 == pytest.approx(report.train_accuracy)
        assert sum(sample.response_tokens for sample in samples) / 4 == pytest.approx(report.mean_response_length)
        assert sum(sample.reward for sample in samples) / 4 == pytest.approx(report.extra["mean_reward"])
        assert all(sample.response_tokens == 8 for sample in samples if sample.truncated)


def test_the_loop_stores_no_samples_when_the_knob_is_zero(run_paths):
    reports = []
    config = parse_config(RLConfig, {"iterations": 1, "batch_size": 2, "samples_per_problem": 2,
                                     "max_response_tokens": 8, "stored_samples_per_iteration": 0})
    run(config, RECORDS, run_paths, TrainingHooks(on_iteration=reports.append))
    assert [report.samples for report in reports] == [()]


def test_ranks_share_the_stored_samples_and_the_merge_keeps_rank_order():
    from types import SimpleNamespace

    from training.iteration_rollouts import IterationRollouts
    from training.loop import merge_results, rank_results, stored_samples
    from training.trajectories import ReplayBuffer

    groups, scored = fake_batch()
    config = SimpleNamespace(stored_samples_per_iteration=3)
    parts = []
    for rank in (0, 1):
        session = SimpleNamespace(config=config, records=RECORDS, context=SimpleNamespace(rank=rank, world_size=2))
        samples = stored_samples(session, groups, scored)
        parts.append(rank_results(IterationRollouts(finished=groups, tokens_generated=10), scored,
                                  buffer=ReplayBuffer(), iteration=1, samples=samples))
    assert [len(part.samples) for part in parts] == [2, 1]  # 3 split as 2 + 1
    merged = merge_results(parts)
    assert [sample.response for sample in merged.samples] == ["a b c", "a", "a b c"]
    assert stored_samples(session, groups, None) == []
