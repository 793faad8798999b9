"""Code judges for benchmark problems: the program is cut out of the response and run on the problem's tests."""

from __future__ import annotations

from typing import Sequence

from evaluation.datasets import BenchmarkProblem
from grading.judgement import Judgement
from grading.programs import CodeTask, judge_programs


def code_task(problem: BenchmarkProblem) -> CodeTask:
    return CodeTask(prompt=problem.prompt, test_cases=problem.test_cases,
                    entry_point=problem.metadata.get("entry_point"))


def judge_benchmark_programs(pairs: Sequence[tuple[BenchmarkProblem, str]], code_judge) -> list[Judgement]:
    """judge_programs over benchmark problems."""
    return judge_programs([(code_task(problem), response) for problem, response in pairs], code_judge)
