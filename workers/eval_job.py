"""Run one evaluation row: every benchmark of its suite through its runner."""

from __future__ import annotations

from evaluation.runners import benchmark_runners
from evaluation.suite_config import parse_suite
from webapp.evals.models import EvalRun


def run_eval_job(eval_run: EvalRun) -> None:
    """Resolve the suite's benchmarks and run each (runners arrive with the evaluation engine)."""
    benchmarks = parse_suite(eval_run.suite.benchmarks)
    runners = [(settings, benchmark_runners.get(settings.benchmark.split(":")[0])) for settings in benchmarks]
    for settings, runner in runners:
        EvalRun.append_log(eval_run.pk, f"evaluating {settings.benchmark}")
        runner(eval_run, settings)
