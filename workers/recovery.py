"""Re-queue jobs abandoned by a dead worker, so a crash loses no run."""

from __future__ import annotations

import logging

from webapp.celery import enqueue_job
from webapp.jobs import JobStatus
from workers.jobs import JOB_MODELS, job_model

logger = logging.getLogger(__name__)


def requeue_abandoned_jobs() -> list[tuple[str, int]]:
    """Send a task for every running row whose heartbeat went stale; returns (kind, id) pairs."""
    requeued = []
    for kind in JOB_MODELS:
        model = job_model(kind)
        stale = model.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=model.stale_before(),
                                     cancel_requested=False)
        for pk in stale.values_list("pk", flat=True):
            model.append_log(pk, "worker lost: re-queued")
            enqueue_job(kind, pk)
            requeued.append((kind, pk))
    if requeued:
        logger.warning("re-queued abandoned jobs: %s", requeued)
    return requeued

