"""Recovery of jobs abandoned by a dead worker, run by every worker when it starts and then periodically.

A dead worker's running job stops stamping its heartbeat; after JOB_STALE_AFTER_SECONDS the next pass of
any worker re-queues it (its task sent again, resumed from its last checkpoint) or, with a cancel
pending, finishes it as cancelled. A queued job whose task never reached the broker (down at launch) has
its task sent (Job.recover_unsent), and stored uploads that no import will read any more are deleted.
Passes are safe to run on many workers at once: each move is a conditional UPDATE (webapp/jobs.py).
"""

from __future__ import annotations

import logging
import threading

from django.db import connection

from webapp.celery import enqueue_job
from webapp.prompts.services import remove_unclaimed_uploads
from workers.jobs import JOB_MODELS, job_model

logger = logging.getLogger(__name__)


def _each_kind(recover: str, message: str) -> list[tuple[str, int]]:
    """Job.<recover>(send=...) over every job kind; the (kind, id) pairs it sent, logged with message."""
    sent = [(kind, pk) for kind in JOB_MODELS
            for pk in getattr(job_model(kind), recover)(send=lambda pk, kind=kind: enqueue_job(kind, pk))]
    if sent:
        logger.warning("%s: %s", message, sent)
    return sent


def requeue_abandoned_jobs() -> list[tuple[str, int]]:
    """One recovery pass over every job kind; returns the (kind, id) pairs whose tasks were sent again."""
    return _each_kind("recover_stale", "re-queued abandoned jobs")


def send_unsent_jobs() -> list[tuple[str, int]]:
    """Send the task of every queued job that never reached the broker; returns the (kind, id) pairs sent."""
    return _each_kind("recover_unsent", "sent the tasks of queued jobs that had not reached the broker")


def remove_stale_uploads() -> None:
    """Delete the stored uploads that no queued or running import will read."""
    if removed := remove_unclaimed_uploads():
        logger.warning("deleted uploads no import reads: %s", [str(path) for path in removed])


RECOVERY_STEPS = (requeue_abandoned_jobs, send_unsent_jobs, remove_stale_uploads)


def recovery_pass() -> None:
    """Every recovery step once; a step that fails (the broker or database down) is logged, the others still run."""
    for step in RECOVERY_STEPS:
        try:
            step()
        except Exception:  # a database or broker hiccup: log it and try again at the next pass
            logger.exception("job recovery step %s failed", step.__name__)


def start_periodic_recovery(interval_seconds: float) -> threading.Event:
    """A daemon thread of this worker process that runs a recovery pass now and every interval; set the
    returned event to stop it."""
    stop = threading.Event()

    def loop() -> None:
        try:
            while True:
                try:
                    recovery_pass()
                finally:
                    connection.close()
                if stop.wait(interval_seconds):
                    return
        finally:
            connection.close()

    threading.Thread(target=loop, name="job-recovery", daemon=True).start()
    return stop
