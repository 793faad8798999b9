"""An iteration's rollouts with partial rollouts (report §2.6.2): a full batch of finished groups every time.

Round 0 continues the parked groups (one segment of at most the token budget each) and, in the same
engine call, starts fresh problems for the batch slots that neither finished groups fill nor continued ones
are expected to: enough that, at the share of fresh groups that finished in their first round in recent
iterations (the buffer's FinishCounts), they cover the open slots with one standard deviation to spare, so
one round usually fills the batch; no more than the buffer has room to park. While fewer than the rank's
share of `batch_size` groups are finished, later rounds draw fresh problems for the missing slots, sized the
same way, so short responses keep flowing while long ones grow across iterations. The replay buffer is
bounded (`max_parked_groups`): when parking would overflow it, the oldest parked groups are completed now,
without the budget, and fresh problems that find no room are completed too. Groups finished beyond the share
wait, finished, for the next iteration; the oldest finished groups are trained first. Without a token budget
every group finishes in round 0, as in a plain synchronous loop.

Under torchrun every rank runs the same number of rounds (each round draws in lockstep from the shared
sampler, see training.loop.draw_groups); a rank whose share is full draws nothing.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

from training import distributed
from training.collect import CollectedRollouts, RolloutLimits, StreamKey, collect_rollouts
from training.rollout.base import SamplingSettings
from training.trajectories import Group, ReplayBuffer


@dataclass
class IterationRollouts:
    """The rank's finished groups to train on, and what producing them took."""

    finished: list[Group]
    tokens_generated: int = 0
    tokens_saved_by_repeat_stop: int = 0
    rounds: int = 0
    groups_completed_over_budget: int = 0  # groups run to their end, ignoring the budget, to keep the buffer bounded
    stale_groups_dropped: int = 0  # finished groups that waited past the loss's window: no token left to train
    tokens_carried_over: int = 0  # tokens of the trained groups generated before this iteration's rollouts

    def add(self, collected: CollectedRollouts) -> None:
        self.finished += collected.finished
        self.tokens_generated += collected.tokens_generated
        self.tokens_saved_by_repeat_stop += collected.tokens_saved_by_repeat_stop


MIN_FINISH_SHARE = 0.25  # draws are sized as if at least a quarter of fresh groups finish at once

# draw(count, first_position) -> fresh groups; every rank calls it once per round, in lockstep
DrawGroups = Callable[[int, int], list[Group]]


class RolloutsCancelled(Exception):
    """The rollouts were given up between two rounds (the run that wanted them is failing or stopping)."""


