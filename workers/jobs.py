"""The job lifecycle around a plain job function: claim, run, record the outcome."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
from contextlib import contextmanager
from typing import Callable, Iterator

from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, connection

from webapp.celery import JOB_MODELS
from webapp.jobs import Job, JobStatus, JobTakenOver

logger = logging.getLogger(__name__)


class JobCancelled(Exception):
    """Raised between iterations when a user asked the job to stop."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def job_model(kind: str) -> type[Job]:
    return apps.get_model(JOB_MODELS[kind])


def raise_if_cancelled(row: Job) -> None:
    """Stop the job when its row asks for cancellation or was taken over (checked between steps)."""
    if row.should_stop():
        raise JobCancelled()


@contextmanager
def heartbeat_while_running(model: type[Job], pk: int, worker: str) -> Iterator[None]:
    """Stamp the row's heartbeat every JOB_HEARTBEAT_SECONDS from a thread while the job runs, so the
    periodic recovery tells a live worker from a dead one whatever the length of the job's steps.

    A job still running JOB_CANCEL_GRACE_SECONDS after its cancel was requested (hung, say, in a stuck
    collective) loses its heartbeat: the recovery then finishes it as cancelled, and the job, if it ever wakes,
    finds its claim gone and stops without recording anything.
    """
    stop = threading.Event()

    def beat() -> None:
        cancel_seen_at = None
        try:
            while not stop.wait(settings.JOB_HEARTBEAT_SECONDS):
                try:
                    if cancel_seen_at is None and model.cancel_was_requested(pk):
                        cancel_seen_at = time.monotonic()
                    if cancel_seen_at is not None and \
                            time.monotonic() - cancel_seen_at > settings.JOB_CANCEL_GRACE_SECONDS:
                        model.append_log(pk, f"still running {settings.JOB_CANCEL_GRACE_SECONDS} s after its cancel: "
                                             "heartbeat stopped, so recovery finishes it as cancelled")
                        return
                    if not model.heartbeat(pk, worker):
                        logger.warning("%s %s is no longer this worker's: heartbeat stopped", model.__name__, pk)
                        return
                except DatabaseError:  # a locked SQLite file, a Postgres restart: beat again next time
                    logger.warning("%s %s: heartbeat failed, retrying", model.__name__, pk, exc_info=True)
                    connection.close_if_unusable_or_obsolete()
        finally:
            connection.close()  # the thread's own database connection

    thread = threading.Thread(target=beat, name=f"heartbeat-{model.__name__}-{pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def execute_job(kind: str, pk: int, body: Callable[[Job], None]) -> str:
    """Claim row `pk`, run `body(row)` with a heartbeat, and record succeeded, failed or cancelled; returns the
    outcome ("taken over" when recovery gave the row to another worker meanwhile: nothing is recorded).

    Celery's Django fix-up closes stale database connections around every task.
    """
    model = job_model(kind)
    worker = worker_name()
    if not model.claim(pk, worker):
        logger.info("%s %s was not claimed (already taken, finished or cancelled)", kind, pk)
        return "not claimed"
    row = model.objects.get(pk=pk)
    try:
        with heartbeat_while_running(model, pk, worker):
            body(row)
    except JobTakenOver as lost:
        logger.warning("%s %s stopped, recording nothing: %s", kind, pk, lost)
        return "taken over"
    except JobCancelled:
        if model.finish(pk, JobStatus.CANCELLED, log_line="cancelled by request", worker=worker):
            return JobStatus.CANCELLED
        return "taken over"
    except Exception as error:  # the row records every failure, whatever its kind
        logger.exception("%s %s failed", kind, pk)
        model.finish(pk, JobStatus.FAILED, error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc(),
                     log_line=f"failed: {type(error).__name__}: {error}", worker=worker)
        return JobStatus.FAILED
    if not model.finish(pk, JobStatus.SUCCEEDED, log_line="succeeded", worker=worker):
        return "taken over"
    return JobStatus.SUCCEEDED
