"""Partial rollouts keep batches full: every iteration trains on batch_size finished groups, the buffer stays bounded.

A scripted engine stands in for the model (like lm-eval's DummyLM): a response's length is fixed by its first
token, drawn from its own seed, so lengths are heavy-tailed (most short, some long) and exactly reproducible.
"""

from __future__ import annotations

import dataclasses
import random
import statistics

import torch

from training.batch import build_policy_batch
from training.collect import RolloutLimits, StreamKey
from training.iteration_rollouts import refill_count, roll_out_iteration
from training.rollout.base import SharedDeviceEngine
from training.losses import log_z_baseline, mirror_descent_loss
from training.rollout.base import FINISH_LENGTH, FINISH_STOP, Completion, SamplingSettings, request_limit
from training.trajectories import FinishCounts, Group, ReplayBuffer, Trajectory

EOS, FILLER, PROMPT_LENGTH = 0, 5, 3
SHORT, LONG = 4, 40


class ScriptedEngine(SharedDeviceEngine):
    """Responses of SHORT tokens (first token < 70) or LONG tokens (first token >= 70), ending in EOS."""

    def __init__(self):
        self.calls = 0

    def generate(self, requests, settings):
        self.calls += 1
        results = []
        for request in requests:
            completions = []
            for seed in request.sample_seeds:
                done = list(request.prompt_ids[PROMPT_LENGTH:])
                first = done[0] if done else random.Random(seed).randrange(1, 100)
                target = SHORT if first < 70 else LONG
                tokens = ([first] if not done else []) + [FILLER] * (target - len(done) - 1 - (0 if done else 1))
                tokens = tokens + [EOS]
                limit = request_limit(request, settings)
                finish = FINISH_STOP if len(tokens) <= limit else FINISH_LENGTH
                tokens = tokens[:limit]
                completions.append(Completion(tuple(tokens), (0.0,) * len(tokens), finish))
            results.append(completions)
        return results

    def update_weights(self, model):
        pass

    def close(self):
        pass


def draw_from(counter: list[int], requests: list[tuple[int, int, int]] | None = None):
    """A draw of fresh groups; each call's (iteration, count, first_position) goes to `requests` when given."""
    def draw(count: int, first_position: int) -> list[Group]:
        if requests is not None:
            requests.append((counter[1], count, first_position))
        groups = [Group(problem_index=counter[0] + offset, started_iteration=counter[1], draw_position=first_position
                        + offset, trajectories=[Trajectory(prompt_ids=(1, 2, 3)) for _ in range(2)])
                  for offset in range(count)]
        counter[0] += count
        return groups
    return draw


def round_zero_and_refills(requests: list[tuple[int, int, int]]) -> tuple[dict[int, int], dict[int, int]]:
    """Per iteration, the count of its first draw (round 0's) and the sum of its later ones (refills); a refill
    after a round 0 that drew nothing also starts at draw position 0, so the call order tells them apart."""
    round_zero: dict[int, int] = {}
    refills: dict[int, int] = {}
    for iteration, count, _ in requests:
        if iteration in round_zero:
            refills[iteration] = refills.get(iteration, 0) + count
        else:
            round_zero[iteration] = count
    return round_zero, refills


def run_iterations(iterations: int, batch: int, parked_limit: int, budget: int | None,
                   requests: list[tuple[int, int, int]] | None = None, priors: list[FinishCounts] | None = None,
                   exclude: int | None = None, lag: int = 0, run_seed: int = 0):
    """Each iteration's (rollouts, groups parked after it, unfinished ones among them); `priors` gets the buffer's
    finish counts as each iteration starts. exclude: exclude_segments_older_than; lag 1: rollouts made ahead by
    the previous iteration's policy, as with overlap_rollouts."""
    engine, buffer, counter, results = ScriptedEngine(), ReplayBuffer(), [0, 1], []
    for iteration in range(1, iterations + 1):
        counter[1] = iteration
        if priors is not None:
            priors.append(dataclasses.replace(buffer.finish_counts))
        result = roll_out_iteration(engine, buffer, draw_from(counter, requests), share=batch,
                                    parked_limit=parked_limit,
                                    settings=SamplingSettings(LONG), limits=RolloutLimits(LONG, budget, 2),
                                    streams=StreamKey(run_seed=run_seed, iteration=iteration),
                                    policy_iteration=iteration - lag, exclude_segments_older_than=exclude)
        results.append((result, len(buffer), [g for g in buffer.groups if not g.finished]))
    return results