def roll_out_iteration(engine, buffer: ReplayBuffer, draw: DrawGroups, share: int, parked_limit: int,
                       settings: SamplingSettings, limits: RolloutLimits, streams: StreamKey,
                       policy_iteration: int | None = None,
                       cancelled: Callable[[], bool] = lambda: False,
                       exclude_segments_older_than: int | None = None) -> IterationRollouts:
    """Roll out until `share` groups are finished; the unfinished rest stays in `buffer`, at most parked_limit.

    policy_iteration: the iteration whose starting policy the engine holds, stamped on every new token
    (None = streams.iteration; rollouts made ahead, during the previous iteration's update, pass that one).
    exclude_segments_older_than: the loss's window (tokens more iterations old than this leave the loss): a
    finished group that waited until none of its tokens is inside it is dropped (counted), so that every
    trained group has tokens in the loss.
    cancelled: asked before every round; True raises RolloutsCancelled (single-process rollouts made ahead
    only: under torchrun every rank must run the same rounds).
    """
    policy_iteration = streams.iteration if policy_iteration is None else policy_iteration
    carried = sorted(buffer.take_all(), key=lambda group: group.age)
    stale = [] if exclude_segments_older_than is None else \
        _stale(carried, streams.iteration - exclude_segments_older_than)
    dropped = {id(group) for group in stale}
    carried = [group for group in carried if id(group) not in dropped]
    carried_tokens = {id(t): len(t.response_ids) for group in carried for t in group.trajectories}
    result = IterationRollouts(finished=[group for group in carried if group.finished],
                               stale_groups_dropped=len(stale))
    pending = [group for group in carried if not group.finished]
    over = max(0, len(pending) - parked_limit)
    complete, budgeted = pending[:over], pending[over:]
    # Fresh problems for the slots that neither finished groups nor those completed now fill, nor continued ones
    # are expected to, enough to cover them at the measured finish share with one standard deviation to spare;
    # those that finish beyond the batch are surplus and wait, finished, for the next iteration. No more are
    # drawn than can park, since a fresh group without room would have to run to its end now.
    counts, continued = buffer.finish_counts, list(budgeted)
    missing = share - len(result.finished) - len(complete) - counts.continued_share() * len(continued)
    room = max(0, parked_limit - len(budgeted))
    fresh = draw(min(refill_count(missing, counts.fresh, counts.fresh_finished, room), room), 0)
    drawn = len(fresh)
    budgeted, complete = _place(fresh, budgeted, complete, parked_limit)
    continued_finished = None  # continued groups that finished in round 0, before any completion was forced
    waiting: list[Group] = []  # unfinished groups that used this iteration's budget
    fresh_rolled = fresh_finished = 0  # this iteration's fresh groups so far, and how many of them finished
    while True:
        if cancelled():
            raise RolloutsCancelled(f"rollouts for iteration {streams.iteration} given up after {result.rounds} "
                                    "round(s)")
        waiting += _roll(engine, budgeted, complete, settings, limits,
                         dataclasses.replace(streams, round=result.rounds), policy_iteration, result)
        completing = {id(group) for group in complete}
        in_budget = [group for group in fresh if id(group) not in completing]
        fresh_rolled += len(in_budget)
        fresh_finished += sum(group.finished for group in in_budget)
        if continued_finished is None:
            continued_finished = sum(group.finished for group in continued)
        result.rounds += 1
        need = share - len(result.finished)
        if not any(count > 0 for count in distributed.all_gather_objects(need)):
            break
        need = max(0, need)
        forced = min(max(0, need - (parked_limit - len(waiting))), len(waiting))
        complete, waiting = waiting[:forced], waiting[forced:]
        room = parked_limit - len(waiting)
        fresh = draw(refill_count(need - forced, counts.fresh + fresh_rolled, counts.fresh_finished + fresh_finished,
                                  room), drawn)
        drawn += len(fresh)
        budgeted, complete = _place(fresh, [], complete, room)
    counts.record(fresh_rolled, fresh_finished, len(continued), continued_finished)
    result.finished.sort(key=lambda group: group.age)
    buffer.park(result.finished[share:] + waiting)  # surplus finished groups wait for the next iteration
    result.finished = result.finished[:share]
    # a repeat cut can end a response inside the tokens it carried over: only those kept count
    result.tokens_carried_over = sum(min(carried_tokens.get(id(t), 0), len(t.response_ids))
                                     for group in result.finished for t in group.trajectories)
    return result


def refill_count(missing: float, fresh_rolled: float, fresh_finished: float, room: int) -> int:
    """Fresh problems to draw for `missing` open slots: enough that their finishers, at the measured share s of
    fresh groups that finished in their first round (1 before anything is measured, at least MIN_FINISH_SHARE),
    are expected to cover the slots with one standard deviation to spare: n s - sqrt(n s (1 - s)) >= missing,
    to first order n = (missing + sqrt(missing (1 - s))) / s. So a further round is seldom needed, and the
    surplus that waits, finished, for the next iteration stays small. Never fewer than `missing`; beyond it only
    as many as the buffer has room to park."""
    if missing <= 0:
        return 0
    share = max(fresh_finished / fresh_rolled if fresh_rolled else 1.0, MIN_FINISH_SHARE)
    wanted = math.ceil((missing + math.sqrt(missing * (1 - share))) / share - 1e-9)
    return max(math.ceil(missing - 1e-9), min(wanted, room))


def _stale(groups: list[Group], oldest_trained: int) -> list[Group]:
    """The finished groups none of whose tokens comes from policy `oldest_trained` or a later one."""
    return [group for group in groups if group.finished and max(
        (t.token_iterations[-1] for t in group.trajectories if t.token_iterations), default=-1) < oldest_trained]


def _place(fresh: list[Group], budgeted: list[Group], complete: list[Group],
           room: int) -> tuple[list[Group], list[Group]]:
    """Fresh groups join the budgeted ones while the buffer has room for them if they park; the rest complete."""
    free = max(0, room - len(budgeted))
    return budgeted + fresh[:free], complete + fresh[free:]


def _roll(engine, budgeted: list[Group], complete: list[Group], settings: SamplingSettings,
          limits: RolloutLimits, streams: StreamKey, policy_iteration: int, result: IterationRollouts) -> list[Group]:
    """One round in one engine call: a segment for the budgeted groups, whole responses for `complete`.

    Returns the groups left unfinished.
    """
    result.groups_completed_over_budget += len(complete)
    if not budgeted and not complete:
        return []
    collected = collect_rollouts(engine, budgeted + complete, settings, limits, policy_iteration, streams,
                                 complete=complete)
    result.add(collected)
    return collected.unfinished
