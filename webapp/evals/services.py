"""Launching evaluation runs."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Avg, Count, F, Q

from webapp.evals.models import EvalRun, SampleResult
from workers.dispatch import enqueue_job


def launch_evaluation(**fields) -> EvalRun:
    """Create a queued evaluation and send it to the gpu queue after commit."""
    eval_run = EvalRun.objects.create(**fields)
    transaction.on_commit(lambda: enqueue_job("eval_run", eval_run.pk))
    return eval_run


def accuracy_by_length(eval_run_id: int, benchmark: str, bin_tokens: int) -> list[dict]:
    """Accuracy per response-length bin, aggregated in the database (uses sample_length_idx).

    Returns rows {"bin_start", "samples", "accuracy", "mean_tokens"} ordered by length.
    """
    if bin_tokens < 1:
        raise ValueError("bin_tokens must be at least 1")
    rows = (
        SampleResult.objects.filter(eval_run_id=eval_run_id, benchmark=benchmark)
        .annotate(bin=F("response_tokens") / bin_tokens)
        .values("bin")
        .annotate(samples=Count("response_tokens"), correct=Count("response_tokens", filter=Q(correct=True)),
                  mean_tokens=Avg("response_tokens"))
        .order_by("bin")
    )
    return [
        {"bin_start": row["bin"] * bin_tokens, "samples": row["samples"], "accuracy": row["correct"] / row["samples"],
         "mean_tokens": float(row["mean_tokens"])}
        for row in rows
    ]
