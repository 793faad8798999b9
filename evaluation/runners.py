"""Benchmark runners by name: run(eval_run, settings) evaluates one benchmark of a suite."""

from common.registry import Registry

# Filled by the evaluation engine: one entry per benchmark family, plus "lm-eval".
benchmark_runners = Registry("benchmark runner")
