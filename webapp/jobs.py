"""The lifecycle every background job row shares: RL runs, evaluations, long2short variants, grader audits,
prompt-set imports.

The state machine (every state has a way out; tests/workers/test_job_states.py walks each edge):

    queued ---claim (a worker's task)----------------------------> running
    queued ---cancel (user)--------------------------------------> cancelled
    running --the job function returns (worker)------------------> succeeded
    running --the job function raises (worker)-------------------> failed
    running --cancel (user), seen between steps (worker)---------> cancelled
    running --cancel (user) while the heartbeat is stale---------> cancelled at once
    running --heartbeat stale, no cancel (periodic recovery)-----> queued, and its task sent again
    running --heartbeat stale, cancel pending (periodic recovery)-> cancelled
    running --cancel pending for JOB_CANCEL_GRACE_SECONDS: the heartbeat stops, then recovery -> cancelled
    failed, cancelled --resume (user; RL runs and variants)------> queued

A worker claims a row with one conditional UPDATE (exactly one caller wins); while the job runs, a
heartbeat thread stamps `heartbeat_at` every JOB_HEARTBEAT_SECONDS. Every worker runs the recovery
(workers/recovery.py) when it starts and then every JOB_RECOVERY_INTERVAL_SECONDS: a running row whose
heartbeat is older than JOB_STALE_AFTER_SECONDS belongs to a dead worker. A worker whose row was taken
from it (re-queued, then claimed by another) stops at its next check and records nothing. `started_at`
keeps the first start; every claim is logged.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Callable

from django.conf import settings
from django.db import models, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce, Concat
from django.utils import timezone


def stamped_line(line: str) -> str:
    """A log line with its timestamp and newline."""
    return f"{timezone.now():%Y-%m-%d %H:%M:%S} {line.rstrip()}\n"


class JobTakenOver(Exception):
    """Raised by Job.should_stop in a worker whose claim is no longer the row's: recovery re-queued the row
    and another worker took it. The worker stops its work at once and records nothing."""


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
        """Move a claimable row to running; True for exactly one caller. The first start is kept."""
        now = timezone.now()
        claimed = cls.objects.filter(cls.claimable(), pk=pk).update(
            status=JobStatus.RUNNING, started_at=Coalesce(F("started_at"), Value(now)), heartbeat_at=now,
            worker=worker, log=Concat(F("log"), Value(stamped_line(f"started on {worker}"))),
        )
        return claimed == 1

    @classmethod
    def heartbeat(cls, pk: int, worker: str | None = None) -> bool:
        """Stamp a sign of life; with `worker`, only while the row is still that worker's running job
        (False when it is not: recovery gave it to another worker, or it ended)."""
        rows = cls.objects.filter(pk=pk)
        if worker is not None:
            rows = rows.filter(status=JobStatus.RUNNING, worker=worker)
        return rows.update(heartbeat_at=timezone.now()) == 1

    @classmethod
    def recover_stale(cls, send: Callable[[int], None]) -> list[int]:
        """Running rows of dead workers (heartbeat older than JOB_STALE_AFTER_SECONDS): a pending cancel is
        finished as cancelled, the others go back to queued and `send(pk)` sends their task again, in the same
        transaction (a failed send leaves the row running and stale, for the next pass). Returns the re-queued
        ids. Each move is a conditional UPDATE, so workers recovering at once never double a row."""
        requeued = []
        stale = cls.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=cls.stale_before())
        for pk, worker, cancel in stale.values_list("pk", "worker", "cancel_requested"):
            still_stale = cls.objects.filter(pk=pk, status=JobStatus.RUNNING, worker=worker,
                                             heartbeat_at__lt=cls.stale_before())
            lost = f"worker {worker or '(unknown)'} lost: no heartbeat for {settings.JOB_STALE_AFTER_SECONDS} s"
            if cancel:
                still_stale.update(status=JobStatus.CANCELLED, finished_at=timezone.now(),
                                   log=Concat(F("log"), Value(stamped_line(f"{lost}; cancelled as requested"))))
                continue
            with transaction.atomic():
                if still_stale.update(status=JobStatus.QUEUED, worker="",
                                      log=Concat(F("log"), Value(stamped_line(f"{lost}; re-queued")))):
                    send(pk)
                    requeued.append(pk)
        return requeued

    @classmethod
    def finish(cls, pk: int, status: str, error: str = "", traceback: str = "", log_line: str = "",
               worker: str | None = None) -> bool:
        """Record a running job's terminal state (and its last log line, in the same UPDATE, so a reader that
        sees the status also sees the line); False when it was not running (with `worker`: not running
        under that worker)."""
        fields = {"status": status, "finished_at": timezone.now(), "error": error, "traceback": traceback}
        if status == JobStatus.SUCCEEDED:
            fields["progress"] = 1.0
        if log_line:
            fields["log"] = Concat(F("log"), Value(stamped_line(log_line)))
        rows = cls.objects.filter(pk=pk, status=JobStatus.RUNNING)
        if worker is not None:
            rows = rows.filter(worker=worker)
        return rows.update(**fields) == 1

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

    def should_stop(self) -> bool:
        """Checked by the job between its steps: True when a user asked to cancel; JobTakenOver when this claim
        is no longer the row's (recovery re-queued it and another worker took it over, or it was deleted)."""
        row = type(self).objects.filter(pk=self.pk).values_list("cancel_requested", "status", "worker").first()
        if row is None:
            raise JobTakenOver(f"{type(self).__name__} {self.pk} was deleted")
        cancel, status, worker = row
        if worker != self.worker or (self.status == JobStatus.RUNNING and status != JobStatus.RUNNING):
            raise JobTakenOver(f"{type(self).__name__} {self.pk} is now {status} on {worker or 'no worker'}")
        return cancel

    def request_cancel(self) -> str:
        """Cancel a queued job at once; ask a running one to stop between its steps, or cancel it at once
        when its worker is gone (heartbeat stale)."""
        model = type(self)
        now = timezone.now()
        with transaction.atomic():
            if model.objects.filter(pk=self.pk, status=JobStatus.QUEUED).update(
                status=JobStatus.CANCELLED, cancel_requested=True, finished_at=now
            ):
                outcome = "cancelled"
            elif model.objects.filter(pk=self.pk, status=JobStatus.RUNNING, heartbeat_at__lt=model.stale_before()
                                      ).update(status=JobStatus.CANCELLED, cancel_requested=True, finished_at=now,
                                               log=Concat(F("log"), Value(stamped_line(
                                                   "cancelled: its worker is gone (no heartbeat)")))):
                outcome = "cancelled"
            elif model.objects.filter(pk=self.pk, status=JobStatus.RUNNING).update(cancel_requested=True):
                outcome = "cancel requested"
            else:
                outcome = "already finished"
        self.refresh_from_db()
        return outcome
