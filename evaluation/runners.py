"""Benchmark runners by name: run(settings, context) -> BenchmarkOutcome for one benchmark of a suite.

A suite entry "lm-eval:<task>" goes to the "lm-eval" runner; every other name is a built-in benchmark.
"""

from common.registry import Registry
from evaluation.benchmarks import BUILTIN_BENCHMARKS

benchmark_runners = Registry("benchmark runner", {
    **{name: "evaluation.builtin_runner:run_builtin_benchmark" for name in BUILTIN_BENCHMARKS},
    "lm-eval": "evaluation.lm_eval_tasks.runner:run_lm_eval_benchmark",
})


def runner_for(benchmark: str):
    """The runner of a suite entry's benchmark name."""
    return benchmark_runners.get(benchmark.split(":", 1)[0])
