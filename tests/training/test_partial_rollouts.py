"""Partial rollouts: a response built in segments across iterations equals one uninterrupted rollout."""

from __future__ import annotations

import dataclasses

import pytest

from training.collect import RolloutLimits, collect_rollouts, new_groups
from training.models.loading import load_model, load_tokenizer
from training.prompting import prompt_ids
from training.rollout.base import FINISH_LENGTH, FINISH_REPEAT, FINISH_STOP, SamplingSettings
from training.rollout.repeats import RepeatLimits
from training.rollout.torch_engine import TorchRolloutEngine
from training.tasks.arithmetic import generate
from training.trajectories import FinishCounts, ReplayBuffer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engine_and_prompts(warm_model_dir):
    tokenizer = load_tokenizer(str(warm_model_dir))
    engine = TorchRolloutEngine(load_model(str(warm_model_dir)), tokenizer)
    prompts = [prompt_ids(problem.problem, tokenizer) for problem in generate(6, seed=11)]
    return engine, prompts


def roll(engine, prompts, budget, max_tokens=64, stop_repeats=None):
    """Greedy rollouts of one response per prompt, iterating until every group is finished."""
    buffer, finished, iterations = ReplayBuffer(), [], 0
    groups = new_groups(range(len(prompts)), prompts, iteration=1, samples=1)
    limits = RolloutLimits(max_response_tokens=max_tokens, token_budget=budget, samples_per_problem=1)
    while groups:
        iterations += 1
        collected = collect_rollouts(engine, groups, SamplingSettings(max_tokens, temperature=0.0,
                                                                      stop_repeats=stop_repeats),
                                     limits, iteration=iterations)
        finished += collected.finished
        buffer.park(collected.unfinished)
        groups = buffer.take_all()
    return sorted(finished, key=lambda group: group.problem_index), iterations


