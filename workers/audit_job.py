"""Run one grader audit row: every benchmark of a finished evaluation graded again from its stored samples."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from django.conf import settings

from common.knobs import parse_config
from evaluation.audit import BenchmarkAudit, StoredSample, audit_benchmark, audit_skip_reason
from evaluation.context import EvalContext, EvaluationStopped
from evaluation.suite_config import AuditGrader, BenchmarkSettings, parse_suite
from training.models.loading import resolve_model_path
from webapp.evals.models import BenchmarkResult, GraderAudit, SampleResult
from webapp.jobs import JobStatus
from workers.eval_job import storable_text
from workers.jobs import JobCancelled
from workers.path_checks import check_audit_paths

SAMPLE_ROWS_PER_UPDATE = 1000


def stored_samples(result: BenchmarkResult) -> list[StoredSample]:
    rows = (SampleResult.objects.filter(eval_run_id=result.eval_run_id, benchmark=result.benchmark)
            .order_by("problem_id", "sample_index")
            .values_list("problem_id", "sample_index", "response", "correct", "truncated"))
    return [StoredSample(*row) for row in rows]


def graded_as(settings: BenchmarkSettings, result: BenchmarkResult) -> BenchmarkSettings:
    """The suite's settings with the truncation policy the result was graded under (results from before the
    policy graded cut-off text as it was)."""
    metrics = result.metrics if isinstance(result.metrics, dict) else {}
    return dataclasses.replace(settings, truncated_counts_wrong=bool(metrics.get("truncated_counts_wrong", False)))


def store_audit(audit: GraderAudit, result: BenchmarkResult, outcome: BenchmarkAudit, **audit_fields) -> None:
    """The second verdict on every sample of the benchmark, its disagreement counts and `audit_fields` of the
    audit row (its summary and progress), all or nothing, while this worker holds the audit (JobTakenOver
    otherwise)."""
    rows = {(row.problem_id, row.sample_index): row
            for row in SampleResult.objects.filter(eval_run_id=result.eval_run_id, benchmark=result.benchmark)
            .only("pk", "problem_id", "sample_index")}
    for sample in outcome.samples:
        row = rows[(sample.problem_id, sample.sample_index)]
        row.audit_correct, row.audit_answer = sample.correct, storable_text(sample.extracted)
        row.audit_detail = storable_text(sample.detail)
    with audit.holding_claim():
        SampleResult.objects.bulk_update(rows.values(), ["audit_correct", "audit_answer", "audit_detail"],
                                         batch_size=SAMPLE_ROWS_PER_UPDATE)
        BenchmarkResult.objects.filter(pk=result.pk).update(
            audit=audit, audit_samples=len(outcome.samples), audit_disagreements=outcome.disagreements)
        GraderAudit.objects.filter(pk=audit.pk).update(**audit_fields)


def run_audit_job(audit: GraderAudit) -> None:
    """Grade each gradable benchmark's stored samples again; the others are skipped, with the reason."""
    check_audit_paths(audit)  # the path rule again: a queued job whose path is no longer allowed fails here
    grader = parse_config(AuditGrader, audit.grader)
    suite_settings = {entry.benchmark: entry for entry in parse_suite(audit.eval_run.suite.benchmarks)}
    results = list(BenchmarkResult.objects.filter(eval_run_id=audit.eval_run_id).order_by("benchmark"))
    context = EvalContext(
        "", Path(settings.DATASETS_DIR), rollout_engine=audit.eval_run.rollout_engine, seed=audit.eval_run.seed,
        log=lambda line: GraderAudit.log_alive(audit.pk, line, audit.worker),
        should_stop=audit.should_stop,
        fetch_missing=settings.FETCH_MISSING_BENCHMARKS,
        resolve_model=lambda name: resolve_model_path(name, Path(settings.MODELS_DIR)),
    )
    summary = {}
    try:
        for position, result in enumerate(results):
            reason = audit_skip_reason(result.benchmark) or (
                None if result.benchmark in suite_settings else f"{result.benchmark} is no longer in the suite")
            if reason:
                summary[result.benchmark] = {"skipped": reason}
                context.log(f"{result.benchmark}: skipped: {reason}")
                continue
            outcome = audit_benchmark(graded_as(suite_settings[result.benchmark], result), grader,
                                      stored_samples(result), context)
            summary[result.benchmark] = outcome.summary()
            store_audit(audit, result, outcome, summary=summary, progress=(position + 1) / len(results))
            context.log(f"{result.benchmark}: {outcome.disagreements} of {len(outcome.samples)} samples disagree, "
                        f"{outcome.judge_errors} judge errors")
    except EvaluationStopped:
        raise JobCancelled() from None
    finally:
        context.close()
        # the skipped benchmarks too, however the job ends; nothing once another worker holds the audit
        GraderAudit.objects.filter(pk=audit.pk, status=JobStatus.RUNNING, worker=audit.worker).update(
            summary=summary)
