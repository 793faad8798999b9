"""The Celery app: settings come from Django's settings (CELERY_*), queues are routed by task."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_ready
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("mirrorlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_queues=(Queue("gpu"), Queue("cpu")),
    task_default_queue="cpu",
    task_routes={
        "mirrorlab.run_rl": {"queue": "gpu"},
        "mirrorlab.run_evaluation": {"queue": "gpu"},
        "mirrorlab.run_long2short": {"queue": "gpu"},
        "mirrorlab.cpu.*": {"queue": "cpu"},
    },
    # One long job per worker process at a time; a job is acknowledged only when it ends,
    # so a worker that dies mid-job leaves the message for another worker.
    worker_prefetch_multiplier=1,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    broker_connection_retry_on_startup=True,
)
app.autodiscover_tasks(["workers"], related_name="tasks", force=True)


@worker_ready.connect
def _requeue_abandoned_jobs(**_kwargs) -> None:
    """A starting worker re-queues jobs whose worker died (their heartbeat went stale)."""
    from workers.recovery import requeue_abandoned_jobs

    requeue_abandoned_jobs()
