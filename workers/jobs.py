"""The job lifecycle around a plain job function: claim, run, record the outcome."""

from __future__ import annotations

import logging
import os
import socket
import traceback
from typing import Callable

from django.apps import apps

from webapp.jobs import Job, JobStatus

logger = logging.getLogger(__name__)

JOB_MODELS = {"rl_run": "runs.RLRun", "eval_run": "evals.EvalRun", "long2short": "long2short.Long2ShortVariant",
              "prompt_import": "prompts.PromptSetImport", "grader_audit": "evals.GraderAudit"}


class JobCancelled(Exception):
    """Raised between iterations when a user asked the job to stop."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def job_model(kind: str) -> type[Job]:
    return apps.get_model(JOB_MODELS[kind])


def raise_if_cancelled(model: type[Job], pk: int) -> None:
    """Stop the job when its row asks for cancellation (checked between iterations)."""
    if model.cancel_was_requested(pk):
        raise JobCancelled()


def execute_job(kind: str, pk: int, body: Callable[[Job], None]) -> str:
    """Claim row `pk`, run `body(row)`, and record succeeded, failed or cancelled; returns the outcome.

    Celery's Django fix-up closes stale database connections around every task.
    """
    model = job_model(kind)
    if not model.claim(pk, worker_name()):
        logger.info("%s %s was not claimed (already taken, finished or cancelled)", kind, pk)
        return "not claimed"
    row = model.objects.get(pk=pk)
    model.append_log(pk, f"started on {worker_name()}")
    try:
        body(row)
    except JobCancelled:
        model.finish(pk, JobStatus.CANCELLED, log_line="cancelled by request")
        return JobStatus.CANCELLED
    except Exception as error:  # the row records every failure, whatever its kind
        logger.exception("%s %s failed", kind, pk)
        model.finish(pk, JobStatus.FAILED, error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc(),
                     log_line=f"failed: {type(error).__name__}: {error}")
        return JobStatus.FAILED
    model.finish(pk, JobStatus.SUCCEEDED, log_line="succeeded")
    return JobStatus.SUCCEEDED
