"""Code judges for benchmark problems: the program is cut out of the response and run on the problem's tests."""

from __future__ import annotations

from typing import Sequence

from evaluation.datasets import BenchmarkProblem
from grading import programs
from grading.judgement import Judgement


def code_task(problem: BenchmarkProblem) -> programs.CodeTask:
    """The problem's task, read off its prompt and tests exactly as RL rewards read a prompt record's."""
    return programs.code_task(problem.prompt, problem.test_cases)


def judge_benchmark_programs(pairs: Sequence[tuple[BenchmarkProblem, str]], code_judge) -> list[Judgement]:
    """judge_programs over benchmark problems."""
    return programs.judge_programs([(code_task(problem), response) for problem, response in pairs], code_judge)
