"""What evaluating one benchmark produces: every sample's verdict and the benchmark's score.

Every runner (built-in benchmarks, lm-eval tasks) returns a BenchmarkOutcome; the worker writes it to the
BenchmarkResult and SampleResult rows in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from evaluation.scoring import BenchmarkScore
from grading.judgement import counted_wrong_for_truncation


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


CUT_OFF = "cut off at max_tokens: counted wrong"  # SampleOutcome.detail of a truncated sample graded wrong so


def truncation_applied(sample: SampleOutcome, truncated_counts_wrong: bool) -> SampleOutcome:
    """The sample under the truncation policy: a truncated one the grader passed is wrong, saying why, when
    `truncated_counts_wrong`; its extracted answer stays on the row but does not vote in maj@n."""
    if not (sample.correct and counted_wrong_for_truncation(sample.truncated, truncated_counts_wrong)):
        return sample
    detail = f"{CUT_OFF}; {sample.detail}" if sample.detail else CUT_OFF
    return replace(sample, correct=False, detail=detail)


def votes(sample: SampleOutcome, truncated_counts_wrong: bool) -> str | None:
    """The answer a sample votes for in maj@n: its extracted answer, none for an unfinished one the policy
    counts wrong (it gave no final answer)."""
    if counted_wrong_for_truncation(sample.truncated, truncated_counts_wrong):
        return None
    return sample.extracted_answer or None


def truncation_metadata(samples: list[SampleOutcome], truncated_counts_wrong: bool) -> dict[str, Any]:
    """How many samples hit max_tokens, and whether they were counted wrong."""
    return {"truncated_samples": sum(sample.truncated for sample in samples),
            "truncated_counts_wrong": truncated_counts_wrong}


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