def test_every_iteration_trains_on_a_full_batch_while_long_responses_wait():
    results = run_iterations(iterations=12, batch=8, parked_limit=16, budget=8)
    for result, _, _ in results:
        assert len(result.finished) == 8
        assert all(group.finished for group in result.finished)
    spans = [max(it - min(t.token_iterations) for g in result.finished for t in g.trajectories)
             for it, (result, _, _) in enumerate(results, start=1)]
    assert max(spans) >= 1, "long responses built over several iterations should reach the batch"
    assert sum(result.rounds for result, _, _ in results) > len(results), "fresh problems refill the batch"


def test_round_zero_draws_for_the_open_slots_sized_by_the_measured_finish_shares():
    """Parked groups continue in round 0 next to fresh problems for the slots that neither finished groups fill
    nor continued ones are expected to, sized by the share of fresh groups that finished at once before; the
    surplus that finishes waits, finished, and is trained first next time."""
    requests: list[tuple[int, int, int]] = []
    priors: list[FinishCounts] = []
    results = run_iterations(iterations=12, batch=8, parked_limit=64, budget=8, requests=requests, priors=priors)
    first_draws, refill_draws = round_zero_and_refills(requests)
    waiting_finished, waiting_unfinished = 0, 0  # groups the previous iteration parked
    for iteration, (result, parked, unfinished) in enumerate(results, start=1):
        prior, room = priors[iteration - 1], 64 - waiting_unfinished
        missing = 8 - waiting_finished - prior.continued_share() * waiting_unfinished
        assert first_draws.get(iteration, 0) == min(refill_count(missing, prior.fresh, prior.fresh_finished, room),
                                                    room)
        assert len(result.finished) == 8
        surplus = parked - len(unfinished)
        refills = refill_draws.get(iteration, 0)
        # the surplus is continued groups that finished, the draw beyond the open slots, or refill draws
        extra = max(0, first_draws.get(iteration, 0) - max(0, 8 - waiting_finished))
        assert surplus <= waiting_unfinished + max(0, waiting_finished - 8) + extra + refills
        waiting_finished, waiting_unfinished = surplus, len(unfinished)
    assert first_draws[1] == 8, "nothing measured yet: the open slots"
    assert any(first_draws[i] > 8 for i in first_draws if i > 1), "later draws are scaled up"
    assert any(first_draws[i] < 8 for i in first_draws if i > 1), "some iteration starts with surplus groups"


def test_sizing_round_zero_by_the_finish_shares_saves_refill_rounds(monkeypatch):
    """Here about half the fresh groups finish at once (each response is short with probability 0.7): drawing
    only the open slots needs a refill round far more often than the sized draw does. One run's mean is noisy
    (1.07-1.33 rounds over seeds), so the means are over eight runs."""
    def mean_rounds() -> float:
        # after the first iterations (parked groups then finish and fill slots too)
        return statistics.mean(result.rounds for seed in range(8) for result, _, _ in run_iterations(
            iterations=30, batch=8, parked_limit=64, budget=8, run_seed=seed)[3:])

    sized = mean_rounds()
    monkeypatch.setattr(FinishCounts, "record", lambda self, *counts: None)  # nothing is ever measured
    unsized = mean_rounds()
    # over 20 seeds: 1.19 against 1.34 rounds
    assert sized <= 1.25 and sized + 0.08 <= unsized


def test_in_the_steady_state_long_responses_are_trained_as_often_as_they_are_drawn():
    """Partial rollouts delay long responses but drop none: after the buffer fills, the share of trained groups
    with a long response is the share drawn, 1 - (69/99)^2 = 0.514 here, as without a budget."""
    def long_share(budget: int | None) -> float:
        trained = [group for result, _, _ in run_iterations(iterations=60, batch=8, parked_limit=64, budget=budget)[20:]
                   for group in result.finished]
        return statistics.mean(any(len(t.response_ids) > SHORT for t in group.trajectories) for group in trained)

    expected = 1 - (69 / 99) ** 2
    partial, whole = long_share(budget=8), long_share(budget=None)  # 0.525 and 0.547 over 320 groups each
    assert abs(partial - expected) < 0.08 and abs(whole - expected) < 0.08


