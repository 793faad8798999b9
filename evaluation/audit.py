"""Grader audits: the stored responses of a finished evaluation graded again by a second grader (another
extraction policy, or the CoT judge against the rule), without generating anything; disagreements counted."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

from common.knobs import config_to_dict
from evaluation.benchmarks import BUILTIN_BENCHMARKS, grades_final_answers
from evaluation.context import EvalContext
from evaluation.builtin_runner import EvaluationError, grade_pairs, judge_verdict_text
from evaluation.suite_config import AuditGrader, BenchmarkSettings
from grading.cot_judge import Grade
from grading.judgement import counted_wrong_for_truncation

AUDIT_BATCH_SAMPLES = 256  # samples graded per batch (a judge batch is smaller: EvalContext.batch_problems)


@dataclass(frozen=True)
class StoredSample:
    """A stored sample as the audit reads it: which problem, which sample, the response and its stored verdict."""

    problem_id: str
    sample_index: int
    response: str
    correct: bool
    truncated: bool = False  # cut off at max_tokens: the result's truncation policy applies to both verdicts


@dataclass(frozen=True)
class AuditedSample:
    """The second grader's verdict on one stored sample: correct, the answer it extracted, and why
    (the judge's reasoning, or its error, or the rule's detail); judge_verdict as in SampleOutcome."""

    problem_id: str
    sample_index: int
    correct: bool
    disagrees: bool
    extracted: str = ""
    detail: str = ""
    judge_verdict: str = ""


@dataclass(frozen=True)
class BenchmarkAudit:
    benchmark: str
    samples: list[AuditedSample]

    @property
    def disagreements(self) -> int:
        return sum(sample.disagrees for sample in self.samples)

    @property
    def judge_errors(self) -> int:
        return sum(sample.judge_verdict == "error" for sample in self.samples)

    def summary(self) -> dict[str, Any]:
        """samples, disagreements, disagreement_rate (None with no samples) and judge_errors."""
        total = len(self.samples)
        return {"samples": total, "disagreements": self.disagreements,
                "disagreement_rate": self.disagreements / total if total else None, "judge_errors": self.judge_errors}


def audit_skip_reason(benchmark: str) -> str | None:
    """Why a benchmark cannot be audited (it is not graded on an extracted answer), else None."""
    if grades_final_answers(benchmark):
        return None
    return f"{benchmark} is not graded on an extracted final answer, so a second grader does not apply"


def second_grader_settings(settings: BenchmarkSettings, grader: AuditGrader) -> BenchmarkSettings:
    """The benchmark's settings with the audit grader's grading knobs in place of its own."""
    return dataclasses.replace(settings, **config_to_dict(grader))


def audit_benchmark(settings: BenchmarkSettings, grader: AuditGrader, stored: Sequence[StoredSample],
                    context: EvalContext) -> BenchmarkAudit:
    """Grade the stored samples of one benchmark again with the second grader, in batches (stop between them)."""
    if reason := audit_skip_reason(settings.benchmark):
        raise EvaluationError(reason)
    spec = BUILTIN_BENCHMARKS[settings.benchmark]
    problems = {problem.problem_id: problem
                for problem in spec.load(context.data_dir, settings.limit, context.fetch_missing)}
    missing = sorted({sample.problem_id for sample in stored} - problems.keys())
    if missing:
        raise EvaluationError(f"{settings.benchmark}: the stored samples name problems that are not in "
                              f"{context.data_dir} ({', '.join(missing[:5])}); restore the benchmark's files")
    second = second_grader_settings(settings, grader)
    audited: list[AuditedSample] = []
    for start in range(0, len(stored), AUDIT_BATCH_SAMPLES):
        context.check_stop()
        batch = stored[start:start + AUDIT_BATCH_SAMPLES]
        grades = grade_pairs(spec, second, [(problems[sample.problem_id], sample.response) for sample in batch],
                             context)
        audited += [audited_sample(sample, graded, settings.truncated_counts_wrong)
                    for sample, graded in zip(batch, grades)]
        context.log(f"{settings.benchmark}: {len(audited)}/{len(stored)} samples graded again")
    return BenchmarkAudit(settings.benchmark, audited)


def audited_sample(sample: StoredSample, graded: Grade, truncated_counts_wrong: bool) -> AuditedSample:
    """The second verdict under the stored result's truncation policy (a cut-off sample counted wrong stays
    wrong: the graders cannot disagree on it)."""
    rule, judge = graded.rule, graded.judge
    correct = graded.correct and not counted_wrong_for_truncation(sample.truncated, truncated_counts_wrong)
    if judge is not None:
        detail = "\n\n".join(filter(None, [judge.error, judge.reasoning]))  # on an error: why, then the output
    else:
        detail = rule.detail if rule is not None else ""
    return AuditedSample(sample.problem_id, sample.sample_index, correct, correct != sample.correct,
                         extracted=rule.extracted if rule is not None else "", detail=detail,
                         judge_verdict=judge_verdict_text(judge))
