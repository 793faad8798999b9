"""Benchmark suite configs: an ordered list of benchmarks, each with its settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from common.knobs import ConfigError, knob, parse_config

# Built-in benchmarks; any lm-evaluation-harness task is named "lm-eval:<task>".
BENCHMARKS = (
    "aime24",
    "aime25",
    "amc23",
    "math500",
    "gsm8k",
    "livecodebench",
    "humaneval",
    "mathvista",
    "synthetic-arithmetic",
)
LM_EVAL_PREFIX = "lm-eval:"


@dataclass(frozen=True)
class BenchmarkSettings:
    """One benchmark of a suite and how it is sampled and scored."""

    benchmark: str = knob("math500", "Benchmark name, or lm-eval:<task> for any lm-evaluation-harness task.")
    samples_per_problem: int = knob(1, "Samples per problem; Pass@1 is averaged over them.", minimum=1)
    max_tokens: int = knob(1024, "Longest response, in tokens.", minimum=1)
    temperature: float = knob(0.0, "Sampling temperature (0 = greedy).", minimum=0.0)
    top_p: float = knob(1.0, "Nucleus sampling threshold.", exclusive_minimum=0.0, maximum=1.0)
    limit: int | None = knob(None, "Evaluate only the first N problems (empty = all).", minimum=1)

    def cross_field_errors(self) -> dict[str, str]:
        """The benchmark must be known (or an lm-eval task); several samples per problem need sampling."""
        errors = {}
        if not self.is_known_benchmark():
            errors["benchmark"] = (f"unknown benchmark {self.benchmark!r}; choose one of {', '.join(BENCHMARKS)} "
                                   f"or {LM_EVAL_PREFIX}<task>")
        if self.samples_per_problem > 1 and self.temperature == 0.0:
            errors["temperature"] = (f"0 is greedy decoding, so the {self.samples_per_problem} samples per problem "
                                     "would be identical and pass@k and maj@k meaningless: set a temperature above 0 "
                                     "(for example 0.6) or samples_per_problem 1")
        return errors

    def is_known_benchmark(self) -> bool:
        if self.benchmark in BENCHMARKS:
            return True
        return self.benchmark.startswith(LM_EVAL_PREFIX) and len(self.benchmark) > len(LM_EVAL_PREFIX)


def parse_suite(entries: Sequence[Any]) -> list[BenchmarkSettings]:
    """Validate a suite's ordered benchmark list; errors are keyed "benchmarks[i].field"."""
    if not isinstance(entries, (list, tuple)) or not entries:
        raise ConfigError({"benchmarks": "must be a non-empty list of benchmarks"})
    parsed, errors, seen = [], {}, set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            errors[f"benchmarks[{index}]"] = "must be an object with a 'benchmark' name"
            continue
        if "benchmark" not in entry:
            errors[f"benchmarks[{index}].benchmark"] = "is required"
            continue
        try:
            settings = parse_config(BenchmarkSettings, entry)
        except ConfigError as error:
            errors.update({f"benchmarks[{index}].{name}": reason for name, reason in error.errors.items()})
            continue
        if settings.benchmark in seen:
            errors[f"benchmarks[{index}].benchmark"] = f"{settings.benchmark!r} is listed twice"
        seen.add(settings.benchmark)
        parsed.append(settings)
    if errors:
        raise ConfigError(errors)
    return parsed
