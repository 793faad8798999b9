"""The hint a job's page shows while the job waits in its queue with no worker starting it.

A queued job whose task reached the broker (`unsent_since` null) and that no worker claimed for
JOB_QUEUED_HINT_SECONDS most often has no worker consuming its queue. The hint is read from the row alone: the
web server never asks the broker or the workers.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone as dt_timezone

from django.apps import apps

from django.conf import settings
from django.utils import timezone
from django.utils.timesince import timesince

from webapp.celery import QUEUE_OF_MODEL, job_queue
from webapp.jobs import Job, JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.parents import pending_parent_run

LOG_STAMP_FORMAT = "%Y-%m-%d %H:%M:%S"  # webapp.jobs.log_stamp, in UTC (USE_TZ)
LOG_STAMP_CHARS = 19
STAMPED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", re.MULTILINE)  # a log entry's first line


def queued_since(job: Job) -> datetime:
    """When the job was last queued: its creation, or a later log entry (a resume, a re-queue by the recovery, a
    send by the recovery), read from the stamp of the log's last entry (an entry's message may span lines: a
    resume quotes the earlier error)."""
    entries = list(STAMPED.finditer(job.log))
    if not entries:
        return job.created_at
    start = entries[-1].start()
    stamp = datetime.strptime(job.log[start:start + LOG_STAMP_CHARS], LOG_STAMP_FORMAT)
    return max(job.created_at, stamp.replace(tzinfo=dt_timezone.utc))


def busy_jobs(queue: str) -> int:
    """Jobs of `queue` running now (a heartbeat newer than the stale limit): a queued job behind them waits for a
    worker, it does not lack one (one GPU worker runs one job at a time)."""
    running = 0
    for label, its_queue in QUEUE_OF_MODEL.items():
        if its_queue == queue:
            model = apps.get_model(label)
            running += model.objects.filter(status=JobStatus.RUNNING, heartbeat_at__gte=model.stale_before()).count()
    return running


def waits_by_design(job: Job) -> bool:
    """A variant whose parent run is queued or running stays queued until that run ends (its worker retries);
    the parent run's page tells when no worker runs it."""
    return isinstance(job, Long2ShortVariant) and pending_parent_run(job) is not None


def no_worker_hint(job: Job, now: datetime | None = None) -> str:
    """'' unless the job is queued, sent to the broker, and waited longer than JOB_QUEUED_HINT_SECONDS; then
    what to check: a worker consuming the job's queue."""
    if job.status != JobStatus.QUEUED or job.unsent_since is not None or job.cancel_requested:
        return ""
    now = now or timezone.now()
    since = queued_since(job)
    if (now - since).total_seconds() < settings.JOB_QUEUED_HINT_SECONDS or waits_by_design(job):
        return ""
    queue = job_queue(job._meta.label)
    if running := busy_jobs(queue):
        jobs = "job" if running == 1 else "jobs"
        return (f"Queued for {timesince(since, now)} behind {running} running {jobs} of the \"{queue}\" queue: it "
                "starts when a worker of that queue is free (more workers on the queue run more jobs at once).")
    return (f"Queued for {timesince(since, now)}: no worker has started it. Check that a worker consumes the "
            f"\"{queue}\" queue (celery -A workers worker -Q {queue} ...; see the README, \"Workers\").")
