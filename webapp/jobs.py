"""The lifecycle every background job row shares: RL runs, evaluations, long2short variants.

A job is queued, then claimed by exactly one worker with a conditional UPDATE,
then ends succeeded, failed (with error and traceback) or cancelled.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Concat
from django.utils import timezone


def stamped_line(line: str) -> str:
    """A log line with its timestamp and newline."""
    return f"{timezone.now():%Y-%m-%d %H:%M:%S} {line.rstrip()}\n"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


TERMINAL_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class Job(models.Model):
    """Abstract base of a row that a Celery task runs."""

    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress = models.FloatField(default=0.0, help_text="Fraction done, 0 to 1.")
    cancel_requested = models.BooleanField(default=False)
    worker = models.CharField(max_length=200, blank=True, help_text="Host and process that claimed the job.")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last sign of life of the running job.")
    error = models.TextField(blank=True)
    traceback = models.TextField(blank=True)
    log = models.TextField(blank=True)

    class Meta:
        abstract = True

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @classmethod
    def stale_before(cls):
        """Running rows whose heartbeat is older than this belong to a dead worker."""
        return timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS)

    @classmethod
    def claimable(cls) -> Q:
        """Queued rows, and running rows abandoned by a dead worker (resumed where they stopped)."""
        abandoned = Q(status=JobStatus.RUNNING, heartbeat_at__lt=cls.stale_before())
        return (Q(status=JobStatus.QUEUED) | abandoned) & Q(cancel_requested=False)

    @classmethod
    def claim(cls, pk: int, worker: str) -> bool:
        """Move a claimable row to running; True for exactly one caller."""
        now = timezone.now()
        claimed = cls.objects.filter(cls.claimable(), pk=pk).update(
            status=JobStatus.RUNNING, started_at=now, heartbeat_at=now, worker=worker
        )
        return claimed == 1

    @classmethod
    def heartbeat(cls, pk: int) -> None:
        cls.objects.filter(pk=pk).update(heartbeat_at=timezone.now())

    @classmethod
    def finish(cls, pk: int, status: str, error: str = "", traceback: str = "", log_line: str = "") -> bool:
        """Record a running job's terminal state (and its last log line, in the same UPDATE, so a reader that
        sees the status also sees the line); False when it was not running."""
        fields = {"status": status, "finished_at": timezone.now(), "error": error, "traceback": traceback}
        if status == JobStatus.SUCCEEDED:
            fields["progress"] = 1.0
        if log_line:
            fields["log"] = Concat(F("log"), Value(stamped_line(log_line)))
        return cls.objects.filter(pk=pk, status=JobStatus.RUNNING).update(**fields) == 1

    @classmethod
    def append_log(cls, pk: int, line: str) -> None:
        """Append one timestamped line to the row's log in a single UPDATE."""
        cls.objects.filter(pk=pk).update(log=Concat(F("log"), Value(stamped_line(line))))

    @classmethod
    def log_alive(cls, pk: int, line: str) -> None:
        """A progress line from a running job: appended to the log with a heartbeat, in one UPDATE."""
        cls.objects.filter(pk=pk).update(log=Concat(F("log"), Value(stamped_line(line))), heartbeat_at=timezone.now())

    @classmethod
    def cancel_was_requested(cls, pk: int) -> bool:
        """Whether a user asked the job to stop (the job checks between its steps)."""
        return cls.objects.filter(pk=pk, cancel_requested=True).exists()

    def request_cancel(self) -> str:
        """Cancel a queued job at once, or ask a running one to stop between iterations."""
        model = type(self)
        with transaction.atomic():
            if model.objects.filter(pk=self.pk, status=JobStatus.QUEUED).update(
                status=JobStatus.CANCELLED, cancel_requested=True, finished_at=timezone.now()
            ):
                outcome = "cancelled"
            elif model.objects.filter(pk=self.pk, status=JobStatus.RUNNING).update(cancel_requested=True):
                outcome = "cancel requested"
            else:
                outcome = "already finished"
        self.refresh_from_db()
        return outcome