def test_segments_across_iterations_equal_one_uninterrupted_greedy_rollout(engine_and_prompts):
    engine, prompts = engine_and_prompts
    whole, whole_iterations = roll(engine, prompts, budget=None)
    pieces, piece_iterations = roll(engine, prompts, budget=5)
    assert whole_iterations == 1 and piece_iterations > 1
    for one, segmented in zip(whole, pieces):
        assert segmented.trajectories[0].response_ids == one.trajectories[0].response_ids
        assert segmented.trajectories[0].finish_reason == one.trajectories[0].finish_reason
    longest = max(pieces, key=lambda group: len(group.trajectories[0].response_ids)).trajectories[0]
    # every token remembers its iteration: 5 tokens per iteration, in order
    assert longest.token_iterations == [1 + index // 5 for index in range(len(longest.response_ids))]


def test_a_repeat_across_segments_stops_where_one_uninterrupted_rollout_stops(untrained):
    """Greedy decoding of the untrained model falls into loops. A decoding call sees only its own tokens, so with
    a budget below the repeat check's span no call can spot a loop by itself: the repeat must still be cut where
    an uninterrupted rollout cuts it, with the same finish reason (and so the same penalty and length)."""
    model, tokenizer = untrained
    engine = TorchRolloutEngine(model, tokenizer)
    prompts = [prompt_ids(problem.problem, tokenizer) for problem in generate(6, seed=11)]
    whole, _ = roll(engine, prompts, budget=None, max_tokens=96, stop_repeats=RepeatLimits())
    assert [group.trajectories[0].finish_reason for group in whole].count(FINISH_REPEAT) >= 3
    for budget in (5, 11, 24):
        segmented, _ = roll(engine, prompts, budget=budget, max_tokens=96, stop_repeats=RepeatLimits())
        assert [(t.response_ids, t.finish_reason) for group in segmented for t in group.trajectories] == \
            [(t.response_ids, t.finish_reason) for group in whole for t in group.trajectories], budget


def test_a_response_reaching_the_limit_is_truncated_not_parked(engine_and_prompts):
    engine, prompts = engine_and_prompts
    finished, _ = roll(engine, prompts, budget=3, max_tokens=4)
    for group in finished:
        trajectory = group.trajectories[0]
        assert len(trajectory.response_ids) <= 4
        assert trajectory.finish_reason in (FINISH_STOP, FINISH_LENGTH)
        if trajectory.finish_reason == FINISH_LENGTH:
            assert len(trajectory.response_ids) == 4


def test_the_replay_buffer_round_trips_through_its_state(engine_and_prompts):
    engine, prompts = engine_and_prompts
    buffer = ReplayBuffer()
    groups = new_groups(range(3), prompts, iteration=1, samples=2)
    collected = collect_rollouts(engine, groups, SamplingSettings(32, temperature=1.0, seed=0),
                                 RolloutLimits(32, token_budget=2, samples_per_problem=2), iteration=1)
    buffer.park(collected.unfinished)
    restored = ReplayBuffer()
    restored.load_state_dict(buffer.state_dict())
    assert restored.state_dict() == buffer.state_dict() and len(restored) == len(buffer) > 0


def test_the_buffer_s_finish_counts_halve_every_iteration_and_round_trip():
    buffer = ReplayBuffer()
    buffer.finish_counts.record(fresh=8, fresh_finished=4, continued=6, continued_finished=3)
    buffer.finish_counts.record(fresh=10, fresh_finished=2, continued=0, continued_finished=0)
    assert buffer.finish_counts == FinishCounts(14.0, 4.0, 3.0, 1.5)  # 8 / 2 + 10, 4 / 2 + 2, 6 / 2, 3 / 2
    assert buffer.finish_counts.continued_share() == 0.5
    restored = ReplayBuffer()
    restored.load_state_dict(buffer.state_dict(), dataclasses.asdict(buffer.finish_counts))
    assert restored.finish_counts == buffer.finish_counts
    restored.load_state_dict([], {})  # a checkpoint from before the counts were kept
    assert restored.finish_counts == FinishCounts() and restored.finish_counts.continued_share() == 0.0


def test_policy_version_metrics_count_the_tokens_the_loss_trains_on():
    """Segments the exclusion leaves out of the loss are not "trained tokens from older policies": with
    exclusion 0 only this iteration's tokens train, so the run is on-policy (share 0, span 0)."""
    from training.iteration_rollouts import IterationRollouts
    from training.loop import iteration_report, rank_results
    from training.trajectories import Group, Trajectory

    trajectory = Trajectory(prompt_ids=(1, 2))
    for made_in, count in ((1, 2), (2, 1), (3, 1)):  # tokens of iterations 1, 1, 2 and 3, trained at 3
        trajectory.extend([7] * count, made_in)
    trajectory.finish_reason = FINISH_STOP
    finished = [Group(problem_index=0, started_iteration=1, trajectories=[trajectory])]

    def report(exclude):
        results = rank_results(IterationRollouts(finished=finished, tokens_generated=1), None, ReplayBuffer(), 3, [],
                               exclude)
        return iteration_report(3, results, {}, 1.0).extra

    everything, recent, on_policy = report(None), report(1), report(0)
    assert (everything["old_policy_token_share"], everything["policy_version_span"]) == (0.75, 2.0)
    assert (recent["old_policy_token_share"], recent["policy_version_span"]) == (0.5, 1.0)
    assert (on_policy["old_policy_token_share"], on_policy["policy_version_span"]) == (0.0, 0.0)


class RepeatingEngine:
    """Every response: 5 distinct tokens, then token 7 forever (a repeat that starts in its first segment)."""

    def generate(self, requests, settings):
        from training.rollout.base import Completion, request_limit

        completions = []
        for request in requests:
            done = len(request.prompt_ids) - 3  # the prompt is 3 tokens; continued rows carry their response
            limit = request_limit(request, settings)
            tokens = ([10, 11, 12, 13, 14] + [7] * 100)[done:done + limit]
            completions.append([Completion(tuple(tokens), (0.0,) * limit, FINISH_LENGTH)
                                for _ in request.sample_seeds])
        return completions


def test_tokens_reused_counts_only_carried_tokens_a_repeat_cut_kept():
    """A parked 20-token response (5 tokens and 15 sevens, not yet a repeat) continues; the repeat found then
    cuts it back to 9 tokens (5 and 4 sevens), all from the first round: 9 reused, not 20."""
    from training.collect import StreamKey
    from training.iteration_rollouts import roll_out_iteration
    from training.trajectories import Group, Trajectory

    settings, limits = SamplingSettings(60, stop_repeats=RepeatLimits()), RolloutLimits(60, 20, 1)
    group = Group(problem_index=0, started_iteration=1, draw_position=0,
                  trajectories=[Trajectory(prompt_ids=(1, 2, 3))])
    buffer = ReplayBuffer()
    buffer.park(collect_rollouts(RepeatingEngine(), [group], settings, limits, 1, StreamKey(0, 1)).unfinished)
    assert [len(parked.trajectories[0].response_ids) for parked in buffer.groups] == [20]
    result = roll_out_iteration(RepeatingEngine(), buffer, lambda count, first: [], share=1, parked_limit=4,
                                settings=settings, limits=limits, streams=StreamKey(0, 2))
    trained = result.finished[0].trajectories[0]
    assert (len(trained.response_ids), trained.finish_reason) == (9, FINISH_REPEAT)
    assert result.tokens_carried_over == 9
