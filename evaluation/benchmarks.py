"""Built-in benchmarks: how each one's problems are loaded, asked and judged."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evaluation.datasets import BenchmarkProblem, load_benchmark
from evaluation.judges.mathvista import mathvista_question

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
FUNCTION_INSTRUCTION = "Complete the Python function above. Reply with the whole function in a ```python block."
# The synthetic benchmark: problems of the RL engine's arithmetic task from a seed no recipe trains on.
SYNTHETIC_SEED = 90_001
SYNTHETIC_PROBLEMS = 200


@dataclass(frozen=True)
class BenchmarkSpec:
    """One built-in benchmark. judge names a judge of evaluation.builtin_runner (equivalence, integer, code, mathvista).

    plain_prompt: for models without a chat template, the problem text is the whole prompt (code to complete)
    rather than the "Problem: ...\\nSolution:" template.
    """

    load: Callable[..., list[BenchmarkProblem]]  # (data_dir, limit, fetch_missing)
    judge: str
    instruction: str = BOXED_INSTRUCTION
    question: Callable[[BenchmarkProblem], str] = lambda problem: problem.prompt
    plain_prompt: bool = False
    needs_images: bool = False
    test_set: str | None = None  # code benchmarks: which tests are run (recorded with the result)


def load_synthetic_arithmetic(data_dir: Path, limit: int | None = None,
                              fetch_missing: bool = False) -> list[BenchmarkProblem]:
    """SYNTHETIC_PROBLEMS arithmetic problems, all difficulties; data_dir is not used."""
    from training.tasks.arithmetic import generate

    return [BenchmarkProblem(problem_id=problem.problem_id, prompt=problem.problem, answer=problem.answer,
                             metadata={"difficulty": problem.difficulty})
            for problem in generate(limit or SYNTHETIC_PROBLEMS, seed=SYNTHETIC_SEED)]


def from_files(name: str) -> Callable[..., list[BenchmarkProblem]]:
    """The loader of a benchmark stored in files (fetched from the hub first when asked and missing)."""
    return lambda data_dir, limit=None, fetch_missing=False: load_benchmark(name, data_dir, limit, fetch_missing)


# Judges that compare an extracted final answer with the reference (evaluation.builtin_runner.ANSWER_RULES): their
# benchmarks take an extraction policy and a grader mode (the CoT judge model).
ANSWER_JUDGES = ("equivalence", "integer")

BUILTIN_BENCHMARKS: dict[str, BenchmarkSpec] = {
    "aime24": BenchmarkSpec(from_files("aime24"), judge="integer"),
    "aime25": BenchmarkSpec(from_files("aime25"), judge="integer"),
    "amc23": BenchmarkSpec(from_files("amc23"), judge="equivalence"),
    "math500": BenchmarkSpec(from_files("math500"), judge="equivalence"),
    "gsm8k": BenchmarkSpec(from_files("gsm8k"), judge="equivalence"),
    "livecodebench": BenchmarkSpec(from_files("livecodebench"), judge="code", instruction="", test_set="public"),
    "humaneval": BenchmarkSpec(from_files("humaneval"), judge="code", instruction=FUNCTION_INSTRUCTION,
                               plain_prompt=True, test_set="full"),
    "mathvista": BenchmarkSpec(from_files("mathvista"), judge="mathvista", instruction="",
                               question=mathvista_question, needs_images=True),
    "synthetic-arithmetic": BenchmarkSpec(load_synthetic_arithmetic, judge="equivalence"),
}


def grades_final_answers(benchmark: str) -> bool:
    """Whether the benchmark is judged on an extracted final answer (lm-eval tasks and code are not)."""
    spec = BUILTIN_BENCHMARKS.get(benchmark)
    return spec is not None and spec.judge in ANSWER_JUDGES
