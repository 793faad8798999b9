"""One iteration's rollouts: continue parked responses, start new groups, respect the token budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from training.rollout.base import FINISH_LENGTH, FINISH_REPEAT, RolloutRequest, SamplingSettings
from training.rollout.repeats import cut_repeats
from training.trajectories import Group, ReplayBuffer, Trajectory


@dataclass(frozen=True)
class RolloutLimits:
    max_response_tokens: int
    token_budget: int | None  # per iteration and trajectory; None = finish in one go
    samples_per_problem: int


@dataclass(frozen=True)
class CollectedRollouts:
    finished: list[Group]
    tokens_generated: int


def new_groups(problem_indices: Sequence[int], prompts: Sequence[tuple[int, ...]], iteration: int,
               samples: int) -> list[Group]:
    return [Group(problem_index=int(index), started_iteration=iteration,
                  trajectories=[Trajectory(prompt_ids=prompts[index]) for _ in range(samples)])
            for index in problem_indices]


def _segment_limit(trajectory: Trajectory, limits: RolloutLimits) -> int:
    remaining = limits.max_response_tokens - len(trajectory.response_ids)
    return remaining if limits.token_budget is None else min(remaining, limits.token_budget)


def _requests(groups: list[Group], limits: RolloutLimits) -> tuple[list[RolloutRequest], list[list[Trajectory]]]:
    """Fresh groups ask for k samples of their prompt at once; parked responses continue one by one."""
    requests, targets = [], []
    for group in groups:
        if all(not t.response_ids and not t.finished for t in group.trajectories):
            first = group.trajectories[0]
            requests.append(RolloutRequest(first.prompt_ids, n=len(group.trajectories),
                                           max_new_tokens=_segment_limit(first, limits)))
            targets.append(group.trajectories)
            continue
        for trajectory in group.trajectories:
            if not trajectory.finished:
                requests.append(RolloutRequest(trajectory.prompt_ids + tuple(trajectory.response_ids), n=1,
                                               max_new_tokens=_segment_limit(trajectory, limits)))
                targets.append([trajectory])
    return requests, targets


def _finish_reason(trajectory: Trajectory, engine_reason: str, limits: RolloutLimits, repeat_limits) -> str | None:
    """Why the trajectory is done now, or None when it continues next iteration."""
    if repeat_limits is not None:
        cut = cut_repeats(trajectory.response_ids, **repeat_limits)
        if cut is not None:
            del trajectory.response_ids[len(cut):]
            del trajectory.token_iterations[len(cut):]
            return FINISH_REPEAT
    if engine_reason != FINISH_LENGTH:
        return engine_reason
    if len(trajectory.response_ids) >= limits.max_response_tokens:
        return FINISH_LENGTH  # truncated at the response limit
    return None


def collect_rollouts(engine, groups: list[Group], buffer: ReplayBuffer, settings: SamplingSettings,
                     limits: RolloutLimits, iteration: int, repeat_limits: dict | None) -> CollectedRollouts:
    """Generate one segment for every unfinished response; finished groups are returned, others parked."""
    requests, targets = _requests(groups, limits)
    outputs = engine.generate(requests, settings) if requests else []
    generated = 0
    for trajectories, completions in zip(targets, outputs):
        for trajectory, completion in zip(trajectories, completions):
            trajectory.extend(completion.token_ids, iteration)
            generated += len(completion.token_ids)
            trajectory.finish_reason = _finish_reason(trajectory, completion.finish_reason, limits, repeat_limits)
    finished = [group for group in groups if group.finished]
    buffer.park([group for group in groups if not group.finished])
    return CollectedRollouts(finished=finished, tokens_generated=generated)
