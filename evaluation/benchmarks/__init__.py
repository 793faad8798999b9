"""Built-in benchmarks: one module each (or per family), registered once in benchmark_registry.

A module defines its BenchmarkSpec in full (name, loader, hub source, instruction and question, judge, images,
lm-eval task) and registers it; a new benchmark is a new module plus its import line below. Every list of
benchmarks derives from the registry: the suite's choices (evaluation.suite_config.BENCHMARKS), the loaders
and hub sources (python -m evaluation.datasets), the lm-eval tasks, the runners. The imports below fix the order
in which benchmarks are listed (the suite form, the dataset listing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from common.registry import UnknownEntry
from evaluation.benchmarks import (  # noqa: F401  (each module registers its benchmarks)
    aime,
    amc23,
    math500,
    gsm8k,
    livecodebench,
    humaneval,
    mathvista,
    synthetic_arithmetic,
)
from evaluation.benchmarks.humaneval import FUNCTION_INSTRUCTION
from evaluation.benchmarks.spec import BOXED_INSTRUCTION, BenchmarkSpec, LmEvalTask, Loader, benchmark_registry
from evaluation.benchmarks.synthetic_arithmetic import SYNTHETIC_PROBLEMS, SYNTHETIC_SEED, load_synthetic_arithmetic
from evaluation.datasets import BenchmarkProblem, hub
from evaluation.datasets.hub import HubSource

__all__ = [
    "ANSWER_JUDGES", "BOXED_INSTRUCTION", "BUILTIN_BENCHMARKS", "BenchmarkSpec", "FUNCTION_INSTRUCTION",
    "HUB_SOURCES", "LM_EVAL_TASKS", "LOADERS", "LmEvalTask", "SYNTHETIC_PROBLEMS", "SYNTHETIC_SEED", "benchmark",
    "benchmark_registry", "fetch_benchmark", "grades_final_answers", "load_benchmark", "load_synthetic_arithmetic",
    "local_status",
]

BUILTIN_BENCHMARKS: dict[str, BenchmarkSpec] = {name: benchmark_registry.get(name)
                                                for name in benchmark_registry.entries}
# The loaders of the benchmarks stored in files (the layout of shared/datasets), and their hub sources.
LOADERS: dict[str, Loader] = {name: spec.read for name, spec in BUILTIN_BENCHMARKS.items() if spec.reads_files}
HUB_SOURCES: dict[str, HubSource] = {name: spec.hub for name, spec in BUILTIN_BENCHMARKS.items() if spec.hub}
# lm-eval task name -> task, for the benchmarks that are lm-eval tasks too (evaluation.lm_eval_tasks).
LM_EVAL_TASKS: dict[str, LmEvalTask] = {spec.lm_eval_task.name: spec.lm_eval_task
                                        for spec in BUILTIN_BENCHMARKS.values() if spec.lm_eval_task}
# Judges that compare an extracted final answer with the reference: their benchmarks take an extraction policy
# and a grader mode (the CoT judge model).
ANSWER_JUDGES: tuple[str, ...] = tuple(dict.fromkeys(
    spec.judge.name for spec in BUILTIN_BENCHMARKS.values() if spec.grades_final_answers))


def benchmark(name: str) -> BenchmarkSpec:
    """The built-in benchmark `name`; UnknownEntry lists the known ones."""
    return benchmark_registry.get(name)


def grades_final_answers(name: str) -> bool:
    """Whether the benchmark is judged on an extracted final answer (lm-eval tasks and code are not)."""
    spec = BUILTIN_BENCHMARKS.get(name)
    return spec is not None and spec.grades_final_answers


def load_benchmark(name: str, data_dir: Path, limit: int | None = None,
                   fetch_missing: bool = False) -> list[BenchmarkProblem]:
    """Load benchmark `name` from data_dir (BenchmarkSpec.load); DatasetMissing names an absent file."""
    return benchmark(name).load(data_dir, limit, fetch_missing)


def hub_benchmark(name: str) -> BenchmarkSpec:
    """The benchmark `name`, which must have a hub source; UnknownEntry lists those that do."""
    spec = benchmark(name)
    if spec.hub is None:
        raise UnknownEntry(f"benchmark {name!r} has no files to fetch from the hub; those that do: "
                           f"{', '.join(HUB_SOURCES)}")
    return spec


def fetch_benchmark(name: str, data_dir: Path, *, load_dataset: Callable[..., Any] | None = None,
                    overwrite: bool = False) -> list[Path]:
    """Download benchmark `name` from the hub into data_dir in its loader's layout; return the files written."""
    return hub.fetch_files(hub_benchmark(name), data_dir, load_dataset=load_dataset, overwrite=overwrite)


def local_status(name: str, data_dir: Path) -> str:
    """Whether the files of benchmark `name` are in data_dir (evaluation.datasets.hub.local_status)."""
    return hub.local_status(hub_benchmark(name), data_dir)
