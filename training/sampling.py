"""Problem samplers of METHOD.md section 5: uniform, curriculum (easy to hard), prioritized (1 - s_i)
and warmup_then_hard (the report's curriculum ablation, figure 9: the whole set, then hard problems only).

Every sampler records each problem's observed success as a count-weighted running mean
(`update`), gives a probability per problem for an iteration (counted from 1), draws indices
with a caller's numpy Generator, and saves its state so a resumed run draws the same problems.
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

from training.registries import samplers

DIFFICULTY_LADDER = ("easy", "medium", "hard", "expert")
# Other datasets' names for the ladder's rungs (APPS, TACO), by rank on it; matched lowercased, "-" and " " as "_"
LADDER_SYNONYMS = {"introductory": 0.0, "interview": 1.0, "competition": 2.0, "medium_hard": 1.5, "very_hard": 3.0}
# Labels that say the difficulty is unknown: treated as unlabelled (never hard, last in a curriculum)
UNKNOWN_DIFFICULTY = frozenset({"unknown", "unknown_difficulty", "unlabeled", "unlabelled", "none", "n/a", "?"})
UNLABELLED = 3  # difficulty_sort_key's class of unlabelled problems


class ProblemSampler:
    """Shared parts: success bookkeeping, drawing indices and state."""

    draws_with_replacement = False  # a batch's draws are independent (True) or distinct problems (False)

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"a sampler needs at least one problem; got n={n}")
        self.n = n
        self.success_sum = np.zeros(n, dtype=np.float64)  # (n,) sum of observed success rates
        self.observations = np.zeros(n, dtype=np.float64)  # (n,) how many were observed

    def success_rates(self) -> np.ndarray:
        """(n,) running mean of observed success; 0 for a problem never observed."""
        return np.divide(self.success_sum, self.observations, out=np.zeros(self.n),
                         where=self.observations > 0)

    def update(self, indices: Sequence[int], success_rates: Sequence[float]) -> None:
        """Record one observation per entry: indices (m,) problems, success_rates (m,) in [0, 1]."""
        indices = np.asarray(indices, dtype=np.int64)
        rates = np.asarray(success_rates, dtype=np.float64)
        if indices.shape != rates.shape or indices.ndim != 1:
            raise ValueError(f"indices and success_rates must be (m,) arrays of one length; "
                             f"got {indices.shape} and {rates.shape}")
        if indices.size and (indices.min() < 0 or indices.max() >= self.n):
            raise ValueError(f"problem indices must lie in [0, {self.n}); got {indices.tolist()}")
        if not np.all((rates >= 0) & (rates <= 1)):
            raise ValueError(f"success rates must lie in [0, 1]; got {rates.tolist()}")
        np.add.at(self.success_sum, indices, rates)  # an index drawn twice counts twice
        np.add.at(self.observations, indices, 1.0)

    def probabilities(self, iteration: int) -> np.ndarray:
        """(n,) probability of drawing each problem at `iteration`; sums to 1."""
        raise NotImplementedError

    def sample(self, iteration: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """(count,) problem indices; without replacement when the sampler's draws are distinct problems and
        enough problems have probability > 0, else each draw independent."""
        probabilities = self.probabilities(iteration)
        replace = self.draws_with_replacement or count > int(np.count_nonzero(probabilities))
        return rng.choice(self.n, size=max(count, 0), replace=replace, p=probabilities).astype(np.int64)

    def state_dict(self) -> dict[str, Any]:
        """Plain (JSON-ready) state."""
        return {"n": self.n, "success_sum": self.success_sum.tolist(), "observations": self.observations.tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["n"] != self.n:
            raise ValueError(f"the saved sampler covers {state['n']} problems, this one {self.n}")
        self.success_sum = np.asarray(state["success_sum"], dtype=np.float64).copy()
        self.observations = np.asarray(state["observations"], dtype=np.float64).copy()


class UniformSampler(ProblemSampler):
    """Every problem equally likely."""

    @classmethod
    def from_records(cls, records: Sequence[Any], curriculum_iterations: int, **_hardness: Any) -> "UniformSampler":
        return cls(len(records))

    def probabilities(self, iteration: int) -> np.ndarray:
        return np.full(self.n, 1.0 / self.n)


def natural_key(text: str) -> tuple:
    """'Level 10' -> (('t', 'level '), ('n', 10)): runs of digits compare as numbers, so Level 2 < Level 10."""
    return tuple(("n", int(part)) if part.isdigit() else ("t", part.lower())
                 for part in re.split(r"(\d+)", text) if part)


def difficulty_sort_key(label: str) -> tuple:
    """Orders labels: the ladder (easy < medium < hard < expert, with APPS' introductory < interview <
    competition and TACO's medium_hard and very_hard on it), then numbers, then others A-Z with their numbers
    in order ("Level 2" before "Level 10"), then unlabelled
    ("" or a label saying the difficulty is unknown)."""
    text = (label or "").strip()
    lowered = text.lower().replace("-", "_").replace(" ", "_")
    if lowered in DIFFICULTY_LADDER:
        return (0, float(DIFFICULTY_LADDER.index(lowered)), ())
    if lowered in LADDER_SYNONYMS:
        return (0, LADDER_SYNONYMS[lowered], ())
    if lowered in UNKNOWN_DIFFICULTY:
        text = ""
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if math.isfinite(number):
        return (1, number, ())
    if text:
        return (2, 0.0, natural_key(text))
    return (UNLABELLED, 0.0, ())  # unlabelled problems come last: their difficulty is unknown


class CurriculumSampler(ProblemSampler):
    """Uniform over a pool that widens from the easiest difficulty level to all of them.

    With L levels, the pool at iteration t holds the levels with index < ceil(L * min(1, t / T)),
    at least one, where T is `curriculum_iterations`.
    """

    def __init__(self, difficulties: Sequence[str], curriculum_iterations: int):
        super().__init__(len(difficulties))
        if curriculum_iterations < 1:
            raise ValueError(f"curriculum_iterations must be at least 1; got {curriculum_iterations}")
        self.curriculum_iterations = curriculum_iterations
        keys = [difficulty_sort_key(label) for label in difficulties]
        named = {}  # each level's first label: labels of one rung (easy, introductory) share a level
        for key, label in zip(keys, difficulties):
            named.setdefault(key, (label or "").strip())
        ordered = sorted(named)
        self.levels = [named[key] for key in ordered]
        level_of = {key: index for index, key in enumerate(ordered)}
        self.level_index = np.array([level_of[key] for key in keys], dtype=np.int64)  # (n,)

    @classmethod
    def from_records(cls, records: Sequence[Any], curriculum_iterations: int,
                     **_hardness: Any) -> "CurriculumSampler":
        return cls([record.difficulty for record in records], curriculum_iterations)

    def levels_open_at(self, iteration: int) -> int:
        """How many of the easiest levels are in the pool at `iteration`."""
        step = min(max(iteration, 0), self.curriculum_iterations)
        opened = -(-len(self.levels) * step // self.curriculum_iterations)  # exact integer ceil
        return max(1, opened)

    def probabilities(self, iteration: int) -> np.ndarray:
        in_pool = self.level_index < self.levels_open_at(iteration)
        return in_pool / in_pool.sum()


class PrioritizedSampler(ProblemSampler):
    """Probability proportional to 1 - s_i, with s_i the running mean success; uniform when all are solved.

    A prior pass rate counts as one observation; a None prior means no observation (s_i = 0). Every draw of a
    batch has these probabilities (with replacement: a hard problem may come twice, each draw with its own
    random stream); drawing distinct problems flattened them (20 problems, batch 16, s_i from 0 to 0.95:
    the hardest drawn 5.2 times as often as the easiest instead of 20).
    """

    draws_with_replacement = True

    def __init__(self, n: int, initial_success: Sequence[float | None] | None = None):
        super().__init__(n)
        if initial_success is not None:
            if len(initial_success) != n:
                raise ValueError(f"initial_success has {len(initial_success)} entries for {n} problems")
            given = [(index, rate) for index, rate in enumerate(initial_success) if rate is not None]
            if given:
                indices, rates = zip(*given)
                self.update(list(indices), list(rates))

    @classmethod
    def from_records(cls, records: Sequence[Any], curriculum_iterations: int,
                     **_hardness: Any) -> "PrioritizedSampler":
        return cls(len(records), [record.pass_rate for record in records])

    def probabilities(self, iteration: int) -> np.ndarray:
        weights = np.clip(1.0 - self.success_rates(), 0.0, None)  # (n,); clip guards rounding above 1
        total = weights.sum()
        if total <= 0:
            return np.full(self.n, 1.0 / self.n)
        return weights / total


def hard_by_difficulty(difficulties: Sequence[str]) -> np.ndarray:
    """(n,) bool: the problems whose label is in the upper half of the labelled difficulty levels.

    Levels are the distinct labels ordered by `difficulty_sort_key` (easy < medium < hard < expert, then
    numbers, then other labels A-Z); with L levels the top max(1, L // 2) are hard (the ladder: hard and
    expert). Unlabelled ("") problems are never hard: their difficulty is unknown.
    """
    keys = [key if key[0] != UNLABELLED else None for key in map(difficulty_sort_key, difficulties)]
    levels = sorted({key for key in keys if key is not None})
    hard_levels = set(levels[len(levels) - max(1, len(levels) // 2):]) if levels else set()
    return np.array([key in hard_levels for key in keys], dtype=bool)


def hard_by_pass_rate(pass_rates: Sequence[float | None], threshold: float) -> np.ndarray:
    """(n,) bool: the problems with a measured pass rate <= threshold (a high pass rate is easy).

    A problem without a pass rate (None) is never hard: its difficulty is unknown.
    """
    return np.array([rate is not None and rate <= threshold for rate in pass_rates], dtype=bool)


class WarmupThenHardSampler(ProblemSampler):
    """The report's curriculum ablation (figure 9): uniform over every problem for iterations 1..N, then
    uniform over the hard problems only from iteration N + 1 on, where N is `curriculum_iterations`.

    `hard` is an (n,) bool mask (see `hard_by_difficulty` and `hard_by_pass_rate`); it is fixed when the
    sampler is built, from the prompt set's labels or pass rates, not from the success seen in training.
    """

    def __init__(self, hard: Sequence[bool], curriculum_iterations: int):
        hard = np.asarray(hard, dtype=bool)
        super().__init__(len(hard))
        if curriculum_iterations < 1:
            raise ValueError(f"curriculum_iterations must be at least 1; got {curriculum_iterations}")
        if not hard.any():
            raise ValueError("warmup_then_hard needs at least one hard problem; none is")
        self.curriculum_iterations = curriculum_iterations
        self.hard = hard  # (n,)

    @classmethod
    def from_records(cls, records: Sequence[Any], curriculum_iterations: int, hard_problems_by: str = "difficulty",
                     hard_pass_rate_threshold: float = 0.5, **_hardness: Any) -> "WarmupThenHardSampler":
        if hard_problems_by == "difficulty":
            hard = hard_by_difficulty([record.difficulty for record in records])
            why = ("no problem has a difficulty label (unlabelled problems are never hard); label the prompts or "
                   "set hard_problems_by to pass_rate")
        elif hard_problems_by == "pass_rate":
            hard = hard_by_pass_rate([record.pass_rate for record in records], hard_pass_rate_threshold)
            why = (f"no problem has a pass rate <= hard_pass_rate_threshold ({hard_pass_rate_threshold:g}; problems "
                   f"without a pass rate are never hard); raise hard_pass_rate_threshold or set hard_problems_by "
                   f"to difficulty")
        else:
            raise ValueError(f"unknown hard_problems_by {hard_problems_by!r}; choose difficulty or pass_rate")
        if len(records) and not hard.any():
            raise ValueError(f"warmup_then_hard with hard_problems_by={hard_problems_by}: {why}")
        return cls(hard, curriculum_iterations)

    def probabilities(self, iteration: int) -> np.ndarray:
        if iteration <= self.curriculum_iterations:
            return np.full(self.n, 1.0 / self.n)
        return self.hard / self.hard.sum()

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "hard": np.flatnonzero(self.hard).tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        if "hard" in state and state["hard"] != np.flatnonzero(self.hard).tolist():
            raise ValueError("the saved sampler's hard problems differ from this one's (the prompts' labels or pass "
                             "rates, or hard_problems_by / hard_pass_rate_threshold, changed)")


def make_sampler(strategy: str, records: Sequence[Any], curriculum_iterations: int, *,
                 hard_problems_by: str = "difficulty", hard_pass_rate_threshold: float = 0.5) -> ProblemSampler:
    """The sampler named `strategy` over `records` (objects with .difficulty and .pass_rate).

    `hard_problems_by` and `hard_pass_rate_threshold` choose the hard problems of warmup_then_hard; the other
    strategies ignore them.
    """
    return samplers.get(strategy).from_records(records, curriculum_iterations, hard_problems_by=hard_problems_by,
                                               hard_pass_rate_threshold=hard_pass_rate_threshold)
