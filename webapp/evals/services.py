"""Launching evaluation runs."""

from __future__ import annotations

from django.db import transaction

from webapp.evals.models import EvalRun
from workers.dispatch import enqueue_job


def launch_evaluation(**fields) -> EvalRun:
    """Create a queued evaluation and send it to the gpu queue after commit."""
    eval_run = EvalRun.objects.create(**fields)
    transaction.on_commit(lambda: enqueue_job("eval_run", eval_run.pk))
    return eval_run
