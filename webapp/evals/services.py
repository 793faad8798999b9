"""Launching evaluation runs and grader audits; sample queries of the evaluation pages and API."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Avg, Count, F, Max, Q, QuerySet

from common.knobs import ConfigError, config_to_dict, parse_config
from evaluation.suite_config import AuditGrader
from webapp.evals.models import EvalRun, GraderAudit, SampleResult
from webapp.jobs import JobStatus
from webapp.celery import enqueue_job
from webapp.runs.retention import refuse_removed_checkpoints


def launch_evaluation(**fields) -> EvalRun:
    """Create a queued evaluation and send it to the gpu queue after commit (a broker that is down leaves it
    queued: the workers' recovery sends it). PathRefused naming `checkpoint` when its files were removed, checked
    again under the checkpoint's row lock in the creating transaction (keep_last_checkpoints)."""
    with transaction.atomic():
        if (checkpoint := fields.get("checkpoint")) is not None:
            refuse_removed_checkpoints({"checkpoint": [checkpoint]})
        return EvalRun.create_queued(partial(enqueue_job, "eval_run"), **fields)


def audit_grader(grader: Any) -> dict:
    """The second grader validated, defaults filled in; ConfigError names each refused field."""
    if not isinstance(grader, dict):
        raise ConfigError({"grader": "must be an object: {grader_mode, extraction_policy, judge_model, "
                                     "judge_max_tokens}"})
    return config_to_dict(parse_config(AuditGrader, grader))


def audit_refusal(eval_run: EvalRun) -> str | None:
    """Why an evaluation cannot be audited now, else None: it must have succeeded (its samples are final)."""
    if eval_run.status != JobStatus.SUCCEEDED:
        return (f"evaluation {eval_run.pk} is {eval_run.status}: only a succeeded evaluation is audited, "
                "since its stored samples are final")
    return None


def launch_audit(eval_run: EvalRun, grader: dict, owner=None) -> GraderAudit:
    """Create a queued grader audit of a succeeded evaluation (grader as validated by audit_grader) and send it
    to the gpu queue after commit."""
    if reason := audit_refusal(eval_run):
        raise ValueError(reason)
    return GraderAudit.create_queued(partial(enqueue_job, "grader_audit"), eval_run=eval_run, grader=grader,
                                     owner=owner)


def disagreeing(samples: QuerySet) -> QuerySet:
    """The samples whose latest audit verdict differs from their stored verdict."""
    return samples.filter(audit_correct__isnull=False).exclude(audit_correct=F("correct"))


def accuracy_by_length(eval_run_id: int, benchmark: str, bin_tokens: int) -> list[dict]:
    """Accuracy per response-length bin, aggregated in the database (uses sample_length_idx).

    Returns rows {"bin_start", "samples", "accuracy", "mean_tokens", "truncated"} ordered by length; truncated
    counts the bin's samples cut off at max_tokens (their length is the limit, not where they would have ended).
    """
    if bin_tokens < 1:
        raise ValueError("bin_tokens must be at least 1")
    return [
        {"bin_start": row["bin"] * bin_tokens, "samples": row["samples"], "accuracy": row["correct"] / row["samples"],
         "mean_tokens": float(row["mean_tokens"]), "truncated": row["truncated"]}
        for row in length_bin_rows(eval_run_id, benchmark, bin_tokens)
    ]


def length_bin_rows(eval_run_id: int, benchmark: str, bin_tokens: int) -> QuerySet:
    """The aggregate behind accuracy_by_length: per bin, samples, correct, mean tokens and truncated."""
    return (
        SampleResult.objects.filter(eval_run_id=eval_run_id, benchmark=benchmark)
        .annotate(bin=F("response_tokens") / bin_tokens)
        .values("bin")
        .annotate(samples=Count("response_tokens"), correct=Count("response_tokens", filter=Q(correct=True)),
                  mean_tokens=Avg("response_tokens"), truncated=Count("response_tokens", filter=Q(truncated=True)))
        .order_by("bin")
    )


LENGTH_BINS = 16  # a length curve's bins when no width is asked for


def default_bin_tokens(longest: int, bins: int = LENGTH_BINS) -> int:
    """A bin width that cuts 0..longest tokens into at most `bins` bins: ceil((longest + 1) / bins)."""
    return max(1, -(-(longest + 1) // bins))


def length_curves(eval_run_id: int, benchmarks: list[str], bin_tokens: int | None = None) -> list[dict]:
    """Accuracy by response length of each benchmark with samples, in the given order: {"benchmark",
    "bin_tokens", "bins": accuracy_by_length rows}; bins bin_tokens wide, else sized from the benchmark's
    longest response."""
    longest = dict(SampleResult.objects.filter(eval_run_id=eval_run_id).values("benchmark")
                   .annotate(longest=Max("response_tokens")).values_list("benchmark", "longest"))
    curves = []
    for benchmark in benchmarks:
        if longest.get(benchmark) is not None:
            width = bin_tokens or default_bin_tokens(longest[benchmark])
            curves.append({"benchmark": benchmark, "bin_tokens": width,
                           "bins": accuracy_by_length(eval_run_id, benchmark, width)})
    return curves
