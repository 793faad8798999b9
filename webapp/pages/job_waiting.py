"""The hint a job's page shows while the job waits in its queue with no worker starting it.

A queued job whose task reached the broker (`unsent_since` null) and that no worker claimed for
JOB_QUEUED_HINT_SECONDS most often has no worker consuming its queue. The hint is read from the row alone: the
web server never asks the broker or the workers.
"""

from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

from django.conf import settings
from django.utils import timezone
from django.utils.timesince import timesince

from webapp.celery import job_queue
from webapp.jobs import Job, JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.parents import pending_parent_run

LOG_STAMP_FORMAT = "%Y-%m-%d %H:%M:%S"  # webapp.jobs.log_stamp, in UTC (USE_TZ)
LOG_STAMP_CHARS = 19


def queued_since(job: Job) -> datetime:
    """When the job was last queued: its creation, or a later log line (a resume, a re-queue by the recovery, a
    send by the recovery), read from the stamp of the log's last line."""
    last_line = job.log.rstrip("\n").rsplit("\n", 1)[-1]
    try:
        stamp = datetime.strptime(last_line[:LOG_STAMP_CHARS], LOG_STAMP_FORMAT)
    except ValueError:
        return job.created_at
    return max(job.created_at, stamp.replace(tzinfo=dt_timezone.utc))


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
    return (f"Queued for {timesince(since, now)}: no worker has started it. Check that a worker consumes the "
            f"\"{queue}\" queue (celery -A workers worker -Q {queue} ...; see the README, \"Workers\").")
