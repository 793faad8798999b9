"""Launching and resuming RL runs."""

from __future__ import annotations

from django.db import transaction

from webapp.jobs import JobStatus
from webapp.runs.models import RESUMABLE_STATUSES, RLRun
from workers.dispatch import enqueue_job


def launch_run(**fields) -> RLRun:
    """Create a queued run from a validated config and send it to the gpu queue after commit."""
    config = fields["config"]
    run = RLRun.objects.create(total_iterations=config["iterations"], **fields)
    transaction.on_commit(lambda: enqueue_job("rl_run", run.pk))
    return run


def resume_run(run: RLRun, user) -> bool:
    """Re-queue a failed or cancelled run (its worker resumes from the newest checkpoint); False otherwise.

    The conditional UPDATE makes two clicks queue it once; the earlier error stays in the log.
    """
    with transaction.atomic():
        resumed = RLRun.objects.filter(pk=run.pk, status__in=RESUMABLE_STATUSES).update(
            status=JobStatus.QUEUED, cancel_requested=False, error="", traceback="", finished_at=None,
            heartbeat_at=None, worker="")
        if resumed:
            earlier = f" (was {run.status}{': ' + run.error if run.error else ''})"
            RLRun.append_log(run.pk, f"resumed by {user}{earlier}")
            transaction.on_commit(lambda: enqueue_job("rl_run", run.pk))
    run.refresh_from_db()
    return resumed == 1
