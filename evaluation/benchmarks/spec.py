"""What a built-in benchmark is (BenchmarkSpec), and the registry each benchmark module registers its specs in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from common.registry import Registry
from evaluation.benchmarks.judging import AnswerJudge, Judge
from evaluation.datasets import BenchmarkProblem, DatasetMissing
from evaluation.datasets.hub import HubSource, fetch_files

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."

Loader = Callable[..., list[BenchmarkProblem]]  # (data_dir: Path, limit: int | None = None) -> problems

# name -> "evaluation.benchmarks.<module>:<SPEC>"; the package __init__ imports every benchmark module.
benchmark_registry = Registry("benchmark")


# Where a base model's response on the plain "Problem: ...\nSolution:" template ends: it runs on into a next problem.
PLAIN_TEMPLATE_STOPS = ("\nProblem:",)


@dataclass(frozen=True)
class LmEvalTask:
    """A benchmark as an lm-evaluation-harness task (evaluation.lm_eval_tasks writes its YAML config)."""

    name: str  # "mirrorlab_<benchmark>"
    data_file: str  # relative to the data dir (the layout of shared/datasets)
    process_docs: str  # function in evaluation/lm_eval_tasks/utils.py: raw records -> {problem_id, problem, answer}
    answer_kind: str  # "integer" (AIME: compared as integers) or "math" (grading.verifier equivalence)
    description: str


@dataclass(frozen=True)
class BenchmarkSpec:
    """One built-in benchmark: how its problems are loaded, asked and judged.

    read: the benchmark's loader, (data_dir, limit) -> problems; reads_files False when it makes the problems
    in code (data_dir is not read). hub: where its files come from on the Hugging Face hub.
    plain_prompt: for models without a chat template, the problem text is the whole prompt (code to complete)
    rather than the "Problem: ...\\nSolution:" template.
    plain_stops: for models without a chat template, where a response ends: a base model runs on past its
    answer (into a next "Problem:", or code after the function), so its text is cut at the first of these and
    counts as finished, as lm-eval's `until` does.
    """

    name: str
    read: Loader
    judge: Judge
    hub: HubSource | None = None
    reads_files: bool = True
    instruction: str = BOXED_INSTRUCTION
    question: Callable[[BenchmarkProblem], str] = lambda problem: problem.prompt
    plain_prompt: bool = False
    plain_stops: tuple[str, ...] = PLAIN_TEMPLATE_STOPS
    needs_images: bool = False
    test_set: str | None = None  # code benchmarks: which tests are run (recorded with the result)
    lm_eval_task: LmEvalTask | None = None

    @property
    def grades_final_answers(self) -> bool:
        """Judged on an extracted final answer: takes an extraction policy and a grader mode."""
        return isinstance(self.judge, AnswerJudge)

    @property
    def has_final_answers(self) -> bool:
        """Its samples end in a final answer they can vote on (maj@n): extracted by the rule or by its judge."""
        return self.grades_final_answers or self.judge.extracts_answers

    def load(self, data_dir: Path, limit: int | None = None, fetch_missing: bool = False) -> list[BenchmarkProblem]:
        """The problems; DatasetMissing names the expected file when it is absent.

        fetch_missing: when the local files are absent, download them from the Hugging Face hub into
        data_dir first (evaluation.datasets.hub), then load them.
        """
        try:
            return self.read(Path(data_dir), limit)
        except DatasetMissing:
            if not fetch_missing or self.hub is None:
                raise
        fetch_files(self, Path(data_dir))
        return self.read(Path(data_dir), limit)


def register(spec: BenchmarkSpec, target: str) -> None:
    """Register spec under its name, once; target is where it is defined: f"{__name__}:<attribute>"."""
    if spec.name in benchmark_registry.entries:
        raise ValueError(f"benchmark {spec.name!r} is registered twice: {benchmark_registry.entries[spec.name]} "
                         f"and {target}")
    benchmark_registry.register(spec.name, target)