def test_a_draw_covers_the_missing_slots_at_the_finish_share_with_one_standard_deviation_to_spare():
    # half finish: n = (3 + sqrt(3 * 0.5)) / 0.5 = 8.45, so 9; then 9 * 0.5 - sqrt(9 * 0.25) = 3 >= 3
    assert refill_count(3, fresh_rolled=8, fresh_finished=4, room=20) == 9
    assert refill_count(3, fresh_rolled=0, fresh_finished=0, room=20) == 3  # nothing measured yet
    assert refill_count(3, fresh_rolled=8, fresh_finished=8, room=20) == 3  # every fresh group finishes
    assert refill_count(3, fresh_rolled=8, fresh_finished=0, room=20) == 18  # sized at MIN_FINISH_SHARE: 4.5 / 0.25
    assert refill_count(3, fresh_rolled=8, fresh_finished=0, room=5) == 5  # no more than can park
    assert refill_count(3, fresh_rolled=8, fresh_finished=0, room=1) == 3  # but never fewer than the gap
    assert refill_count(2.4, fresh_rolled=8, fresh_finished=8, room=20) == 3  # a fractional gap rounds up
    assert refill_count(0, fresh_rolled=8, fresh_finished=2, room=20) == 0


def test_fresh_groups_are_not_drawn_beyond_the_room_to_park_them():
    requests: list[tuple[int, int, int]] = []
    results = run_iterations(iterations=10, batch=8, parked_limit=3, budget=8, requests=requests)
    round_zero, _ = round_zero_and_refills(requests)
    assert len(round_zero) == len(results) and max(round_zero.values()) <= 3


def test_the_replay_buffer_stays_within_its_bound_by_completing_the_oldest():
    results = run_iterations(iterations=12, batch=8, parked_limit=3, budget=8)
    for result, _, unfinished in results:
        assert len(result.finished) == 8 and len(unfinished) <= 3
    assert sum(result.groups_completed_over_budget for result, _, _ in results) > 0


def test_without_a_budget_one_round_finishes_the_batch():
    for result, parked, _ in run_iterations(iterations=3, batch=8, parked_limit=32, budget=None):
        assert result.rounds == 1 and len(result.finished) == 8 and parked == 0


def test_segment_exclusion_keeps_every_response_in_its_group_baseline():
    """Two short correct responses finished in iteration 1, two long wrong ones finished now (iteration 2)."""
    def trajectory(tokens: int, made_in: int) -> Trajectory:
        return Trajectory(prompt_ids=(1, 2), response_ids=[7] * tokens, token_iterations=[made_in] * tokens,
                          finish_reason=FINISH_STOP)

    group = Group(0, 1, [trajectory(3, 1), trajectory(3, 1), trajectory(9, 2), trajectory(9, 2)])
    batch = build_policy_batch([group], pad_id=0, iteration=2, exclude_segments_older_than=0)
    rewards = torch.tensor([[1.0, 1.0, 0.0, 0.0]])
    assert batch.token_counts.tolist() == [[0.0, 0.0, 9.0, 9.0]]  # the old segments leave the loss
    assert batch.valid.tolist() == [[True, True, True, True]]  # but no response leaves its group
    assert float(log_z_baseline(rewards, batch.valid, 0.1, "mean_reward")) == 0.5
    logp = torch.zeros(1, 4, requires_grad=True)
    loss, _ = mirror_descent_loss(logp, torch.zeros(1, 4), rewards, batch.valid, tau=0.1)
    loss.backward()
    # d loss / d logp_j = -(r_j - 0.5) / k: the wrong responses are pushed down
    assert torch.allclose(logp.grad[0, 2:], torch.tensor([0.125, 0.125]))


