"""What evaluating one benchmark produces: every sample's verdict and the benchmark's score.

Every runner (built-in benchmarks, lm-eval tasks) returns a BenchmarkOutcome; the worker writes it to the
BenchmarkResult and SampleResult rows in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluation.scoring import BenchmarkScore


@dataclass(frozen=True)
class SampleOutcome:
    """One sampled response to one problem, judged."""

    problem_id: str
    sample_index: int
    response: str
    response_tokens: int
    truncated: bool
    correct: bool
    extracted_answer: str = ""
    reference_answer: str = ""  # the problem's reference answer ("" for code benchmarks, graded by tests)
    detail: str = ""  # why it was judged so: a sandbox verdict, a verifier timeout, a judge error...
    extraction_policy: str = ""  # how the final answer was found ("" where no answer is extracted: code)
    graded_by: str = ""  # "rule" (verifier, sandbox...) or "judge" (the CoT judge model)
    judge_verdict: str = ""  # the judge's "correct" or "incorrect", "error" when it did not parse, "" when not asked
    judge_reasoning: str = ""  # the judge's reasoning (its whole output on an error)


@dataclass(frozen=True)
class BenchmarkOutcome:
    """A benchmark's score and its samples; metadata records how it was run (test set used, runner...)."""

    benchmark: str
    score: BenchmarkScore
    samples: list[SampleOutcome]
    metadata: dict[str, Any] = field(default_factory=dict)

    def metrics(self) -> dict[str, Any]:
        """The score's metrics plus the run metadata, as stored on the result row."""
        return {**self.score.metrics, **self.metadata}
