"""Synthetic arithmetic: problems of the RL engine's arithmetic task from its held-out split, which no training
set or warm-up trace draws from (training.tasks.arithmetic.split_of)."""

from __future__ import annotations

from pathlib import Path

from evaluation.benchmarks.judging import EQUIVALENCE
from evaluation.benchmarks.spec import BenchmarkSpec, register
from evaluation.datasets import BenchmarkProblem

SYNTHETIC_SEED = 90_001
SYNTHETIC_PROBLEMS = 200


def load_synthetic_arithmetic(data_dir: Path | None = None, limit: int | None = None) -> list[BenchmarkProblem]:
    """SYNTHETIC_PROBLEMS arithmetic problems, all difficulties; data_dir is not used."""
    from training.tasks.arithmetic import HELD_OUT, generate

    return [BenchmarkProblem(problem_id=problem.problem_id, prompt=problem.problem, answer=problem.answer,
                             metadata={"difficulty": problem.difficulty})
            for problem in generate(limit or SYNTHETIC_PROBLEMS, seed=SYNTHETIC_SEED, split=HELD_OUT)]


SYNTHETIC_ARITHMETIC = BenchmarkSpec(
    name="synthetic-arithmetic",
    read=load_synthetic_arithmetic,
    reads_files=False,
    judge=EQUIVALENCE,
)
register(SYNTHETIC_ARITHMETIC, f"{__name__}:SYNTHETIC_ARITHMETIC")