def test_reordering_groups_keeps_each_group_s_rows_rewards_and_masks_together():
    def group(lengths: list[int], token: int) -> Group:
        return Group(0, 1, [Trajectory(prompt_ids=(1, 2), response_ids=[token] * n, token_iterations=[1] * n,
                                       finish_reason=FINISH_STOP) for n in lengths])

    batch = build_policy_batch([group([2, 3], 7), group([9, 1], 8), group([5, 5], 9)], pad_id=0, iteration=1,
                               exclude_segments_older_than=None)
    order = batch.longest_first()
    assert order.tolist() == [1, 2, 0]  # longest responses 9, 5, 3
    reordered = batch.select_groups(order)
    assert reordered.input_ids[:2, 2].tolist() == [8, 8] and reordered.input_ids[4:, 2].tolist() == [7, 7]
    assert reordered.token_counts.tolist() == [[9.0, 1.0], [5.0, 5.0], [2.0, 3.0]]
    assert torch.equal(reordered.loss_mask[0], batch.loss_mask[2])


def test_an_overfull_buffer_completes_its_oldest_parked_groups_and_keeps_the_youngest():
    buffer = ReplayBuffer()
    for started in (4, 1, 5, 2, 3):  # parked out of order: age decides, not parking order
        group = Group(problem_index=started, started_iteration=started,
                      trajectories=[Trajectory(prompt_ids=(1, 2, 3)) for _ in range(2)])
        for trajectory in group.trajectories:
            trajectory.extend([75, FILLER, FILLER], started)  # a long response (first token >= 70), 3 tokens in
        buffer.park([group])
    result = roll_out_iteration(ScriptedEngine(), buffer, draw_from([100, 6]), share=2, parked_limit=3,
                                settings=SamplingSettings(LONG), limits=RolloutLimits(LONG, 8, 2),
                                streams=StreamKey(run_seed=0, iteration=6))
    assert [group.started_iteration for group in result.finished] == [1, 2]  # the two oldest, run to their end
    assert all(len(t.response_ids) == LONG for group in result.finished for t in group.trajectories)
    assert result.groups_completed_over_budget == 2
    assert sorted(group.started_iteration for group in buffer.groups) == [3, 4, 5]  # the youngest wait, 8 more each
    assert all(len(t.response_ids) == 3 + 8 for group in buffer.groups for t in group.trajectories)


def test_with_segment_exclusion_every_trained_group_keeps_tokens_in_the_loss():
    """A finished group that waits past the loss's window (exclusion 0: trained in the iteration it finished, or
    never; exclusion 1 with rollouts made ahead, likewise) would fill a batch slot with no token to learn from:
    it is dropped and counted, and the batch is filled with groups that have loss tokens."""
    for exclude, lag in ((0, 0), (1, 1), (1, 0)):
        results = run_iterations(iterations=30, batch=8, parked_limit=32, budget=8, exclude=exclude, lag=lag)
        for iteration, (result, _, _) in enumerate(results, start=1):
            assert len(result.finished) == 8
            batch = build_policy_batch(result.finished, pad_id=0, iteration=iteration,
                                       exclude_segments_older_than=exclude)
            assert (batch.token_counts.sum(dim=1) > 0).all(), (exclude, iteration)
        assert sum(result.stale_groups_dropped for result, _, _ in results) > 0
    assert sum(result.stale_groups_dropped for result, _, _ in run_iterations(30, 8, 32, budget=8)) == 0


def test_continued_groups_count_as_finished_in_their_round_only_when_they_finished_within_the_budget():
    """Continued groups completed in a later round (to keep the buffer bounded) did not finish in their round:
    counting them would inflate the share round 0 expects to finish, and draw too few fresh problems."""
    buffer = ReplayBuffer()
    for started in (1, 2, 3):
        group = Group(problem_index=started, started_iteration=started,
                      trajectories=[Trajectory(prompt_ids=(1, 2, 3)) for _ in range(2)])
        for trajectory in group.trajectories:
            trajectory.extend([75, FILLER, FILLER], started)  # long: 37 tokens still to go, more than a budget
        buffer.park([group])
    roll_out_iteration(ScriptedEngine(), buffer, draw_from([100, 4]), share=4, parked_limit=3,
                       settings=SamplingSettings(LONG), limits=RolloutLimits(LONG, 8, 2),
                       streams=StreamKey(run_seed=0, iteration=4))
    counts = buffer.finish_counts
    assert counts.continued == 3 and counts.continued_finished == 0
