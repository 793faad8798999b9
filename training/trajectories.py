"""Trajectories built in segments across iterations, their groups, and the replay buffer.

A group is the k responses to one problem. With partial rollouts a response may need several
iterations; every token remembers the iteration that generated it, so the loss can leave out
old segments. A group is trained on once all its responses are finished.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field


@dataclass
class Trajectory:
    prompt_ids: tuple[int, ...]
    response_ids: list[int] = field(default_factory=list)
    token_iterations: list[int] = field(default_factory=list)  # per response token: iteration that made it
    finish_reason: str | None = None  # None while unfinished
    # per response token: its log-prob under the sampler that drew it (NaN where the engine gave none)
    sampler_logprobs: list[float] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def extend(self, token_ids, iteration: int, logprobs=None) -> None:
        """Append a segment made by `iteration`'s policy, with the sampler's log-prob of each token (None: unknown)."""
        if logprobs is not None and len(logprobs) != len(token_ids):
            raise ValueError(f"a segment of {len(token_ids)} tokens came with {len(logprobs)} sampler log-probs")
        self.response_ids.extend(token_ids)
        self.token_iterations.extend([iteration] * len(token_ids))
        self.sampler_logprobs.extend(logprobs if logprobs is not None else [math.nan] * len(token_ids))

    def truncate(self, length: int) -> None:
        """Keep the first `length` response tokens."""
        del self.response_ids[length:], self.token_iterations[length:], self.sampler_logprobs[length:]


@dataclass
class Group:
    problem_index: int
    started_iteration: int
    trajectories: list[Trajectory]
    draw_position: int = 0  # its place among the problems its rank drew in started_iteration (keys its streams)
    drawn_rank: int = 0  # the rank that drew it: with the two above, unique in a run (a resume may move it)

    @property
    def finished(self) -> bool:
        return all(trajectory.finished for trajectory in self.trajectories)

    @property
    def age(self) -> tuple[int, int, int]:
        """Sort key, oldest draw first: (iteration it was drawn in, draw position, rank that drew it)."""
        return self.started_iteration, self.draw_position, self.drawn_rank


FINISH_COUNT_DECAY = 0.5  # weight of an iteration's counts one iteration later


@dataclass
class FinishCounts:
    """Groups rolled out in iterations' rounds and those of them that finished there, fresh ones (drawn in that
    iteration) and continued ones (parked before), over past iterations: each iteration's counts weigh
    FINISH_COUNT_DECAY times less a step later, as response lengths drift."""

    fresh: float = 0.0
    fresh_finished: float = 0.0
    continued: float = 0.0
    continued_finished: float = 0.0

    def record(self, fresh: int, fresh_finished: int, continued: int, continued_finished: int) -> None:
        for name, count in (("fresh", fresh), ("fresh_finished", fresh_finished), ("continued", continued),
                            ("continued_finished", continued_finished)):
            setattr(self, name, getattr(self, name) * FINISH_COUNT_DECAY + count)

    def continued_share(self) -> float:
        """The measured share of continued groups that finished in their round (0 before any was measured)."""
        return self.continued_finished / self.continued if self.continued else 0.0


class ReplayBuffer:
    """Groups whose responses are still being generated, carried to the next iteration, and how often groups
    finished in their round (FinishCounts: how many fresh problems to draw for the open batch slots)."""

    def __init__(self) -> None:
        self.groups: list[Group] = []
        self.finish_counts = FinishCounts()

    def __len__(self) -> int:
        return len(self.groups)

    def park(self, groups: list[Group]) -> None:
        self.groups.extend(groups)

    def take_all(self) -> list[Group]:
        groups, self.groups = self.groups, []
        return groups

    def state_dict(self) -> list[dict]:
        return groups_state(self.groups)

    def load_state_dict(self, state: list[dict], finish_counts: dict[str, float] | None = None) -> None:
        self.groups = groups_from_state(state)
        self.finish_counts = FinishCounts(**finish_counts) if finish_counts else FinishCounts()


def groups_state(groups: list[Group]) -> list[dict]:
    """Groups as plain data, for a checkpoint."""
    return [asdict(group) for group in groups]


def groups_from_state(state: list[dict]) -> list[Group]:
    """The groups of groups_state."""
    return [
        Group(problem_index=item["problem_index"], started_iteration=item["started_iteration"],
              draw_position=item.get("draw_position", 0), drawn_rank=item.get("drawn_rank", 0),
              trajectories=[Trajectory(prompt_ids=tuple(t["prompt_ids"]), response_ids=list(t["response_ids"]),
                                       token_iterations=list(t["token_iterations"]),
                                       finish_reason=t["finish_reason"],
                                       # checkpoints written before the sampler's log-probs were kept: unknown
                                       sampler_logprobs=list(t.get("sampler_logprobs")
                                                             or [math.nan] * len(t["response_ids"])))
              for t in item["trajectories"]])
        for item in state
    ]
